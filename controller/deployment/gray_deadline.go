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

// deadlineFacts is what decideDeadline decides from.
type deadlineFacts struct {
	// st is the status with its phase decided (decidePhase); prev the status read.
	st, prev grayapi.Status
	hasPrev  bool
	// clockStopped: the user's own pause (pausedByUser) or no progressDeadlineSeconds.
	clockStopped bool
	// deadline is progressDeadlineSeconds.
	deadline time.Duration
	// available is the new ReplicaSet's available replicas (0 without one).
	available int32
	now       time.Time
}

// deadlineDecision is what decideDeadline decided.
type deadlineDecision struct {
	// st carries the step's clocks (Progress, SettledAt) and the Failure kept for its phase.
	st grayapi.Status
	// checkAfter is when to check the deadline again (0: no check queued).
	checkAfter time.Duration
	// missed: the step is past its deadline and Degraded (degrade says why).
	missed bool
}

// decideDeadline keeps the step's clocks and the Failure for the phase decided, and finds a
// Progressing step that missed its deadline. The clock starts with the step and restarts when
// the canary has more available replicas than ever before in it (a high-water mark, so that a
// pod flapping between ready and not does not keep resetting it); a canary with every replica
// available runs no clock (what is left is the old side settling, not the canary's failure),
// nor does a rollout paused by its user (it starts afresh on resume). Held records when the
// step first settled (SettledAt, for kubegray.io/hold-for).
func decideDeadline(f deadlineFacts) deadlineDecision {
	st := f.st
	sameStep := f.hasPrev && f.prev.Revision == st.Revision && f.prev.Step == st.Step
	switch st.Phase {
	case grayapi.PhaseComplete:
		st.Progress, st.SettledAt = nil, nil
		st.Failure = keptRollbackFailure(st, st.Revision)
		return deadlineDecision{st: st}
	case grayapi.PhaseHeld:
		st.Progress = nil
		st.Failure = nil
		if !sameStep || f.prev.SettledAt == nil {
			st.SettledAt = ptrTime(metav1.NewTime(f.now))
		}
		return deadlineDecision{st: st}
	case grayapi.PhaseRolledBack:
		st.Progress = nil
		return deadlineDecision{st: st}
	}
	if !sameStep {
		st.SettledAt = nil
	}
	st.Failure = keptRollbackFailure(st, st.Revision)
	if f.clockStopped {
		st.Progress = nil
		return deadlineDecision{st: st}
	}
	switch prev := f.prev.Progress; {
	case !sameStep || f.prev.Target != st.Target || prev == nil, f.available > prev.Available:
		st.Progress = &grayapi.Progress{At: metav1.NewMicroTime(f.now), Available: f.available}
	default:
		st.Progress = prev
	}
	if f.available >= st.Target {
		return deadlineDecision{st: st}
	}
	if left := st.Progress.At.Add(f.deadline).Sub(f.now); left > 0 {
		return deadlineDecision{st: st, checkAfter: left + deadlineSlack}
	}
	return deadlineDecision{st: st, missed: true}
}

// trackDeadline carries out decideDeadline: it queues the next deadline check, or makes the
// step Degraded.
func (g *graySync) trackDeadline(ctx context.Context) {
	f := deadlineFacts{st: g.st, prev: g.in.prev, hasPrev: g.in.hasPrev, now: g.dc.now(),
		clockStopped: g.pausedByUser() || !deployutil.HasProgressDeadline(g.cur.d)}
	if !f.clockStopped {
		f.deadline = time.Duration(*g.cur.d.Spec.ProgressDeadlineSeconds) * time.Second
	}
	if g.cur.newRS != nil {
		f.available = g.cur.newRS.Status.AvailableReplicas
	}
	dec := decideDeadline(f)
	g.st = dec.st
	switch {
	case dec.checkAfter > 0:
		g.dc.enqueueAfter(g.cur.d, dec.checkAfter)
	case dec.missed:
		g.degrade(ctx, f.available)
	}
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
	return (g.cur.d.Spec.Paused && g.st.HeldAt == nil) || g.mode.pausedByItsUser()
}

// degrade makes the step Degraded. The Failure, its Warning event and the pod reasons in it
// are produced once per step; a later sync of the same Degraded step keeps them.
func (g *graySync) degrade(ctx context.Context, available int32) {
	st := &g.st
	st.Phase = grayapi.PhaseDegraded
	if g.in.prev.Phase == grayapi.PhaseDegraded && g.in.prev.Failure != nil && g.in.prev.Revision == st.Revision && g.in.prev.Step == st.Step {
		st.Failure = g.in.prev.Failure
		st.Message = g.in.prev.Message
		return
	}
	rsName := "(none created)"
	if g.cur.newRS != nil {
		rsName = g.cur.newRS.Name
	}
	msg := fmt.Sprintf("replica set %s has %d of %d replicas available, %ds after the step last progressed (progressDeadlineSeconds)",
		rsName, available, st.Target, *g.cur.d.Spec.ProgressDeadlineSeconds)
	if why := g.dc.whyNewPodsNotReady(ctx, g.cur.newRS); why != "" {
		msg += ": " + why
	}
	st.Failure = &grayapi.Failure{Reason: grayapi.ReasonProgressDeadlineExceeded, Message: msg}
	st.Message = fmt.Sprintf("revision %d missed its progress deadline: %s", st.Revision, msg)
	g.dc.eventRecorder.Eventf(g.cur.d, corev1.EventTypeWarning, grayapi.ReasonGrayDegraded, "Revision %d at %d%%: %s", st.Revision, st.Percent, msg)
	klog.FromContext(ctx).V(2).Info("Gray rollout degraded", "deployment", klog.KObj(g.cur.d), "revision", st.Revision,
		"replicaSet", rsName, "available", available, "target", st.Target)
}

// reportDeadlineCondition mirrors a gray deadline into upstream's Progressing condition while
// our hold pauses the Deployment in instead mode, so that `kubectl rollout status` and GitOps
// health checks see the failure: False/ProgressDeadlineExceeded while Degraded, and back to
// upstream's Unknown/DeploymentPaused otherwise. A running or user-paused Deployment keeps
// upstream's condition exactly; in alongside mode the condition is the built-in controller's.
func (g *graySync) reportDeadlineCondition(status *appsv1.DeploymentStatus) {
	if !g.mode.ownsProgressing() || !g.cur.d.Spec.Paused || g.st.HeldAt == nil || !deployutil.HasProgressDeadline(g.cur.d) {
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
