package graysync

// Which rollout is in flight (controller/gray: Identify), and whether the status read can be
// trusted to say so (controller/gray: TrustStatus).

import (
	"context"

	"github.com/kubegray/kubectl-gray/controller/gray"

	"k8s.io/klog/v2"
)

// distrustCopiedStatus revises the status read by gray.TrustStatus before any decision reads
// it: a status copied in is dropped, one the rollout in flight was renumbered under takes its
// new number.
func (g *graySync) distrustCopiedStatus(ctx context.Context) {
	rev := g.newRevision()
	switch gray.TrustStatus(gray.TrustFacts{Prev: g.in.prev, HasPrev: g.in.hasPrev, Generation: g.cur.d.Generation,
		NewRS: g.cur.newRS, OldRSs: g.cur.oldRSs, Cached: g.in.rsList}) {
	case gray.StatusRenumbered:
		klog.FromContext(ctx).V(2).Info("The rollout in flight was renumbered", "deployment", klog.KObj(g.cur.d),
			"statusRevision", g.in.prev.Revision, "revision", rev)
		g.in.prev.Revision = rev
	case gray.StatusCopied:
		klog.FromContext(ctx).V(2).Info("Ignoring a gray status of another revision: the rollout in flight has not changed",
			"deployment", klog.KObj(g.cur.d), "statusRevision", g.in.prev.Revision, "revision", rev)
		g.in.hasPrev = false
	}
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
