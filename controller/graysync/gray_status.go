package graysync

// Reporting a gray sync: upstream's status counts and conditions, the gray phase and message
// in kubegray.io/status, and the GrayHeld condition, written once per sync when anything
// changed (gray.DecideReport); and clearing all of it from a Deployment that left gray. An
// Invalid annotation's report: gray_invalid.go.

import (
	"context"
	"fmt"

	"github.com/kubegray/kubectl-gray/controller/deployment"
	"github.com/kubegray/kubectl-gray/controller/gray"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/kubegray/kubectl-gray/controller/metrics"
	"github.com/kubegray/kubectl-gray/pkg/deployutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// report writes what gray.DecideReport decided: upstream's counts and conditions (the paused
// form while paused, the rolling form otherwise), the gray phase in kubegray.io/status and the
// GrayHeld condition, all in one UpdateStatus when anything changed, and then the events.
func (g *graySync) report(ctx context.Context) error {
	d := g.cur.d
	allRSs := deployutil.WithNewRS(g.cur.oldRSs, g.cur.newRS)
	var newStatus appsv1.DeploymentStatus
	if d.Spec.Paused {
		newStatus = g.gs.port.CalculateStatus(allRSs, g.cur.newRS, d)
		setPausedCondition(&newStatus, d, g.in.metaNow())
	} else {
		setResumedCondition(d, g.in.metaNow())
		newStatus = g.gs.port.CalculateRolloutStatus(ctx, allRSs, g.cur.newRS, d)
	}

	f := gray.ReportFacts{Status: g.st, Prev: g.in.prev, HasPrev: g.in.hasPrev, Steps: len(g.in.points), Policy: g.in.policy,
		Deployment: d, NewRS: g.cur.newRS, OldRSs: g.cur.oldRSs, Complete: deployutil.DeploymentComplete(d, &newStatus),
		Progressing: deployutil.GetDeploymentCondition(newStatus, appsv1.DeploymentProgressing), ModePaused: g.mode.pausedByItsUser(),
		Gates: g.gates, Now: g.in.now}
	dec := gray.DecideReport(f)
	if dec.NeedsPodReasons {
		f.PodsRead, f.PodsNotReady = true, g.gs.whyNewPodsNotReady(ctx, g.cur.newRS)
		dec = gray.DecideReport(f)
	}
	g.st = dec.Status
	if dec.Progressing != nil {
		g.mode.mirrorProgressing(&newStatus, *dec.Progressing)
	}
	if dec.LookAgain > 0 {
		g.gs.port.EnqueueAfter(d, dec.LookAgain)
	}
	// The stable mark moves before the status says Complete: a controller stopped in between
	// leaves a mark no older than the status, and the mark is what wins (gray_record.go).
	if dec.MarkStable {
		written, err := g.gs.markStable(ctx, d, g.cur.newRS, g.cur.oldRSs)
		g.adoptReplicaSets(written)
		if err != nil {
			return err
		}
	}
	updated, err := g.withStatus(ctx, newStatus, len(g.in.points))
	if err != nil {
		return err
	}
	if !g.mode.skipsReport(g.st) {
		if err := g.writeStatus(ctx, updated); err != nil {
			return err
		}
	}
	if err := g.emit(ctx, dec.Events); err != nil {
		return err
	}
	if err := g.gatesWritten(ctx); err != nil {
		return err
	}
	metrics.SetGrayPhase(g.in.key, g.st.Phase)
	return nil
}

// emit sends events the core decided, and logs them, once the Deployment they were decided
// from is known to be the server's (a sync that wrote nothing may not know it yet: deployment.liveCheck).
func (g *graySync) emit(ctx context.Context, events []gray.Event) error {
	if len(events) == 0 {
		return nil
	}
	if err := deployment.ConfirmLive(ctx); err != nil {
		return err
	}
	for _, e := range events {
		g.gs.eventRecorder.Eventf(g.cur.d, e.Type, e.Reason, "%s", e.Message)
		klog.FromContext(ctx).V(2).Info("Gray event", "deployment", klog.KObj(g.cur.d), "reason", e.Reason, "message", e.Message)
	}
	return nil
}

// writeStatus writes updated through /status unless it equals what we have; an unchanged
// rolling Deployment gets its progress-deadline check scheduled instead, as upstream does.
func (g *graySync) writeStatus(ctx context.Context, updated *appsv1.Deployment) error {
	d := g.cur.d
	written, err := g.mode.persistStatus(ctx, g.cur.server, updated)
	if err != nil {
		return fmt.Errorf("deployment %s/%s: writing status (gray phase %s): %w", d.Namespace, d.Name, g.st.Phase, err)
	}
	if written == nil {
		if !d.Spec.Paused {
			g.gs.port.RequeueStuckDeployment(ctx, d, updated.Status)
		}
		return nil
	}
	d.Status = updated.Status
	g.adopt(written)
	return nil
}

// setPausedCondition is checkPausedConditions' paused half applied to a status being built:
// Progressing Unknown/DeploymentPaused, unless there is no deadline or it already timed out.
func setPausedCondition(status *appsv1.DeploymentStatus, d *appsv1.Deployment, now metav1.Time) {
	if !deployutil.HasProgressDeadline(d) {
		return
	}
	cond := deployutil.GetDeploymentCondition(*status, appsv1.DeploymentProgressing)
	if cond != nil && (cond.Reason == deployutil.TimedOutReason || cond.Reason == deployutil.PausedDeployReason) {
		return
	}
	deployutil.SetDeploymentCondition(status, *deployutil.NewDeploymentCondition(appsv1.DeploymentProgressing, corev1.ConditionUnknown,
		deployutil.PausedDeployReason, "Deployment is paused", now))
}

// setResumedCondition is checkPausedConditions' resumed half, applied to d's status in memory
// so that the rolling status built from it starts from Unknown/DeploymentResumed.
func setResumedCondition(d *appsv1.Deployment, now metav1.Time) {
	if !deployutil.HasProgressDeadline(d) {
		return
	}
	cond := deployutil.GetDeploymentCondition(d.Status, appsv1.DeploymentProgressing)
	if cond == nil || cond.Reason != deployutil.PausedDeployReason {
		return
	}
	deployutil.SetDeploymentCondition(&d.Status, *deployutil.NewDeploymentCondition(appsv1.DeploymentProgressing, corev1.ConditionUnknown,
		deployutil.ResumedDeployReason, "Deployment is resumed", now))
}

// withStatus is the Deployment to write at the end of a sync: upstream's status (newStatus)
// with the gray conditions of g.st over steps hold points, and g.st in kubegray.io/status.
func (g *graySync) withStatus(ctx context.Context, newStatus appsv1.DeploymentStatus, steps int) (*appsv1.Deployment, error) {
	gray.SetConditions(&newStatus, g.st, *g.cur.d.Spec.Replicas, steps, g.in.metaNow())
	updated := g.cur.d.DeepCopy()
	updated.Status = newStatus
	return updated, g.setStatusAnnotation(ctx, updated)
}

// nextFacts is what the next sync would gather once d is written with g.st: that status, as
// this controller's, the objects as this sync left them, no scaling event and no request.
func (g *graySync) nextFacts(d *appsv1.Deployment) gray.Facts {
	f := g.facts
	f.Prev, f.HasPrev, f.ForeignWriter = g.st, g.st.Revision > 0, ""
	f.Prev.Serves = nil
	f.Deployment, f.NewRS, f.OldRSs = d, g.cur.newRS, g.cur.oldRSs
	f.Cached = deployutil.WithNewRS(g.cur.oldRSs, g.cur.newRS)
	f.Request, f.Scaling = grayapi.Resume{}, false
	return f
}

// setStatusAnnotation writes st into d's annotations, with what the controller would serve once
// d is written (gray.Serves, asked on the facts the next sync would gather: nextFacts).
func (g *graySync) setStatusAnnotation(ctx context.Context, d *appsv1.Deployment) error {
	g.mode.stamp(&g.st)
	g.st.ObservedGeneration = d.Generation
	g.st.Serves = gray.Serves(ctx, g.nextFacts(d), g.mode.unpauseReaches())
	value, err := grayapi.FormatStatus(g.st)
	if err != nil {
		return fmt.Errorf("deployment %s/%s: %w", d.Namespace, d.Name, err)
	}
	d.Annotations[grayapi.StatusAnnotation] = value
	return nil
}

// adopt takes metadata and spec of a Deployment we just wrote; the status stays ours, because
// a main-resource Update answers with the server's old status.
func (g *graySync) adopt(written *appsv1.Deployment) {
	g.cur.d.ObjectMeta = *written.ObjectMeta.DeepCopy()
	g.cur.d.Spec = *written.Spec.DeepCopy()
	g.cur.server = written.DeepCopy()
	g.mode.adopted(g.cur.d)
}

// clearGray removes what the gray path left on a Deployment that is no longer gray
// (kubegray.io/percent removed, or the strategy is no longer RollingUpdate): our hold is
// unpaused, and kubegray.io/status and the GrayHeld condition go. The caller goes on with
// upstream's flow on d, whose resourceVersion follows these writes.
func (gs *Controller) clearGray(ctx context.Context, d *appsv1.Deployment) error {
	prev, _ := readGrayStatus(ctx, d)
	if d.Spec.Paused && prev.HeldAt != nil {
		unpaused := d.DeepCopy()
		unpaused.Spec.Paused = false
		delete(unpaused.Annotations, grayapi.StatusAnnotation)
		written, err := gs.client.AppsV1().Deployments(d.Namespace).Update(ctx, unpaused, metav1.UpdateOptions{FieldManager: gs.fieldManager})
		if err != nil {
			return fmt.Errorf("deployment %s/%s: unpausing the gray hold after %s was removed: %w", d.Namespace, d.Name, grayapi.PercentAnnotation, err)
		}
		d.ObjectMeta = *written.ObjectMeta.DeepCopy()
		d.Spec = *written.Spec.DeepCopy()
		gs.eventRecorder.Eventf(d, corev1.EventTypeNormal, grayapi.ReasonGrayResumed,
			"Gray rollout of revision %d released: %s is gone, the rollout completes", prev.Revision, grayapi.PercentAnnotation)
	}
	if !gray.HasLeftovers(d) {
		return nil
	}
	delete(d.Annotations, grayapi.StatusAnnotation)
	for _, c := range grayapi.Conditions {
		deployutil.RemoveDeploymentCondition(&d.Status, c)
	}
	written, err := gs.client.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, d, metav1.UpdateOptions{FieldManager: gs.fieldManager})
	if err != nil {
		return fmt.Errorf("deployment %s/%s: removing the gray status: %w", d.Namespace, d.Name, err)
	}
	d.ObjectMeta = *written.ObjectMeta.DeepCopy()
	return nil
}
