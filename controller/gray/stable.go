package gray

// The stable revision's ReplicaSet: what an undo and an abort go back to, and what a rollout
// that lost it can no longer go back to.

import (
	appsv1 "k8s.io/api/apps/v1"

	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// StableToGoBackTo is the old ReplicaSet an abort sizes back and an undo writes back: the one
// carrying the stable label, or
// the one of revision stableRevision; never the failing new one (it is not among oldRSs).
func StableToGoBackTo(oldRSs []*appsv1.ReplicaSet, stableRevision int64) *appsv1.ReplicaSet {
	if rs := StableReplicaSet(oldRSs); rs != nil {
		return rs
	}
	for _, rs := range oldRSs {
		if stableRevision > 0 && RevisionOf(rs) == stableRevision {
			return rs
		}
	}
	return nil
}

// StableGone reports whether st, a rollout not at its last of steps hold points, has lost the
// ReplicaSet of its stable revision (deleted by hand, or by a revisionHistoryLimit while it had
// no replicas). Nothing is left to go back to, and no other old ReplicaSet stands in for it: old
// ReplicaSets then never grow (plan.go: keepOldFromGrowing), so that a scale or a broken cap
// cannot revive an abandoned canary.
func StableGone(st grayapi.Status, steps int, newRS *appsv1.ReplicaSet, oldRSs []*appsv1.ReplicaSet) bool {
	stable := st.StableRevision
	if stable <= 0 || int(st.Step) >= steps || newRS == nil || IsRevisionOf(newRS, stable) {
		return false
	}
	for _, rs := range oldRSs {
		if IsRevisionOf(rs, stable) || rs.Labels[grayapi.StableLabel] == grayapi.StableLabelValue {
			return false
		}
	}
	return true
}
