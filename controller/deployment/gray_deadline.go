package deployment

// The progress deadline of a gray step (docs/design.md: failing canaries). Upstream's
// Progressing condition cannot catch a failing canary: a held Deployment is paused, and a
// paused Deployment never times out. So every gray step keeps its own clock in
// kubegray.io/status (Status.Progress): it starts when the step does (rollout start, resume,
// new template, a scaling event that moved the target) and restarts whenever the new
// ReplicaSet gains an available replica, as upstream's deadline restarts on progress. A step
// whose new ReplicaSet is still short of its target progressDeadlineSeconds after its last
// progress is Degraded. A settled hold runs no clock: holding is intentional.
//
// Degraded changes no ReplicaSet. With kubegray.io/on-failure: abort a later sync aborts the
// rollout (gray_abort.go).

import (
	"context"
	"fmt"
	"time"

	"github.com/kubegray/kubectl-gray/controller/gray"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/kubegray/kubectl-gray/pkg/deployutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// trackDeadline carries out DecideDeadline: it queues the next deadline check, or makes the
// step Degraded.
func (g *graySync) trackDeadline(ctx context.Context) {
	f := gray.DeadlineFacts{Status: g.st, Prev: g.in.prev, HasPrev: g.in.hasPrev, Now: g.in.now,
		ClockStopped: g.pausedByUser() || !deployutil.HasProgressDeadline(g.cur.d)}
	if !f.ClockStopped {
		f.Deadline = time.Duration(*g.cur.d.Spec.ProgressDeadlineSeconds) * time.Second
	}
	if g.cur.newRS != nil {
		f.Available = g.cur.newRS.Status.AvailableReplicas
	}
	dec := gray.DecideDeadline(f)
	g.st = dec.Status
	switch {
	case dec.CheckAfter > 0:
		g.dc.enqueueAfter(g.cur.d, dec.CheckAfter)
	case dec.Missed:
		g.degrade(ctx, f.Available)
	}
}

// pausedByUser reports whether the rollout is paused by its user rather than by our hold:
// spec.paused without heldAt, or in alongside mode kubegray.io/paused. Such a pause stops
// the deadline and keeps a timed hold.
func (g *graySync) pausedByUser() bool {
	return (g.cur.d.Spec.Paused && g.st.HeldAt == nil) || g.mode.pausedByItsUser()
}

// degrade makes the step Degraded. The Failure, its Warning event and the pod reasons in it
// are produced once per step; a later sync of the same Degraded step keeps them.
func (g *graySync) degrade(ctx context.Context, available int32) {
	if p := g.in.prev; p.Phase == grayapi.PhaseDegraded && p.Failure != nil && p.Revision == g.st.Revision && p.Step == g.st.Step {
		g.st = gray.Degraded(g.st, p.Failure, p.Message)
		return
	}
	rsName := "(none created)"
	if g.cur.newRS != nil {
		rsName = g.cur.newRS.Name
	}
	msg := fmt.Sprintf("replica set %s has %d of %d replicas available, %ds after the step last progressed (progressDeadlineSeconds)",
		rsName, available, g.st.Target, *g.cur.d.Spec.ProgressDeadlineSeconds)
	if why := g.dc.whyNewPodsNotReady(ctx, g.cur.newRS); why != "" {
		msg += ": " + why
	}
	g.st = gray.Degraded(g.st, &grayapi.Failure{Reason: grayapi.ReasonProgressDeadlineExceeded, Message: msg},
		fmt.Sprintf("revision %d missed its progress deadline: %s", g.st.Revision, msg))
	g.dc.eventRecorder.Eventf(g.cur.d, corev1.EventTypeWarning, grayapi.ReasonGrayDegraded, "Revision %d at %d%%: %s", g.st.Revision, g.st.Percent, msg)
	klog.FromContext(ctx).V(2).Info("Gray rollout degraded", "deployment", klog.KObj(g.cur.d), "revision", g.st.Revision,
		"replicaSet", rsName, "available", available, "target", g.st.Target)
}

// reportDeadlineCondition mirrors a gray deadline into upstream's Progressing condition while
// our hold pauses the Deployment in instead mode, so that `kubectl rollout status` and GitOps
// health checks see the failure: False/ProgressDeadlineExceeded while Degraded, and back to
// upstream's Unknown/DeploymentPaused otherwise. A running or user-paused Deployment keeps
// upstream's condition exactly; in alongside mode the condition is the built-in controller's.
func (g *graySync) reportDeadlineCondition(status *appsv1.DeploymentStatus) {
	if !g.cur.d.Spec.Paused || g.st.HeldAt == nil || !deployutil.HasProgressDeadline(g.cur.d) {
		return
	}
	cond := deployutil.GetDeploymentCondition(*status, appsv1.DeploymentProgressing)
	switch {
	case g.st.Phase == grayapi.PhaseDegraded:
		if cond == nil || cond.Reason != deployutil.TimedOutReason || cond.Message != g.st.Failure.Message {
			g.mode.mirrorProgressing(status, *deployutil.NewDeploymentCondition(appsv1.DeploymentProgressing,
				corev1.ConditionFalse, deployutil.TimedOutReason, g.st.Failure.Message, g.in.metaNow()))
		}
	case cond != nil && cond.Reason == deployutil.TimedOutReason:
		g.mode.mirrorProgressing(status, *deployutil.NewDeploymentCondition(appsv1.DeploymentProgressing,
			corev1.ConditionUnknown, deployutil.PausedDeployReason, "Deployment is paused", g.in.metaNow()))
	}
}
