package deployment

// Which rollout is in flight: its revision, its stable revision and its step, from our status
// when it can be trusted and from the ReplicaSets and their durable record (gray_record.go)
// when it cannot (lost, garbled, copied in, or renumbered by a rollback).

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/klog/v2"

	"github.com/kubegray/kubectl-gray/pkg/deployutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
	"github.com/kubegray/kubectl-gray/pkg/rollout"
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
		if rs.UID == g.cur.newRS.UID && revisionOf(rs) == rev {
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
		!isRevisionOf(g.cur.newRS, g.in.prev.Revision)
}

// newRevision is the revision of the rollout in flight: the new ReplicaSet's, or the one
// getNewReplicaSet will give it when it is created.
func (g *graySync) newRevision() int64 {
	return revisionInFlight(g.cur.newRS, g.cur.oldRSs)
}

// revisionInFlight is the revision the new ReplicaSet has once getNewReplicaSet has synced
// it: one above the old ReplicaSets' (a ReplicaSet that was old and serves the template again
// is renumbered so), or its own when that is higher; with no new ReplicaSet, the one it will
// be created with. Old revisions 1 and 3 give 4 for none or a new one at 2, and 5 for one at 5.
func revisionInFlight(newRS *appsv1.ReplicaSet, oldRSs []*appsv1.ReplicaSet) int64 {
	next := deployutil.MaxRevision(oldRSs) + 1
	if newRS != nil {
		if rev, err := deployutil.Revision(newRS); err == nil && rev > next {
			return rev
		}
	}
	return next
}

// rolloutIdentity is what identify decided: which rollout is in flight, where it stands, and
// how it stands with our hold.
type rolloutIdentity struct {
	st grayapi.Status
	// newRollout: the revision in flight changed in this sync, so a hold recorded before is
	// another rollout's.
	newRollout bool
	// rederivedHold: the status was missing or untrusted, and our hold was recognised from
	// spec.paused and the new ReplicaSet standing at a hold point's target.
	rederivedHold bool
	// rollingBack is the GrayRolledBack event's message when the stable revision came back in
	// this sync.
	rollingBack string
}

// heldByUs reports whether the rollout in flight is held by us: heldAt recorded for this
// revision (whether still paused or just unpaused by the same write that asked to resume), or
// our hold re-derived.
func (id rolloutIdentity) heldByUs(prev grayapi.Status, hasPrev bool) bool {
	return (hasPrev && prev.HeldAt != nil && !id.newRollout) || id.rederivedHold
}

// identify works out which rollout is in flight and where it stands (revision, stable
// revision, step). A revision other than the recorded one is a new rollout: it starts at the
// first hold point, unless the stable ReplicaSet is coming back (rollback: every hold point
// is skipped) or there is nothing to canary against (no old replicas). It only reads.
func (g *graySync) identify(ctx context.Context) rolloutIdentity {
	rev := g.newRevision()
	stableRS := stableReplicaSet(deployutil.WithNewRS(g.cur.oldRSs, g.cur.newRS))
	if g.in.hasPrev && g.in.prev.Revision == rev {
		st := g.in.prev
		st.Step = rollout.GrayContinuedStep(g.in.points, g.in.prev.Step, g.in.prev.Percent)
		if stableRS != nil && stableRS != g.cur.newRS {
			// The durable record wins over a status that was edited or copied in.
			st.StableRevision = revisionOf(stableRS)
		}
		return rolloutIdentity{st: st}
	}

	id := rolloutIdentity{newRollout: true}
	st := grayapi.Status{Mode: grayapi.ModeInstead, Revision: rev, Phase: grayapi.PhaseProgressing}
	oldActive := deployutil.GetReplicaCountForReplicaSets(g.cur.oldRSs) > 0
	switch {
	case stableRS != nil && stableRS == g.cur.newRS:
		// The stable ReplicaSet serves the template again (a rollback), renumbered: its
		// revision before that is the stable one.
		st.StableRevision = deployutil.LastRevisionInHistory(g.cur.newRS, rev)
	case stableRS != nil:
		st.StableRevision = revisionOf(stableRS)
	case g.in.hasPrev:
		// A rollout that completed made its revision the stable one.
		st.StableRevision = g.in.prev.StableRevision
		if g.in.prev.Phase == grayapi.PhaseComplete {
			st.StableRevision = g.in.prev.Revision
		}
	case g.cur.newRS != nil && !oldActive:
		st.StableRevision = rev
	default:
		st.StableRevision = largestOldRevision(g.cur.oldRSs)
	}

	last := int32(len(g.in.points))
	switch {
	case g.isStableComingBack(st.StableRevision):
		// Before the no-old-replicas case: an undo of an aborted rollout finds the stable
		// revision at every replica already, and still records what it abandoned.
		st.Step = last
		// Said from the first write of the rollback on (prepare writes before any resize).
		st.Phase = grayapi.PhaseRolledBack
		st.Message = fmt.Sprintf("rolling back to stable revision %d", st.StableRevision)
		why := ""
		if st.Failure = g.abandonedRollout(); st.Failure != nil {
			why = fmt.Sprintf(", revision %d abandoned: %s", st.Failure.RolledBackFrom, st.Failure.Message)
		}
		id.rollingBack = fmt.Sprintf("Rolling back to stable revision %d (replica set %s): hold points skipped%s",
			st.StableRevision, g.cur.newRS.Name, why)
	case !oldActive:
		st.Step = last
	case !g.in.hasPrev && g.cur.newRS != nil:
		// Annotated in the middle of a rollout, or the status was lost: hold at the first
		// point not yet passed rather than shrink the new ReplicaSet; a Deployment paused with
		// the new ReplicaSet standing at that point's target is our hold.
		st.Step = rollout.GrayFirstStepNotPassed(*g.cur.d.Spec.Replicas, g.in.points, *g.cur.newRS.Spec.Replicas)
		if g.cur.d.Spec.Paused && int(st.Step) < len(g.in.points) &&
			*g.cur.newRS.Spec.Replicas == rollout.GrayTarget(*g.cur.d.Spec.Replicas, g.in.points[st.Step]) {
			st.HeldAt = ptrTime(g.dc.metaNow())
			id.newRollout = false
			id.rederivedHold = true
		}
	}
	id.st = st
	klog.FromContext(ctx).V(2).Info("New gray rollout", "deployment", klog.KObj(g.cur.d), "revision", rev,
		"stableRevision", st.StableRevision, "step", st.Step)
	return id
}

// isStableComingBack reports whether the new ReplicaSet is the stable one again: it carries
// the stable label, has the stable revision, or served it before a rollback re-used it.
func (g *graySync) isStableComingBack(stable int64) bool {
	if g.cur.newRS == nil {
		return false
	}
	if g.cur.newRS.Labels[grayapi.StableLabel] == grayapi.StableLabelValue {
		return true
	}
	if stable <= 0 {
		return false
	}
	rev, err := deployutil.Revision(g.cur.newRS)
	return (err == nil && rev == stable) || deployutil.RevisionHistoryContains(g.cur.newRS, stable)
}

// revisionOf is rs's revision, 0 when unreadable.
func revisionOf(rs *appsv1.ReplicaSet) int64 {
	rev, _ := deployutil.Revision(rs)
	return rev
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
