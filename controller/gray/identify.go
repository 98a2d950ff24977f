package gray

// Which rollout is in flight: its revision, its stable revision and its step, from our status
// when it can be trusted and from the ReplicaSets and their durable record (the stable label,
// docs/design.md: The durable record) when it cannot (lost, garbled, copied in, or renumbered by
// a rollback).

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegray/kubectl-gray/pkg/deployutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
	"github.com/kubegray/kubectl-gray/pkg/rollout"
)

// identifyFacts is what identify decides from.
type identifyFacts struct {
	// Prev is the status read; HasPrev: it names a rollout, and one the sync trusts.
	Prev    grayapi.Status
	HasPrev bool
	// Points are the hold points of kubegray.io/percent.
	Points     []int32
	Deployment *appsv1.Deployment
	NewRS      *appsv1.ReplicaSet
	OldRSs     []*appsv1.ReplicaSet
	// Now stamps a hold that identify re-derives.
	Now metav1.Time
}

// Identity is what identify decided: which rollout is in flight, where it stands, and how it
// stands with our hold.
type Identity struct {
	Status grayapi.Status
	// NewRollout: the revision in flight changed in this sync, so a hold recorded before is
	// another rollout's.
	NewRollout bool
	// RederivedHold: the status was missing or untrusted, and our hold was recognised from
	// spec.paused and the new ReplicaSet standing at a hold point's target.
	RederivedHold bool
	// RollingBack is the GrayRolledBack event's message when the stable revision came back in
	// this sync.
	RollingBack string
}

// HeldByUs reports whether the rollout in flight is held by us: heldAt recorded for this
// revision (whether still paused or just unpaused by the same write that asked to resume), or
// our hold re-derived.
func (id Identity) HeldByUs(prev grayapi.Status, hasPrev bool) bool {
	return (hasPrev && prev.HeldAt != nil && !id.NewRollout) || id.RederivedHold
}

// identify works out which rollout is in flight and where it stands (revision, stable revision,
// step). A revision other than the recorded one is a new rollout: it starts at the first hold
// point, unless the stable ReplicaSet is coming back (rollback: every hold point is skipped) or
// there is nothing to canary against (no old replicas).
func identify(f identifyFacts) Identity {
	rev := RevisionInFlight(f.NewRS, f.OldRSs)
	stableRS := StableReplicaSet(deployutil.WithNewRS(f.OldRSs, f.NewRS))
	if f.HasPrev && f.Prev.Revision == rev {
		st := f.Prev
		st.Step = rollout.GrayContinuedStep(f.Points, f.Prev.Step, f.Prev.Percent)
		if stableRS != nil && stableRS != f.NewRS {
			// The durable record wins over a status that was edited or copied in.
			st.StableRevision = RevisionOf(stableRS)
		}
		return Identity{Status: st}
	}

	id := Identity{NewRollout: true}
	st := grayapi.Status{Mode: grayapi.ModeInstead, Revision: rev, Phase: grayapi.PhaseProgressing}
	oldActive := deployutil.GetReplicaCountForReplicaSets(f.OldRSs) > 0
	switch {
	case stableRS != nil && stableRS == f.NewRS:
		// The stable ReplicaSet serves the template again (a rollback), renumbered: its
		// revision before that is the stable one.
		st.StableRevision = deployutil.LastRevisionInHistory(f.NewRS, rev)
	case stableRS != nil:
		st.StableRevision = RevisionOf(stableRS)
	case f.HasPrev:
		// A rollout that completed made its revision the stable one.
		st.StableRevision = f.Prev.StableRevision
		if f.Prev.Phase == grayapi.PhaseComplete {
			st.StableRevision = f.Prev.Revision
		}
	case f.NewRS != nil && !oldActive:
		st.StableRevision = rev
	default:
		st.StableRevision = largestOldRevision(f.OldRSs)
	}

	last := int32(len(f.Points))
	switch {
	case (oldActive || f.HasPrev) && isStableComingBack(f.NewRS, st.StableRevision):
		// Before the no-old-replicas case: an undo of an aborted rollout finds the stable
		// revision at every replica already, and still records what it abandoned. With no old
		// replicas and no status, nothing is abandoned: a first revision is its own stable one,
		// and so is one found at rest with its status lost; neither is rolling back.
		st.Step = last
		// Said from the first write of the rollback on (the hold write comes before any resize).
		st.Phase = grayapi.PhaseRolledBack
		st.Message = fmt.Sprintf("rolling back to stable revision %d", st.StableRevision)
		why := ""
		if st.Failure = abandonedRollout(f.Prev, f.HasPrev, rev); st.Failure != nil {
			why = fmt.Sprintf(", revision %d abandoned: %s", st.Failure.RolledBackFrom, st.Failure.Message)
		}
		id.RollingBack = fmt.Sprintf("Rolling back to stable revision %d (replica set %s): hold points skipped%s",
			st.StableRevision, f.NewRS.Name, why)
	case !oldActive:
		st.Step = last
	case !f.HasPrev && f.NewRS != nil:
		// Annotated in the middle of a rollout, or the status was lost: hold at the first
		// point not yet passed rather than shrink the new ReplicaSet; a Deployment paused with
		// the new ReplicaSet standing at that point's target is our hold.
		replicas := *f.Deployment.Spec.Replicas
		st.Step = rollout.GrayFirstStepNotPassed(replicas, f.Points, *f.NewRS.Spec.Replicas)
		if f.Deployment.Spec.Paused && int(st.Step) < len(f.Points) &&
			*f.NewRS.Spec.Replicas == rollout.GrayTarget(replicas, f.Points[st.Step]) {
			heldAt := f.Now
			st.HeldAt = &heldAt
			id.NewRollout = false
			id.RederivedHold = true
		}
	}
	id.Status = st
	return id
}

// abandonedRollout is the Failure recorded when the stable revision comes back (kubectl gray
// undo, kubectl rollout undo, a revert in Git) while the rollout of another revision was in
// flight: that rollout's own failure when it had one, a rollback otherwise; nil when the status
// read names no rollout in flight (the stable revision just completed, or it was lost). rev is
// the revision in flight now.
func abandonedRollout(prev grayapi.Status, hasPrev bool, rev int64) *grayapi.Failure {
	if !hasPrev || prev.Phase == grayapi.PhaseComplete || prev.Phase == grayapi.PhaseRolledBack || prev.Revision == rev {
		return nil
	}
	if prev.Failure != nil && prev.Failure.RolledBackFrom == 0 {
		f := *prev.Failure
		f.RolledBackFrom = prev.Revision
		return &f
	}
	return &grayapi.Failure{Reason: grayapi.ReasonRolledBack, RolledBackFrom: prev.Revision,
		Message: fmt.Sprintf("revision %d was rolled back to stable revision %d at %d%% before it completed", prev.Revision, prev.StableRevision, prev.Percent)}
}

// isStableComingBack reports whether the new ReplicaSet is the stable one again: it carries
// the stable label, has the stable revision, or served it before a rollback re-used it.
func isStableComingBack(newRS *appsv1.ReplicaSet, stable int64) bool {
	if newRS == nil {
		return false
	}
	if newRS.Labels[grayapi.StableLabel] == grayapi.StableLabelValue {
		return true
	}
	if stable <= 0 {
		return false
	}
	rev, err := deployutil.Revision(newRS)
	return (err == nil && rev == stable) || deployutil.RevisionHistoryContains(newRS, stable)
}

// largestOldRevision guesses the stable revision of a Deployment seen for the first time: the
// revision of the old ReplicaSet with the most replicas (the higher revision on ties), or 0.
func largestOldRevision(oldRSs []*appsv1.ReplicaSet) int64 {
	var best *appsv1.ReplicaSet
	var bestRev int64
	for _, rs := range oldRSs {
		rev, err := deployutil.Revision(rs)
		if err != nil || *rs.Spec.Replicas == 0 {
			continue
		}
		if best == nil || *rs.Spec.Replicas > *best.Spec.Replicas || (*rs.Spec.Replicas == *best.Spec.Replicas && rev > bestRev) {
			best, bestRev = rs, rev
		}
	}
	return bestRev
}
