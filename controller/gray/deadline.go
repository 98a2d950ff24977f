package gray

// The progress deadline of a gray step (docs/design.md: failing canaries). Upstream's Progressing
// condition cannot catch a failing canary: a held Deployment is paused, and a paused Deployment
// never times out. So every step keeps its own clock in kubegray.io/status (Status.Progress),
// started with the step and restarted when the canary gains an available replica; a step still
// short of its target progressDeadlineSeconds after its last progress is Degraded. Degraded
// changes no ReplicaSet; kubegray.io/on-failure: abort acts on it in a later sync (decideCourse).

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// DeadlineSlack is how long after a deadline its check is queued, so that the check does not
// run a hair before it and find the step still in time.
const DeadlineSlack = 100 * time.Millisecond

// DeadlineFacts is what DecideDeadline decides from.
type DeadlineFacts struct {
	// st is the status with its phase decided (DecidePhase); prev the status read.
	Status, Prev grayapi.Status
	HasPrev      bool
	// clockStopped: the user's own pause (pausedByUser) or no progressDeadlineSeconds.
	ClockStopped bool
	// deadline is progressDeadlineSeconds.
	Deadline time.Duration
	// HoldFor is how long the step's hold lasts by itself (grayapi.Policy.HoldForAt), recorded
	// when it settles.
	HoldFor time.Duration
	// available is the new ReplicaSet's available replicas (0 without one).
	Available int32
	Now       time.Time
}

// DeadlineDecision is what DecideDeadline decided.
type DeadlineDecision struct {
	// st carries the step's clocks (Progress, SettledAt) and the Failure kept for its phase.
	Status grayapi.Status
	// checkAfter is when to check the deadline again (0: no check queued).
	CheckAfter time.Duration
	// missed: the step is past its deadline and Degraded (degrade says why).
	Missed bool
}

// DecideDeadline keeps the step's clocks and the Failure for the phase decided, and finds a
// Progressing step that missed its deadline. The clock starts with the step and restarts when
// the canary has more available replicas than ever before in it (a high-water mark, so that a
// pod flapping between ready and not does not keep resetting it); a canary with every replica
// available runs no clock (what is left is the old side settling, not the canary's failure),
// nor does a rollout paused by its user (it starts afresh on resume). Held records when the
// step first settled (SettledAt) and how long its hold then lasts by itself (HoldFor).
func DecideDeadline(f DeadlineFacts) DeadlineDecision {
	st := f.Status
	prevOfStep := f.HasPrev && sameStep(f.Prev, st)
	switch st.Phase {
	case grayapi.PhaseComplete:
		st.Progress, st.SettledAt, st.HoldFor = nil, nil, nil
		st.Failure = KeptRollbackFailure(st, st.Revision)
		return DeadlineDecision{Status: st}
	case grayapi.PhaseHeld:
		st.Progress = nil
		st.Failure = nil
		if !prevOfStep || f.Prev.SettledAt == nil {
			st.SettledAt = new(metav1.NewTime(f.Now))
			st.HoldFor = &metav1.Duration{Duration: f.HoldFor}
		}
		return DeadlineDecision{Status: st}
	case grayapi.PhaseRolledBack:
		st.Progress = nil
		return DeadlineDecision{Status: st}
	}
	if !prevOfStep {
		st.SettledAt, st.HoldFor = nil, nil
	}
	st.Failure = KeptRollbackFailure(st, st.Revision)
	if f.ClockStopped {
		st.Progress = nil
		return DeadlineDecision{Status: st}
	}
	switch prev := f.Prev.Progress; {
	case !prevOfStep || f.Prev.Target != st.Target || prev == nil, f.Available > prev.Available:
		st.Progress = &grayapi.Progress{At: metav1.NewMicroTime(f.Now), Available: f.Available}
	default:
		st.Progress = prev
	}
	if f.Available >= st.Target {
		return DeadlineDecision{Status: st}
	}
	if left := st.Progress.At.Add(f.Deadline).Sub(f.Now); left > 0 {
		return DeadlineDecision{Status: st, CheckAfter: left + DeadlineSlack}
	}
	return DeadlineDecision{Status: st, Missed: true}
}

// KeptRollbackFailure is the failure a status of revision rev keeps: the one recorded when its
// template went back to the stable revision (failure.rolledBackFrom, phase RolledBack: an undo,
// kubectl rollout undo, a revert), which stays until the next rollout begins; nil otherwise.
func KeptRollbackFailure(st grayapi.Status, rev int64) *grayapi.Failure {
	if st.Revision == rev && st.Failure != nil && st.Failure.RolledBackFrom > 0 {
		return st.Failure
	}
	return nil
}
