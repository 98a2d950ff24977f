package graysync

// Writing holds: our pause as the move decided it, before the ReplicaSet writes or, in the sync
// in which they bring the new ReplicaSet to its target, after them (docs/design.md: gray
// semantics).

import (
	"context"
	"time"

	"github.com/kubegray/kubectl-gray/controller/gray"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/kubegray/kubectl-gray/controller/metrics"
	"github.com/kubegray/kubectl-gray/pkg/deployutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// writeHold writes the hold (paused or not) as this sync's mode keeps it (gray_mode.go), with
// this sync's status and a consumed resume request, in one write.
func (g *graySync) writeHold(ctx context.Context, paused bool) error {
	updated := g.cur.d.DeepCopy()
	// As the write leaves it (the mode's view in alongside mode), for what the status serves.
	updated.Spec.Paused = paused || g.mode.pausedByItsUser()
	if err := g.setStatusAnnotation(ctx, updated); err != nil {
		return err
	}
	written, err := g.mode.writeHold(ctx, g.cur.d, updated, paused, g.removeResume)
	if err != nil {
		return err
	}
	g.holdWritten(written)
	return nil
}

// holdWritten takes the Deployment a hold write answered with: the resume request it consumed
// and the status it carried are on the server now, so a request it dropped is reported.
func (g *graySync) holdWritten(written *appsv1.Deployment) {
	g.adopt(written)
	g.removeResume = false
	for _, msg := range g.dropped {
		g.gs.eventRecorder.Eventf(g.cur.d, corev1.EventTypeWarning, grayapi.ReasonGrayResumeIgnored, "%s", msg)
	}
	g.dropped = nil
}

// dropRequest consumes kubegray.io/resume without serving it. Its Warning waits for the write
// that removes the request: if that write conflicts (someone edited the Deployment meanwhile),
// the next sync decides again, and may serve the request, which a Warning sent already would
// have called ignored.
func (g *graySync) dropRequest(warning string) {
	g.removeResume = true
	g.dropped = append(g.dropped, warning)
}

// pauseReached writes our hold in the sync whose ReplicaSet writes brought the canary to a
// hold point's target, or found it there (gray.Move's PauseAfter): one write carrying
// spec.paused and heldAt.
func (g *graySync) pauseReached(ctx context.Context) error {
	g.st = gray.HoldTaken(g.st, g.in.metaNow())
	if err := g.writeHold(ctx, true); err != nil {
		return err
	}
	g.heldEvent(ctx)
	return nil
}

// heldEvent reports a hold point reached: event, log and metrics. The event is GrayHolding and
// says how many of the canary's pods are still to become ready; GrayHeld follows when the hold
// is settled (gray.DecideReport), so that the event, the GrayHeld condition and `kubectl gray
// status` agree. Only the first hold point of a rollout feeds the time-to-hold histogram; later
// ones include the time people took to resume.
func (g *graySync) heldEvent(ctx context.Context) {
	replicas := *g.cur.d.Spec.Replicas
	waiting := g.st.Target - min(g.cur.newRS.Status.AvailableReplicas, g.st.Target)
	if !deployutil.StatusObserved(g.cur.newRS) {
		waiting = g.st.Target
	}
	g.gs.eventRecorder.Eventf(g.cur.d, corev1.EventTypeNormal, grayapi.ReasonGrayHolding, "%s reached %d/%d (%d%%); waiting for %d of its pods to become ready",
		g.cur.newRS.Name, g.st.Target, replicas, g.st.Percent, waiting)
	klog.FromContext(ctx).V(2).Info("Gray rollout held", "deployment", klog.KObj(g.cur.d), "replicaSet", klog.KObj(g.cur.newRS),
		"target", g.st.Target, "replicas", replicas, "percent", g.st.Percent)
	sinceStart := time.Duration(-1)
	if g.st.Step == 0 && !g.cur.newRS.CreationTimestamp.IsZero() {
		sinceStart = max(g.in.now.Sub(g.cur.newRS.CreationTimestamp.Time), 0)
	}
	metrics.RecordGrayHold(sinceStart)
}
