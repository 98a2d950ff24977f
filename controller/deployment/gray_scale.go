package deployment

// Sizing and writing the ReplicaSets of a gray sync: a scaling event keeps the share, broken
// caps are restored, otherwise one capped rolling step; the status that raises a target is
// written before the ReplicaSet writes that use it.

import (
	"context"
	"fmt"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"

	"github.com/kubegray/kubectl-gray/pkg/deployutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
	"github.com/kubegray/kubectl-gray/pkg/rollout"
)

// prepare puts the status that covers this sync's ReplicaSet writes on the server before the
// first of them, so that a target never rises on a ReplicaSet before it does on the
// Deployment. It writes only when revision, step, target or stable revision changed.
func (g *graySync) prepare(ctx context.Context) error {
	if g.prepared {
		return nil
	}
	g.prepared = true
	if g.hasStored && g.stored.Revision == g.st.Revision && g.stored.Step == g.st.Step &&
		g.stored.Target == g.st.Target && g.stored.StableRevision == g.st.StableRevision {
		return nil
	}
	if g.st.Phase == grayapi.PhaseHeld {
		// The target moved (a scaling event, say): whatever was held is not settled for it
		// yet, and a Held written here would be taken back by finish.
		g.st.Phase = grayapi.PhaseProgressing
		g.st.Message = fmt.Sprintf("resizing revision %d to its hold target %d of %d replicas (%d%%)",
			g.st.Revision, g.st.Target, *g.d.Spec.Replicas, g.st.Percent)
	}
	if err := g.setStatusAnnotation(g.d); err != nil {
		return err
	}
	written, err := g.mode.persistStatus(ctx, g.dc, g.d)
	if err != nil {
		return fmt.Errorf("deployment %s/%s: recording gray target %d before scaling: %w", g.d.Namespace, g.d.Name, g.st.Target, err)
	}
	g.adopt(written)
	g.stored, g.hasStored = g.st, true
	return nil
}

// reconcileReplicaSets performs this sync's ReplicaSet writes and reports whether any size
// changed: a scaling event keeps the share (GrayScaleSizes); caps broken by edited hold points
// are restored as a rolling update moves (PlanGrayRestore); the user's own pause stops the rollout as upstream's does;
// otherwise one capped rolling step (PlanGrayStep), which while held only converges the old
// ReplicaSets (the new one is at its target and never topped up).
func (g *graySync) reconcileReplicaSets(ctx context.Context) (bool, error) {
	d := g.d
	replicas := *d.Spec.Replicas
	_, minOld := rollout.GrayCaps(replicas, g.st.Target)
	held := d.Spec.Paused && g.st.HeldAt != nil
	switch {
	case replicasChanged(ctx, d, withNewRS(g.oldRSs, g.newRS)):
		return g.rescale(ctx, held)
	case g.newRS != nil && (*g.newRS.Spec.Replicas > g.st.Target || deployutil.GetReplicaCountForReplicaSets(g.oldRSs) < minOld):
		return g.restore(ctx)
	case d.Spec.Paused && !held:
		return false, nil
	}
	if g.newRS == nil {
		if err := g.prepare(ctx); err != nil {
			return false, err
		}
		target := g.st.Target
		newRS, err := g.dc.getNewReplicaSetWith(ctx, d, g.rsList, g.oldRSs,
			newReplicaSetOptions{create: true, maxReplicas: &target, deferStatus: true, freeze: g.mode.createsFrozen()})
		if err != nil {
			return false, err
		}
		if newRS != nil {
			g.dc.rsExpectations.wrote(g.key, newRS)
		}
		g.newRS = newRS
	}
	return g.rollStep(ctx)
}

// rescale applies GrayScaleSizes for a changed spec.replicas, refreshing the desired- and
// max-replicas annotations of every active ReplicaSet like upstream's scale() does.
func (g *graySync) rescale(ctx context.Context, held bool) (bool, error) {
	d := g.d
	old := g.oldKeepOrder()
	in := rollout.GrayScaleInput{
		Replicas: *d.Spec.Replicas, Target: g.st.Target, Held: held, HasNew: g.newRS != nil,
		Old: specsOf(old),
	}
	if g.newRS != nil {
		in.NewSpec = *g.newRS.Spec.Replicas
		in.ProportionalNew = in.NewSpec
		for _, step := range deployutil.ScalePlan(ctx, d, g.newRS, g.oldRSs) {
			if step.ReplicaSet == g.newRS {
				in.ProportionalNew = step.Size
			}
		}
	}
	newSize, oldSizes := rollout.GrayScaleSizes(in)
	klog.FromContext(ctx).V(2).Info("Scaling gray deployment", "deployment", klog.KObj(d), "replicas", in.Replicas,
		"target", g.st.Target, "held", held, "newReplicas", newSize, "oldReplicas", oldSizes)
	return g.apply(ctx, newSize, old, oldSizes, true)
}

// restore applies PlanGrayRestore: the caps broke without a scaling event (the hold point was
// lowered), and they come back within maxSurge and maxUnavailable, counting only availability
// the ReplicaSet statuses vouch for (grayReplicaSet).
func (g *graySync) restore(ctx context.Context) (bool, error) {
	d := g.d
	old := g.oldKeepOrder()
	newRS := grayReplicaSet(g.newRS)
	in := rollout.GrayRestoreInput{
		Replicas: *d.Spec.Replicas, Surge: deployutil.MaxSurge(*d), Unavailable: deployutil.MaxUnavailable(*d),
		Target: g.st.Target, NewSpec: newRS.Spec, Available: newRS.Available, Old: specsOf(old),
	}
	if statusObserved(g.newRS) {
		in.NewUnavailable = newRS.Spec - max(newRS.Ready, newRS.Available)
	}
	for _, rs := range old {
		in.Available += grayReplicaSet(rs).Available
	}
	newSize, oldSizes := rollout.PlanGrayRestore(in)
	klog.FromContext(ctx).V(2).Info("Restoring gray caps", "deployment", klog.KObj(d), "target", g.st.Target,
		"newReplicas", newSize, "oldReplicas", oldSizes)
	return g.apply(ctx, newSize, old, oldSizes, false)
}

// grayReplicaSet is what PlanGrayStep sees of rs. Its availability is only
// trusted once the ReplicaSet controller has observed its latest spec: right
// after a resize the status still counts pods being deleted (or not yet
// created), and trusting it would let a step remove old replicas that are not
// really there (upstream has this race; a gray rollout promises availability).
// A stale status counts as nothing available, which only delays scale-downs
// until the ReplicaSet controller's next status write, itself a sync trigger.
// Even a current status counts at most spec.replicas.
func grayReplicaSet(rs *appsv1.ReplicaSet) rollout.GrayReplicaSet {
	available := min(rs.Status.AvailableReplicas, *rs.Spec.Replicas)
	ready := min(rs.Status.ReadyReplicas, *rs.Spec.Replicas)
	if !statusObserved(rs) {
		available, ready = 0, 0
	}
	return rollout.GrayReplicaSet{Spec: *rs.Spec.Replicas, Available: available, Ready: ready}
}

// rollStep applies one PlanGrayStep: the new ReplicaSet grows, or else old ReplicaSets shrink,
// abandoned canaries first and the stable ReplicaSet last.
func (g *graySync) rollStep(ctx context.Context) (bool, error) {
	d := g.d
	old := g.oldScaleDownOrder()
	in := rollout.GrayStepInput{
		Replicas:    *d.Spec.Replicas,
		Surge:       deployutil.MaxSurge(*d),
		Unavailable: deployutil.MaxUnavailable(*d),
		Target:      g.st.Target,
		New:         grayReplicaSet(g.newRS),
		Old:         make([]rollout.GrayReplicaSet, len(old)),
	}
	for i, rs := range old {
		in.Old[i] = grayReplicaSet(rs)
	}
	plan := rollout.PlanGrayStep(in)
	return g.apply(ctx, plan.New, old, plan.Old, false)
}

// apply writes the new ReplicaSet first and then the old ones in the given order, as upstream
// does, stopping at the first error. With force, every ReplicaSet that was active also gets
// its desired- and max-replicas annotations refreshed (the end of a scaling event).
func (g *graySync) apply(ctx context.Context, newSize int32, old []*appsv1.ReplicaSet, oldSizes []int32, force bool) (bool, error) {
	g.keepOldFromGrowing(old, oldSizes)
	scaledAny := false
	write := func(rs *appsv1.ReplicaSet, size int32) (*appsv1.ReplicaSet, error) {
		if size == *rs.Spec.Replicas && !(force && *rs.Spec.Replicas > 0) {
			return rs, nil
		}
		if err := g.prepare(ctx); err != nil {
			return nil, err
		}
		scaled, written, err := g.dc.scaleReplicaSet(ctx, rs, size, g.d, force)
		if apierrors.IsConflict(err) {
			scaled, written, err = g.mode.retryConflict(ctx, g, rs, size, force, err)
		}
		if err != nil {
			return nil, err
		}
		if scaled {
			g.dc.rsExpectations.wrote(g.key, written)
		}
		scaledAny = scaledAny || scaled
		return written, nil
	}
	if g.newRS != nil {
		written, err := write(g.newRS, newSize)
		if err != nil {
			return scaledAny, err
		}
		g.newRS = written
	}
	for i, rs := range old {
		written, err := write(rs, oldSizes[i])
		if err != nil {
			return scaledAny, err
		}
		g.replaceOld(rs, written)
	}
	return scaledAny, nil
}

// replaceOld swaps a written old ReplicaSet into oldRSs so the status sees its new spec.
func (g *graySync) replaceOld(before, after *appsv1.ReplicaSet) {
	for i, rs := range g.oldRSs {
		if rs == before {
			g.oldRSs[i] = after
			return
		}
	}
}

// isStable reports whether rs is the stable ReplicaSet of the rollout in flight.
func (g *graySync) isStable(rs *appsv1.ReplicaSet) bool {
	rev, err := deployutil.Revision(rs)
	return err == nil && g.st.StableRevision > 0 && rev == g.st.StableRevision
}

// oldScaleDownOrder lists the old ReplicaSets in the order a rollout shrinks them: abandoned
// canaries (every non-stable old ReplicaSet) oldest first, then the stable one.
func (g *graySync) oldScaleDownOrder() []*appsv1.ReplicaSet {
	stable, canaries := g.splitStable()
	sort.Sort(deployutil.ReplicaSetsByCreationTimestamp(canaries))
	return append(canaries, stable...)
}

// oldKeepOrder lists the old ReplicaSets in the order SpreadOld favours on ties: the stable
// one first, then the others newest first.
func (g *graySync) oldKeepOrder() []*appsv1.ReplicaSet {
	stable, others := g.splitStable()
	deployutil.SortNewestFirst(others)
	return append(stable, others...)
}

// splitStable separates the stable ReplicaSet from the other old ones, in new slices.
func (g *graySync) splitStable() (stable, others []*appsv1.ReplicaSet) {
	for _, rs := range g.oldRSs {
		if g.isStable(rs) {
			stable = append(stable, rs)
		} else {
			others = append(others, rs)
		}
	}
	return stable, others
}

func specsOf(rss []*appsv1.ReplicaSet) []int32 {
	out := make([]int32, len(rss))
	for i, rs := range rss {
		out[i] = *rs.Spec.Replicas
	}
	return out
}
