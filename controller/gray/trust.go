package gray

// Whether the status read belongs to the rollout in flight. A status can name another revision
// because it was copied in (`kubectl rollout undo` from a ReplicaSet the built-in controller
// annotated, a GitOps tool, a hand edit), or because the rollout it describes was renumbered
// under it; only a copy is dropped (docs/design.md: The durable record).

import (
	appsv1 "k8s.io/api/apps/v1"

	"github.com/kubegray/kubectl-gray/pkg/deployutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// Trust is what trustStatus found; the zero value is a status taken as it is.
type Trust int

const (
	// StatusRenumbered: the status is the rollout in flight's under its old number; every
	// comparison with it uses the new one.
	StatusRenumbered Trust = iota + 1
	// StatusCopied: the status names a revision no template change explains; the rollout is
	// identified from the ReplicaSets and the durable record instead.
	StatusCopied
)

// trustFacts is what trustStatus decides from.
type trustFacts struct {
	// Prev is the status read; HasPrev: it names a rollout.
	Prev    grayapi.Status
	HasPrev bool
	// Generation is the Deployment's.
	Generation int64
	// NewRS and OldRSs are as this sync found them (NewRS renumbered, if it served the template
	// again); Cached are the ReplicaSets as the sync read them, before that.
	NewRS  *appsv1.ReplicaSet
	OldRSs []*appsv1.ReplicaSet
	Cached []*appsv1.ReplicaSet
}

// trustStatus decides whether a status naming another revision than the one in flight is kept.
// It is a copy when the new ReplicaSet was already in flight under its revision before this
// sync (nothing changed the template since). Two look-alikes are not copies:
//
//   - the rollout renumbered under its own status: the Deployment has not changed since the
//     status was written and the new ReplicaSet had the status's revision (alongside mode: the
//     built-in controller's revision bookkeeping, a cache behind our rollback write, numbers the
//     failed canary above the stable one and then the stable one above it again);
//   - a rollback: the new ReplicaSet is the status's stable revision, renumbered, and not the
//     revision the status was rolling out.
func trustStatus(f trustFacts) Trust {
	rev := RevisionInFlight(f.NewRS, f.OldRSs)
	if !f.HasPrev || f.Prev.Revision == rev || f.NewRS == nil {
		return 0
	}
	if f.Prev.ObservedGeneration == f.Generation && deployutil.RevisionHistoryContains(f.NewRS, f.Prev.Revision) {
		return StatusRenumbered
	}
	stable := f.Prev.StableRevision
	if stable > 0 && stable != f.Prev.Revision && deployutil.RevisionHistoryContains(f.NewRS, stable) && !IsRevisionOf(f.NewRS, f.Prev.Revision) {
		return 0
	}
	for _, rs := range f.Cached {
		if rs.UID == f.NewRS.UID && RevisionOf(rs) == rev {
			return StatusCopied
		}
	}
	return 0
}
