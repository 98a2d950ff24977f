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
// Degraded changes no ReplicaSet. With kubegray.io/on-failure: rollback the stable revision's
// template is put back (gray_failure.go).

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/kubegray/kubectl-gray/pkg/deployutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// deadlineSlack is how long after a deadline its check is queued, so that the check does not
// run a hair before it and find the step still in time.
const deadlineSlack = 100 * time.Millisecond

// trackDeadline runs after decidePhase decided the phase: it keeps the step's clocks
// (Progress, SettledAt) and the Failure for that phase, turns a Progressing step that missed
// its deadline into Degraded, and schedules the sync that checks the deadline next.
func (g *graySync) trackDeadline(ctx context.Context) {
	st := &g.st
	sameStep := g.hasPrev && g.prev.Revision == st.Revision && g.prev.Step == st.Step
	switch st.Phase {
	case grayapi.PhaseComplete:
		st.Progress, st.SettledAt = nil, nil
		g.keepOnlyRollbackFailure()
		return
	case grayapi.PhaseHeld:
		st.Progress = nil
		st.Failure = nil
		if !sameStep || g.prev.SettledAt == nil {
			st.SettledAt = ptrTime(g.dc.metaNow())
		}
		return
	case grayapi.PhaseRolledBack:
		st.Progress = nil
		return
	}
	if !sameStep {
		st.SettledAt = nil
	}
	g.keepOnlyRollbackFailure()
	if g.pausedByUser() || !deployutil.HasProgressDeadline(g.d) {
		// The user's own pause stops the clock, as it stops upstream's; it starts afresh on resume.
		st.Progress = nil
		return
	}
	available := int32(0)
	if g.newRS != nil {
		available = g.newRS.Status.AvailableReplicas
	}
	switch prev := g.prev.Progress; {
	case !sameStep || g.prev.Target != st.Target || prev == nil:
		st.Progress = &grayapi.Progress{At: metav1.NewMicroTime(g.dc.now()), Available: available}
	case available > prev.Available:
		st.Progress = &grayapi.Progress{At: metav1.NewMicroTime(g.dc.now()), Available: available}
	default:
		// The high-water mark, so that a pod that flaps between ready and not does not restart
		// the clock every time it comes back.
		st.Progress = prev
	}
	if available >= st.Target {
		// The new side is done; what is left is the old side settling, which is not the
		// canary's failure.
		return
	}
	deadline := st.Progress.At.Add(time.Duration(*g.d.Spec.ProgressDeadlineSeconds) * time.Second)
	if left := deadline.Sub(g.dc.now()); left > 0 {
		g.dc.enqueueAfter(g.d, left+deadlineSlack)
		return
	}
	g.degrade(ctx, available)
}

// keepOnlyRollbackFailure clears st.Failure unless it records a rollback made by on-failure,
// which stays until the next rollout begins, so that whoever waits for completion learns that
// the revision they waited for was rolled back.
func (g *graySync) keepOnlyRollbackFailure() {
	g.st.Failure = keptRollbackFailure(g.st, g.st.Revision)
}

// keptRollbackFailure is the failure a status of revision rev keeps: the one an on-failure
// rollback recorded, which stays until the next rollout begins; nil otherwise.
func keptRollbackFailure(st grayapi.Status, rev int64) *grayapi.Failure {
	if st.Revision == rev && st.Failure != nil && st.Failure.RolledBackFrom > 0 {
		return st.Failure
	}
	return nil
}

// pausedByUser reports whether the rollout is paused by its user rather than by our hold:
// spec.paused without heldAt, or in alongside mode kubegray.io/paused. Such a pause stops
// the deadline and keeps a timed hold.
func (g *graySync) pausedByUser() bool {
	return (g.d.Spec.Paused && g.st.HeldAt == nil) || g.mode.pausedByItsUser()
}

// degrade makes the step Degraded. The Failure, its Warning event and the pod reasons in it
// are produced once per step; a later sync of the same Degraded step keeps them.
func (g *graySync) degrade(ctx context.Context, available int32) {
	st := &g.st
	st.Phase = grayapi.PhaseDegraded
	if g.prev.Phase == grayapi.PhaseDegraded && g.prev.Failure != nil && g.prev.Revision == st.Revision && g.prev.Step == st.Step {
		st.Failure = g.prev.Failure
		st.Message = g.prev.Message
		return
	}
	rsName := "(none created)"
	if g.newRS != nil {
		rsName = g.newRS.Name
	}
	msg := fmt.Sprintf("replica set %s has %d of %d replicas available, %ds after the step last progressed (progressDeadlineSeconds)",
		rsName, available, st.Target, *g.d.Spec.ProgressDeadlineSeconds)
	if why := g.dc.whyNewPodsNotReady(ctx, g.newRS); why != "" {
		msg += ": " + why
	}
	st.Failure = &grayapi.Failure{Reason: grayapi.ReasonProgressDeadlineExceeded, Message: msg}
	st.Message = fmt.Sprintf("revision %d missed its progress deadline: %s", st.Revision, msg)
	g.dc.eventRecorder.Eventf(g.d, corev1.EventTypeWarning, grayapi.ReasonGrayDegraded, "Revision %d at %d%%: %s", st.Revision, st.Percent, msg)
	klog.FromContext(ctx).V(2).Info("Gray rollout degraded", "deployment", klog.KObj(g.d), "revision", st.Revision,
		"replicaSet", rsName, "available", available, "target", st.Target)
}

// reportDeadlineCondition mirrors a gray deadline into upstream's Progressing condition while
// our hold pauses the Deployment in instead mode, so that `kubectl rollout status` and GitOps
// health checks see the failure: False/ProgressDeadlineExceeded while Degraded, and back to
// upstream's Unknown/DeploymentPaused otherwise. A running or user-paused Deployment keeps
// upstream's condition exactly; in alongside mode the condition is the built-in controller's.
func (g *graySync) reportDeadlineCondition(status *appsv1.DeploymentStatus) {
	if !g.mode.ownsProgressing() || !g.d.Spec.Paused || g.st.HeldAt == nil || !deployutil.HasProgressDeadline(g.d) {
		return
	}
	cond := deployutil.GetDeploymentCondition(*status, appsv1.DeploymentProgressing)
	switch {
	case g.st.Phase == grayapi.PhaseDegraded:
		if cond == nil || cond.Reason != deployutil.TimedOutReason || cond.Message != g.st.Failure.Message {
			deployutil.SetDeploymentCondition(status, *deployutil.NewDeploymentCondition(appsv1.DeploymentProgressing,
				corev1.ConditionFalse, deployutil.TimedOutReason, g.st.Failure.Message, g.dc.metaNow()))
		}
	case cond != nil && cond.Reason == deployutil.TimedOutReason:
		deployutil.SetDeploymentCondition(status, *deployutil.NewDeploymentCondition(appsv1.DeploymentProgressing,
			corev1.ConditionUnknown, deployutil.PausedDeployReason, "Deployment is paused", g.dc.metaNow()))
	}
}
