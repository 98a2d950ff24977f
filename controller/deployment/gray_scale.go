package deployment

// Sizing and writing the ReplicaSets of a gray sync: a scaling event keeps the share, broken
// caps are restored, otherwise one capped rolling step; the writes are ordered so that neither
// the recorded target nor, in alongside mode, the built-in controller's paused sync can undo
// them (docs/design.md: alongside mode).

import (
	"context"
	"fmt"
	"sort"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	written, err := g.mode().persistStatus(ctx, g.dc, g.d)
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
	scaled, err := g.reconcileOnce(ctx)
	if !g.replanAfterResize(err) {
		return scaled, err
	}
	// In alongside mode the built-in controller resized a ReplicaSet between our read and our
	// write: plan again at once from what the server has (alongside_writers.go).
	if refreshErr := g.refreshReplicaSets(ctx); refreshErr != nil {
		return scaled, fmt.Errorf("%w (and reading its replica sets again: %w)", err, refreshErr)
	}
	again, err := g.reconcileOnce(ctx)
	return scaled || again, err
}

// reconcileOnce is one plan and its writes, over the ReplicaSets this sync holds.
func (g *graySync) reconcileOnce(ctx context.Context) (bool, error) {
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
			newReplicaSetOptions{create: true, maxReplicas: &target, deferStatus: true, freeze: g.view != nil})
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
// lowered, or the built-in controller resized a ReplicaSet in alongside mode), and they come
// back within maxSurge and maxUnavailable, counting only availability the ReplicaSet statuses
// vouch for (grayReplicaSet).
func (g *graySync) restore(ctx context.Context) (bool, error) {
	d := g.d
	old := g.oldKeepOrder()
	if g.view != nil && g.builtInTookHoldApart() {
		if err := g.unsaturate(ctx); err != nil {
			return false, err
		}
		newSize, oldSizes := rollout.GrayRestoreAtOnce(*d.Spec.Replicas, g.st.Target, *g.newRS.Spec.Replicas, specsOf(old))
		klog.FromContext(ctx).V(2).Info("Restoring the hold the built-in controller resized", "deployment", klog.KObj(d),
			"target", g.st.Target, "newReplicas", newSize, "oldReplicas", oldSizes)
		return g.apply(ctx, newSize, old, oldSizes, false)
	}
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

// unsaturate stops the built-in controller from seeing a saturated new ReplicaSet before the
// hold is restored. Its paused sync scales every old ReplicaSet to 0 next to a new one whose
// spec, desired-replicas annotation and availability all equal spec.replicas (upstream
// sync.go: scale, IsSaturated), and scales a lone active ReplicaSet to spec.replicas: once it
// has made the canary the whole Deployment, growing the old ReplicaSet back first is undone at
// once, and shrinking the canary first leaves it lone. Recording the hold target as the
// canary's desired replicas first breaks the saturation; the restore's own write of the canary
// sets the annotation right again, and a sync that stops in between sees a scaling event and
// resizes to the hold all the same.
func (g *graySync) unsaturate(ctx context.Context) error {
	replicas := *g.d.Spec.Replicas
	desired, ok := deployutil.GetDesiredReplicasAnnotation(ctx, g.newRS)
	if *g.newRS.Spec.Replicas != replicas || !ok || desired != replicas || replicas == g.st.Target {
		return nil
	}
	update := func(from *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error) {
		rs := from.DeepCopy()
		rs.Annotations[deployutil.DesiredReplicasAnnotation] = strconv.Itoa(int(g.st.Target))
		return g.dc.client.AppsV1().ReplicaSets(rs.Namespace).Update(ctx, rs, metav1.UpdateOptions{FieldManager: g.dc.fieldManager})
	}
	rs := g.newRS
	written, err := update(rs)
	if apierrors.IsConflict(err) {
		var live *appsv1.ReplicaSet
		if live, err = g.unresizedLive(ctx, rs, err); err == nil {
			written, err = update(live)
		}
	}
	if err != nil {
		return fmt.Errorf("deployment %s/%s: marking replica set %s unsaturated before restoring the hold: %w", g.d.Namespace, g.d.Name, rs.Name, err)
	}
	g.newRS = written
	return nil
}

// builtInTookHoldApart reports whether the caps broke because another writer (in alongside
// mode, the built-in controller's paused sync) resized a ReplicaSet, in one of the two shapes
// its paused sync leaves: the canary above its target, last resized by a field manager other
// than ours; or, next to a canary at spec.replicas, the old ReplicaSets below their floor with
// one of them last resized by another. Old ReplicaSets below their floor next to a smaller
// canary are a lowered hold point (the built-in controller may have written an old
// ReplicaSet's size long before), restored within maxSurge and maxUnavailable.
func (g *graySync) builtInTookHoldApart() bool {
	if *g.newRS.Spec.Replicas > g.st.Target && g.dc.resizedByOther(g.newRS) {
		return true
	}
	if *g.newRS.Spec.Replicas != *g.d.Spec.Replicas ||
		deployutil.GetReplicaCountForReplicaSets(g.oldRSs) >= *g.d.Spec.Replicas-g.st.Target {
		return false
	}
	for _, rs := range g.oldRSs {
		if g.dc.resizedByOther(rs) {
			return true
		}
	}
	return false
}

// resizedByOther reports whether rs's spec.replicas was last written by a field manager
// other than ours.
func (dc *DeploymentController) resizedByOther(rs *appsv1.ReplicaSet) bool {
	owner := deployutil.FieldOwner(rs.ManagedFields, "f:spec", "f:replicas")
	return owner != "" && owner != dc.fieldManager
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

// apply writes the new ReplicaSet first and then the old ones in the given order (in alongside
// mode, in the order and with the adjustment writeOrder decides), stopping at the first error.
// With force, every ReplicaSet that was active also gets its desired- and max-replicas
// annotations refreshed (the end of a scaling event).
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
		if apierrors.IsConflict(err) && g.view != nil {
			scaled, written, err = g.rescaleAfterConflict(ctx, rs, size, force, err)
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
	for _, w := range g.mode().writeOrder(ctx, g, newSize, old, oldSizes) {
		if w.New {
			written, err := write(g.newRS, w.Size)
			if err != nil {
				return scaledAny, err
			}
			g.newRS = written
			continue
		}
		rs := old[w.Old]
		written, err := write(rs, w.Size)
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
