package deployment

// Which rollout is in flight (controller/gray: Identify), and whether the status read can be
// trusted to say so.

import (
	"context"

	"github.com/kubegray/kubectl-gray/controller/gray"

	"k8s.io/klog/v2"

	"github.com/kubegray/kubectl-gray/pkg/deployutil"
)

// distrustCopiedStatus drops a status that names another revision than the one in flight
// although the new ReplicaSet was already in flight before this sync (its revision unchanged):
// no template change explains it, so it was copied in (`kubectl rollout undo` from a ReplicaSet
// the built-in controller annotated, a GitOps tool, a hand edit) and the rollout is
// re-identified from the ReplicaSets and the durable record instead (see gray_record.go).
//
// A rollback is not a copy, though it looks like one in alongside mode: the built-in
// controller renumbers the stable ReplicaSet as soon as the template goes back to it, before
// our next sync. Our own status then names the abandoned revision and, as its stable revision,
// one the new ReplicaSet had before the renumbering; a copy taken from a ReplicaSet names that
// ReplicaSet's own earlier revision instead. Nor is the status of the rollout in flight
// renumbered under it (renumberedSinceStatus): that status is taken as this revision's.
func (g *graySync) distrustCopiedStatus(ctx context.Context) {
	rev := g.newRevision()
	if !g.in.hasPrev || g.in.prev.Revision == rev || g.cur.newRS == nil {
		return
	}
	if g.renumberedSinceStatus() {
		klog.FromContext(ctx).V(2).Info("The rollout in flight was renumbered", "deployment", klog.KObj(g.cur.d),
			"statusRevision", g.in.prev.Revision, "revision", rev)
		// The status read is this rollout's, every comparison with it included.
		g.in.prev.Revision = rev
		return
	}
	if g.renumberedByRollback() {
		return
	}
	for _, rs := range g.in.rsList {
		if rs.UID == g.cur.newRS.UID && gray.RevisionOf(rs) == rev {
			klog.FromContext(ctx).V(2).Info("Ignoring a gray status of another revision: the rollout in flight has not changed",
				"deployment", klog.KObj(g.cur.d), "statusRevision", g.in.prev.Revision, "revision", rev)
			g.in.hasPrev = false
			return
		}
	}
}

// renumberedSinceStatus reports whether the new ReplicaSet is the one the status read was
// rolling out, under another number: the Deployment has not changed since that status was
// written, and the ReplicaSet had the status's revision before. In alongside mode the built-in
// controller's revision bookkeeping runs on its own caches; one behind our rollback write takes
// the failed canary for the new ReplicaSet and renumbers it above the stable one, and the next
// puts the stable one back on top, under a new number. The rollout is the same. Asked of a
// status read that names another revision than a new ReplicaSet's.
func (g *graySync) renumberedSinceStatus() bool {
	return g.in.prev.ObservedGeneration == g.cur.d.Generation && deployutil.RevisionHistoryContains(g.cur.newRS, g.in.prev.Revision)
}

// renumberedByRollback reports whether the new ReplicaSet is the stable one of the status read,
// renumbered by a rollback from the revision that status was rolling out.
func (g *graySync) renumberedByRollback() bool {
	stable := g.in.prev.StableRevision
	return stable > 0 && stable != g.in.prev.Revision && deployutil.RevisionHistoryContains(g.cur.newRS, stable) &&
		!gray.IsRevisionOf(g.cur.newRS, g.in.prev.Revision)
}

// newRevision is the revision of the rollout in flight (gray.RevisionInFlight).
func (g *graySync) newRevision() int64 {
	return gray.RevisionInFlight(g.cur.newRS, g.cur.oldRSs)
}

// identify asks gray.Identify which rollout is in flight and where it stands.
func (g *graySync) identify(ctx context.Context) gray.Identity {
	id := gray.Identify(gray.IdentifyFacts{Prev: g.in.prev, HasPrev: g.in.hasPrev, Points: g.in.points, Deployment: g.cur.d,
		NewRS: g.cur.newRS, OldRSs: g.cur.oldRSs, Now: g.in.metaNow()})
	if !g.in.hasPrev || g.in.prev.Revision != id.Status.Revision {
		klog.FromContext(ctx).V(2).Info("New gray rollout", "deployment", klog.KObj(g.cur.d), "revision", id.Status.Revision,
			"stableRevision", id.Status.StableRevision, "step", id.Status.Step)
	}
	return id
}
