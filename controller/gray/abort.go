package gray

import (
	"fmt"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/kubegray/kubectl-gray/pkg/deployutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
	"github.com/kubegray/kubectl-gray/pkg/rollout"
)

// abortRequest is what this sync does about aborting; the zero value is nothing.
type abortRequest int

// abortFacts is what decideAbort decides from.
type abortFacts struct {
	// st is the rollout in flight (identify); prev the status read, hasPrev whether trusted.
	Status, Prev grayapi.Status
	HasPrev      bool
	// request is kubegray.io/resume parsed (zero when absent or unreadable).
	Request  grayapi.Resume
	Aborted  bool
	Policy   grayapi.Policy
	HasNewRS bool
	// stableRS: a ReplicaSet of the stable revision is left to go back to.
	StableRS bool
}

// abortDecision is what decideAbort decided.
type abortDecision struct {
	What abortRequest
	// failure is the failure an abort records: the step's own, or ReasonAborted for a person's
	// abort of a rollout that had not failed.
	Failure *grayapi.Failure
	// ignored is the GrayResumeIgnored Warning's message for a request that cannot be served;
	// consume: the request goes with the next write.
	Ignored string
	Consume bool
}

// decideAbort decides whether this sync aborts, retries or neither. An abort needs a rollout in
// flight with a stable ReplicaSet to go back to; on-failure: abort acts only on a Degraded step
// that the status read already reported, so that the failure reached every reader first.
//
//	Degraded read, on-failure abort, stable left      → abortStart with the step's failure
//	"3:abort" on revision 3 held at 20%               → abortStart, failure Aborted
//	"3:retry" on revision 3 aborted                   → abortRetry
//	"3:retry" on revision 3 not aborted, "2:abort"    → ignored, with the reason
func decideAbort(f abortFacts) abortDecision {
	st, req := f.Status, f.Request
	inFlight := f.HasNewRS && st.StableRevision > 0 && st.StableRevision != st.Revision &&
		st.Phase != grayapi.PhaseComplete && st.Phase != grayapi.PhaseRolledBack
	ignore := func(format string, args ...any) abortDecision {
		return abortDecision{Consume: true, Ignored: fmt.Sprintf(format, args...)}
	}
	switch {
	case req.Retry && req.Revision != st.Revision, req.Abort && req.Revision != st.Revision:
		return ignore("revision %d is not the rollout in flight (revision %d)", req.Revision, st.Revision)
	case req.Retry && !f.Aborted:
		return ignore("revision %d is not aborted (phase %s)", req.Revision, st.Phase)
	case req.Retry:
		return abortDecision{What: abortRetry, Consume: true}
	case req.Abort && f.Aborted:
		return ignore("revision %d is already aborted; kubectl gray retry, or a new template, starts it again", req.Revision)
	case req.Abort && !inFlight:
		return ignore("revision %d has no rollout in flight to abort (phase %s, stable revision %d)", req.Revision, st.Phase, st.StableRevision)
	case req.Abort && !f.StableRS:
		return ignore("no replica set of stable revision %d is left to go back to", st.StableRevision)
	case req.Abort:
		failure := &grayapi.Failure{Reason: grayapi.ReasonAborted,
			Message: fmt.Sprintf("revision %d was aborted at %d%% on request", st.Revision, st.Percent)}
		if f.HasPrev && f.Prev.Revision == st.Revision && f.Prev.Failure != nil && f.Prev.Phase == grayapi.PhaseDegraded {
			failure = f.Prev.Failure
		}
		return abortDecision{What: abortStart, Failure: failure, Consume: true}
	}
	degradedRead := f.HasPrev && f.Prev.Phase == grayapi.PhaseDegraded && f.Prev.Revision == st.Revision && f.Prev.Failure != nil
	if !f.Aborted && degradedRead && f.Policy.OnFailure == grayapi.OnFailureAbort && inFlight && f.StableRS {
		return abortDecision{What: abortStart, Failure: f.Prev.Failure}
	}
	return abortDecision{}
}

// PlanAbortSizes is PlanGrayAbort for stable and every other ReplicaSet of d, the canary first.
func PlanAbortSizes(d *appsv1.Deployment, stable, newRS *appsv1.ReplicaSet, oldRSs []*appsv1.ReplicaSet) SizePlan {
	var leaving []*appsv1.ReplicaSet
	if newRS != nil {
		leaving = append(leaving, newRS)
	}
	for _, rs := range oldRSs {
		if rs.UID != stable.UID {
			leaving = append(leaving, rs)
		}
	}
	in := rollout.GrayAbortInput{Replicas: *d.Spec.Replicas, Surge: deployutil.MaxSurge(*d), Unavailable: deployutil.MaxUnavailable(*d),
		Stable: GrayReplicaSet(stable), Leaving: make([]rollout.GrayReplicaSet, len(leaving))}
	for i, rs := range leaving {
		in.Leaving[i] = GrayReplicaSet(rs)
	}
	stableSize, leavingSizes := rollout.PlanGrayAbort(in)
	// apply writes the new ReplicaSet first, then the old ones in the order given.
	plan := SizePlan{Kind: SizesRestored, Old: []*appsv1.ReplicaSet{stable}, OldSizes: []int32{stableSize}}
	if newRS != nil {
		plan.NewSize = leavingSizes[0]
		leaving, leavingSizes = leaving[1:], leavingSizes[1:]
	}
	plan.Old = append(plan.Old, leaving...)
	plan.OldSizes = append(plan.OldSizes, leavingSizes...)
	return plan
}

// AbortRecorded reports whether rs carries the abort label of its own revision, the durable
// record of an abort; a label of another revision was left by an earlier rollout of the same
// template and means nothing now.
func AbortRecorded(rs *appsv1.ReplicaSet) bool {
	if rs == nil {
		return false
	}
	value, ok := rs.Labels[grayapi.AbortedLabel]
	return ok && value == strconv.FormatInt(RevisionOf(rs), 10)
}

const (
	// abortStart: abort the rollout in flight now.
	abortStart abortRequest = iota + 1
	// abortRetry: an aborted rollout starts again at its first hold point.
	abortRetry
)
