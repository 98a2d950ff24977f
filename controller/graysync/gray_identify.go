package graysync

// Saying what gray.Decide made of the status read (controller/gray: trustStatus, and a status
// someone else wrote: gray_forged.go) and of the rollout in flight (controller/gray: identify).

import (
	"context"

	"k8s.io/klog/v2"

	"github.com/kubegray/kubectl-gray/controller/gray"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// reportDistrust logs, and for a status someone else wrote warns, why the status read (read)
// was not taken as it is.
func (g *graySync) reportDistrust(ctx context.Context, why gray.Distrust, read grayapi.Status) error {
	log := klog.FromContext(ctx).V(2)
	rev := gray.RevisionInFlight(g.cur.newRS, g.cur.oldRSs)
	switch why {
	case gray.DistrustForeign:
		return g.warnForeignStatus(ctx, read.Revision)
	case gray.DistrustRenumbered:
		log.Info("The rollout in flight was renumbered", "deployment", klog.KObj(g.cur.d), "statusRevision", read.Revision, "revision", rev)
	case gray.DistrustCopied:
		log.Info("Ignoring a gray status of another revision: the rollout in flight has not changed",
			"deployment", klog.KObj(g.cur.d), "statusRevision", read.Revision, "revision", rev)
	}
	return nil
}

// logNewRollout logs a rollout in flight that the status read (read, hasRead) does not name.
func (g *graySync) logNewRollout(ctx context.Context, read grayapi.Status, hasRead bool) {
	if !hasRead || read.Revision != g.st.Revision {
		klog.FromContext(ctx).V(2).Info("New gray rollout", "deployment", klog.KObj(g.cur.d), "revision", g.st.Revision,
			"stableRevision", g.st.StableRevision, "step", g.st.Step)
	}
}
