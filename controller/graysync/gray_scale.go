package graysync

// Writing the ReplicaSets of a gray sync as controller/gray decided them (planSizes);
// the status that raises a target is written before the ReplicaSet writes that use it.

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"

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
	if err := g.setStatusAnnotation(g.cur.d); err != nil {
		return err
	}
	written, err := g.mode.persistStatus(ctx, g.gs, g.cur.server, g.cur.d)
	if err != nil {
		return fmt.Errorf("deployment %s/%s: recording gray target %d before scaling: %w", g.cur.d.Namespace, g.cur.d.Name, g.st.Target, err)
	}
	if written != nil {
		g.adopt(written)
	}
	return nil
}

// reconcileReplicaSets performs this sync's ReplicaSet writes as m planned them, and reports
// whether any size changed. A new ReplicaSet is created first when there is none, at the size m
// planned; when the server already had it (a create our cache had not seen yet) at another
// size, the roll planned for the size m created is not written and the sync looks again.
func (g *graySync) reconcileReplicaSets(ctx context.Context, m gray.Move) (gray.Move, bool, error) {
	switch plan := m.Sizes; plan.Kind {
	case gray.SizesKept:
		return m, false, nil
	case gray.SizesCreateFirst:
		if err := g.persistTargetFirst(ctx); err != nil {
			return m, false, err
		}
		newRS, err := g.createNewReplicaSet(ctx, plan.Created)
		if err != nil {
			return m, false, err
		}
		g.gs.rsExpectations.wrote(g.in.key, newRS)
		g.cur.newRS = newRS
		if *newRS.Spec.Replicas != plan.Created {
			g.gs.port.EnqueueAfter(g.cur.d, 0)
			m.Sizes, m.PauseAfter = gray.SizePlan{Kind: gray.SizesKept}, false
			return m, false, nil
		}
	case gray.SizesScaled:
		klog.FromContext(ctx).V(2).Info("Scaling gray deployment", "deployment", klog.KObj(g.cur.d), "replicas", *g.cur.d.Spec.Replicas,
			"target", g.st.Target, "held", g.cur.d.Spec.Paused && g.st.HeldAt != nil, "newReplicas", plan.NewSize, "oldReplicas", plan.OldSizes)
	case gray.SizesRestored:
		klog.FromContext(ctx).V(2).Info("Restoring gray caps", "deployment", klog.KObj(g.cur.d), "target", g.st.Target,
			"newReplicas", plan.NewSize, "oldReplicas", plan.OldSizes)
	}
	scaled, err := g.apply(ctx, m.Sizes)
	return m, scaled, err
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
			scaled, written, err = g.mode.retryConflict(ctx, g, rs, size, force, err)
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
