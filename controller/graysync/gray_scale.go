package graysync

// Writing the ReplicaSets of a gray sync as controller/gray decided them (planSizes);
// the status that raises a target is written before the ReplicaSet writes that use it.

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kubegray/kubectl-gray/controller/gray"
	"github.com/kubegray/kubectl-gray/pkg/deployutil"
)

// persistTargetFirst puts the status that covers this sync's ReplicaSet writes on the server before the
// first of them, so that a target never rises on a ReplicaSet before it does on the
// Deployment. It writes only when revision, step, target or stable revision differ from the
// status on the server, so once per sync at most.
func (g *graySync) persistTargetFirst(ctx context.Context) error {
	if stored, ok := g.statusOnServer(); ok && stored.Revision == g.st.Revision && stored.Step == g.st.Step &&
		stored.Target == g.st.Target && stored.StableRevision == g.st.StableRevision {
		return nil
	}
	g.st = gray.Retargeted(g.st, *g.cur.d.Spec.Replicas)
	if err := g.setStatusAnnotation(ctx, g.cur.d); err != nil {
		return err
	}
	written, err := g.mode.persistStatus(ctx, g.cur.server, g.cur.d)
	if err != nil {
		return fmt.Errorf("deployment %s/%s: recording gray target %d before scaling: %w", g.cur.d.Namespace, g.cur.d.Name, g.st.Target, err)
	}
	if written != nil {
		g.adopt(written)
	}
	return nil
}

// findNewReplicaSet is the new ReplicaSet of upstream's getNewReplicaSet as a gray sync reads it,
// never created here: its revision and annotations synced (deployment.DeploymentController's
// SyncNewReplicaSet), and what that changes of the Deployment's status kept in cur.d for the
// sync's own status write. nil: the template has no ReplicaSet yet.
func (g *graySync) findNewReplicaSet(ctx context.Context) (*appsv1.ReplicaSet, error) {
	existing := deployutil.FindNewReplicaSet(g.cur.d, g.in.rsList)
	if existing == nil {
		return nil, nil
	}
	rs, _, err := g.gs.port.SyncNewReplicaSet(ctx, g.cur.d, existing, g.cur.oldRSs)
	return rs, err
}

// createNewReplicaSet creates the template's ReplicaSet as upstream does, but at size (the
// plan's, never above the target) and with the mode's labels, so that the canary never exceeds
// its target, not even at creation.
func (g *graySync) createNewReplicaSet(ctx context.Context, size int32) (*appsv1.ReplicaSet, error) {
	d, port := g.cur.d, g.gs.port
	newRS, err := port.NewReplicaSet(d, g.cur.oldRSs)
	if err != nil {
		return nil, err
	}
	*newRS.Spec.Replicas = size
	newRS.Labels = g.mode.newReplicaSetLabels(newRS.Labels)
	created, _, err := port.CreateNewReplicaSet(ctx, d, newRS, g.cur.oldRSs)
	return created, err
}

// apply writes plan: the new ReplicaSet first and then the old ones in the plan's order, as
// upstream does, stopping at the first error.
func (g *graySync) apply(ctx context.Context, plan gray.SizePlan) (bool, error) {
	force := plan.Force
	scaledAny := false
	write := func(rs *appsv1.ReplicaSet, size int32) (*appsv1.ReplicaSet, error) {
		if size == *rs.Spec.Replicas && !(force && *rs.Spec.Replicas > 0) {
			return rs, nil
		}
		if err := g.persistTargetFirst(ctx); err != nil {
			return nil, err
		}
		scaled, written, err := g.gs.port.ScaleReplicaSet(ctx, rs, size, g.cur.d, force)
		if apierrors.IsConflict(err) {
			var live *appsv1.ReplicaSet
			if live, err = g.mode.liveForResize(ctx, rs, err); err == nil {
				scaled, written, err = g.gs.port.ScaleReplicaSet(ctx, live, size, g.cur.d, force)
			}
		}
		if err != nil {
			return nil, err
		}
		if scaled {
			g.gs.rsExpectations.wrote(g.in.key, written)
		}
		scaledAny = scaledAny || scaled
		return written, nil
	}
	if g.cur.newRS != nil {
		written, err := write(g.cur.newRS, plan.NewSize)
		if err != nil {
			return scaledAny, err
		}
		g.cur.newRS = written
	}
	for i, rs := range plan.Old {
		written, err := write(rs, plan.OldSizes[i])
		if err != nil {
			return scaledAny, err
		}
		g.replaceOld(rs, written)
	}
	return scaledAny, nil
}

// replaceOld swaps a written old ReplicaSet into oldRSs so the status sees its new spec.
func (g *graySync) replaceOld(before, after *appsv1.ReplicaSet) {
	for i, rs := range g.cur.oldRSs {
		if rs == before {
			g.cur.oldRSs[i] = after
			return
		}
	}
}
