package gray

// The moves a sync makes on the rollout's status between identifying it and reporting it. With
// identify and DecidePhase these are the only code that sets a phase (TestPhaseSetOnlyInCore),
// so each phase's meaning lives in one package: Progressing is a rollout moving or about to,
// Held is DecidePhase's alone (a hold is Held only once it settles), RolledBack is said from the
// first write of a rollback on and a hold left then does not unsay it.

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// HoldTaken is st with our hold taken from now at its target. The phase is Progressing: the
// hold is not Held until it settles, which only DecidePhase says.
func HoldTaken(st grayapi.Status, now metav1.Time) grayapi.Status {
	st.HeldAt = &now
	st.Phase = grayapi.PhaseProgressing
	return st
}

// HoldGone is st with our hold gone: Progressing, unless the rollout is rolling back.
func HoldGone(st grayapi.Status) grayapi.Status {
	st.HeldAt = nil
	if st.Phase != grayapi.PhaseRolledBack {
		st.Phase = grayapi.PhaseProgressing
	}
	return st
}

// Resumed is st moved on to step, its hold left and the step's clocks restarted. The hold write
// carries it before the report does: a report that then conflicts leaves it as the next sync's
// previous status, of the same step, and a settledAt kept from the hold left would end the next
// hold's hold-for as soon as it settled.
func Resumed(st grayapi.Status, step int32) grayapi.Status {
	st.Step = step
	st.HeldAt, st.SettledAt, st.HoldFor, st.Progress = nil, nil, nil, nil
	// The gates were the hold's; the next hold measures afresh.
	st.Gates = nil
	st.Phase = grayapi.PhaseProgressing
	return st
}

// Retargeted is st whose target moved under a Held status (a scaling event, say): what was held
// is not settled for the new target yet, and a Held written before the resize would be taken
// back by the report after it. replicas is the Deployment's count. Any other phase is kept.
func Retargeted(st grayapi.Status, replicas int32) grayapi.Status {
	if st.Phase != grayapi.PhaseHeld {
		return st
	}
	st.Phase = grayapi.PhaseProgressing
	st.Message = fmt.Sprintf("resizing revision %d to its hold target %d of %d replicas (%d%%)", st.Revision, st.Target, replicas, st.Percent)
	return st
}

// Retried is an aborted st rolled to its first hold point again, its failure, clocks and hold
// cleared.
func Retried(st grayapi.Status) grayapi.Status {
	st.Step = 0
	st.Phase = grayapi.PhaseProgressing
	st.Failure, st.Progress, st.SettledAt, st.HoldFor, st.HeldAt = nil, nil, nil, nil, nil
	return st
}

// Aborted is st aborted: no canary target, no hold, no clocks. Its failure is kept; without one
// (the status that said why was lost) it is re-derived from the abort record on newRSName ("":
// the canary's ReplicaSet is gone).
func Aborted(st grayapi.Status, newRSName string) grayapi.Status {
	st.Phase = grayapi.PhaseAborted
	st.Target = 0
	st.HeldAt, st.Progress, st.SettledAt, st.HoldFor = nil, nil, nil, nil
	if st.Failure == nil {
		message := fmt.Sprintf("replica set %s carries %s=%d", newRSName, grayapi.AbortedLabel, st.Revision)
		if newRSName == "" {
			message = fmt.Sprintf("revision %d was aborted", st.Revision)
		}
		st.Failure = &grayapi.Failure{Reason: grayapi.ReasonAborted, Message: message}
	}
	return st
}

// Completed is the status of a rollout whose revision rev runs all replicas after steps hold
// points, outside a gray sync: alongside mode's record of a rollout the built-in controller
// completed while we had not taken the Deployment over. kept is the failure it keeps
// (KeptRollbackFailure).
func Completed(rev int64, steps int32, replicas int32, kept *grayapi.Failure) grayapi.Status {
	return grayapi.Status{Revision: rev, StableRevision: rev, Step: steps, Percent: grayapi.FullPercent, Target: replicas,
		Phase: grayapi.PhaseComplete, Message: completeMessage(replicas, rev), Failure: kept}
}

// completeMessage is a Complete status's message.
func completeMessage(replicas int32, rev int64) string {
	return fmt.Sprintf("all %d replicas run revision %d", replicas, rev)
}

// Degraded is st failed with failure, message saying so.
func Degraded(st grayapi.Status, failure *grayapi.Failure, message string) grayapi.Status {
	st.Phase = grayapi.PhaseDegraded
	st.Failure = failure
	st.Message = message
	return st
}

// Invalid is st stopped by a bad annotation, message naming the object and the value (the parse
// error). The rest of st is kept, so that fixing the value finds the rollout where it stood.
func Invalid(st grayapi.Status, message string) grayapi.Status {
	st.Phase = grayapi.PhaseInvalid
	st.Message = message
	return st
}
