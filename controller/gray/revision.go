package gray

// Revisions of ReplicaSets as a gray rollout counts them: the one in flight, the stable one the
// durable record names, and a revision a rollback renumbered.

import (
	appsv1 "k8s.io/api/apps/v1"

	"github.com/kubegray/kubectl-gray/pkg/deployutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// RevisionInFlight is the revision the new ReplicaSet has once the sync has made it current:
// one above the old ReplicaSets' (a ReplicaSet that was old and serves the template again is
// renumbered so), or its own when that is higher; with no new ReplicaSet, the one it will be
// created with. Old revisions 1 and 3 give 4 for none or a new one at 2, and 5 for one at 5.
func RevisionInFlight(newRS *appsv1.ReplicaSet, oldRSs []*appsv1.ReplicaSet) int64 {
	next := deployutil.MaxRevision(oldRSs) + 1
	if newRS != nil {
		if rev, err := deployutil.Revision(newRS); err == nil && rev > next {
			return rev
		}
	}
	return next
}

// StableReplicaSet returns the ReplicaSet carrying the stable label, the one of the highest
// revision if several do (a mark moved by a sync that failed half-way), or nil.
func StableReplicaSet(rsList []*appsv1.ReplicaSet) *appsv1.ReplicaSet {
	var found *appsv1.ReplicaSet
	var foundRev int64
	for _, rs := range rsList {
		if rs.Labels[grayapi.StableLabel] != grayapi.StableLabelValue {
			continue
		}
		rev, err := deployutil.Revision(rs)
		if err != nil {
			continue
		}
		if found == nil || rev > foundRev {
			found, foundRev = rs, rev
		}
	}
	return found
}

// RevisionOf is rs's revision, 0 when unreadable.
func RevisionOf(rs *appsv1.ReplicaSet) int64 {
	rev, _ := deployutil.Revision(rs)
	return rev
}

// IsRevisionOf reports whether rs has the revision rev, or had it before a rollback renumbered it.
func IsRevisionOf(rs *appsv1.ReplicaSet, rev int64) bool {
	return RevisionOf(rs) == rev || deployutil.RevisionHistoryContains(rs, rev)
}
