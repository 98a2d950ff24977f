package gray

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/kubegray/kubectl-gray/pkg/deployutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// TestTrustStatus pins which statuses naming another revision than the one in flight are
// dropped as copies. web is at generation 2; revision 1 is the stable one.
func TestTrustStatus(t *testing.T) {
	// had is rs that had the revisions history before it was renumbered to its own.
	had := func(rs *appsv1.ReplicaSet, history string) *appsv1.ReplicaSet {
		rs.Annotations[deployutil.RevisionHistoryAnnotation] = history
		return rs
	}
	old := []*appsv1.ReplicaSet{planRS(1, 8, 8, 10)}
	canary := planRS(3, 2, 2, 10)
	tests := []struct {
		name string
		f    trustFacts
		want Trust
	}{{
		name: "no status read: nothing to drop",
		f:    trustFacts{Generation: 2, NewRS: canary, OldRSs: old, Cached: []*appsv1.ReplicaSet{canary, old[0]}},
	}, {
		name: "the status of the rollout in flight is kept",
		f: trustFacts{HasPrev: true, Prev: grayapi.Status{Revision: 3, StableRevision: 1, ObservedGeneration: 2}, Generation: 2,
			NewRS: canary, OldRSs: old, Cached: []*appsv1.ReplicaSet{canary, old[0]}},
	}, {
		name: "revision 2's status on revision 3, in flight before this sync, was copied in",
		f: trustFacts{HasPrev: true, Prev: grayapi.Status{Revision: 2, StableRevision: 1, ObservedGeneration: 1}, Generation: 2,
			NewRS: canary, OldRSs: old, Cached: []*appsv1.ReplicaSet{canary, old[0]}},
		want: StatusCopied,
	}, {
		name: "revision 2's status with revision 3 created in this sync is the previous rollout's, kept",
		f: trustFacts{HasPrev: true, Prev: grayapi.Status{Revision: 2, StableRevision: 1, ObservedGeneration: 1}, Generation: 2,
			NewRS: canary, OldRSs: old, Cached: old},
	}, {
		name: "revision 3's status on the same ReplicaSet renumbered 5, the Deployment unchanged: renumbered",
		f: trustFacts{HasPrev: true, Prev: grayapi.Status{Revision: 3, StableRevision: 1, ObservedGeneration: 2}, Generation: 2,
			NewRS: had(planRS(5, 2, 2, 10), "3"), OldRSs: old, Cached: []*appsv1.ReplicaSet{had(planRS(5, 2, 2, 10), "3"), old[0]}},
		want: StatusRenumbered,
	}, {
		name: "the same renumbering after the Deployment changed is a copy",
		f: trustFacts{HasPrev: true, Prev: grayapi.Status{Revision: 3, StableRevision: 1, ObservedGeneration: 1}, Generation: 2,
			NewRS: had(planRS(5, 2, 2, 10), "3"), OldRSs: old, Cached: []*appsv1.ReplicaSet{had(planRS(5, 2, 2, 10), "3"), old[0]}},
		want: StatusCopied,
	}, {
		name: "a rollback: stable revision 1 back as 4, revision 3's status kept",
		f: trustFacts{HasPrev: true, Prev: grayapi.Status{Revision: 3, StableRevision: 1, ObservedGeneration: 1}, Generation: 2,
			NewRS: had(planRS(4, 10, 8, 10), "1"), OldRSs: []*appsv1.ReplicaSet{canary},
			Cached: []*appsv1.ReplicaSet{had(planRS(4, 10, 8, 10), "1"), canary}},
	}, {
		name: "a copy of a ReplicaSet's own earlier revision (1, stable 1) on revision 4 is no rollback",
		f: trustFacts{HasPrev: true, Prev: grayapi.Status{Revision: 1, StableRevision: 1, ObservedGeneration: 1}, Generation: 2,
			NewRS: had(planRS(4, 10, 10, 10), "1"), OldRSs: []*appsv1.ReplicaSet{canary},
			Cached: []*appsv1.ReplicaSet{had(planRS(4, 10, 10, 10), "1"), canary}},
		want: StatusCopied,
	}, {
		name: "no new ReplicaSet yet: kept until there is one",
		f: trustFacts{HasPrev: true, Prev: grayapi.Status{Revision: 2, StableRevision: 1, ObservedGeneration: 1}, Generation: 2,
			OldRSs: old, Cached: old},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := trustStatus(tt.f); got != tt.want {
				t.Errorf("trustStatus = %d, want %d", got, tt.want)
			}
		})
	}
}
