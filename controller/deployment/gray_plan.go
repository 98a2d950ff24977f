package deployment

// What a gray sync writes to its ReplicaSets, decided before the first of those writes
// (planSizes) from what the sync read and nothing else; gray_scale.go writes the plan. The
// sizing arithmetic itself is pkg/rollout's (GrayScaleSizes, PlanGrayRestore, PlanGrayStep):
// this file picks which of them applies, feeds it from the objects and orders the old
// ReplicaSets the way it expects.

import (
	"context"
	"sort"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/kubegray/kubectl-gray/pkg/deployutil"
	"github.com/kubegray/kubectl-gray/pkg/rollout"
)

// sizeFacts is what planSizes decides from: the Deployment as the sync sees it (through the
// mode's view), its ReplicaSets as read, and where the rollout stands.
type sizeFacts struct {
	d      *appsv1.Deployment
	newRS  *appsv1.ReplicaSet // nil until it is created
	oldRSs []*appsv1.ReplicaSet
	// target is the new ReplicaSet's target for the current step and replica count.
	target int32
	// stableRevision orders the old ReplicaSets: the stable one shrinks last and keeps the most.
	stableRevision int64
	// held: our hold stands (spec.paused with heldAt recorded); scaling: spec.replicas changed
	// (replicasChanged).
	held, scaling bool
	// stableGone: the stable ReplicaSet is gone, and no old ReplicaSet may grow (stableGone).
	stableGone bool
}

// sizeKind says which rule sized the ReplicaSets.
type sizeKind int

const (
	// sizesKept: the user's own pause stops the rollout, as upstream's does; nothing is written.
	sizesKept sizeKind = iota
	// sizesCreateFirst: there is no new ReplicaSet yet; it is created (within the target) and
	// the step is planned with it (planFirstStep).
	sizesCreateFirst
	// sizesScaled: spec.replicas changed and every ReplicaSet keeps its share (GrayScaleSizes).
	sizesScaled
	// sizesRestored: the caps broke without a scaling event (a lowered hold point) and come
	// back within maxSurge and maxUnavailable (PlanGrayRestore).
	sizesRestored
	// sizesStepped: one capped rolling step (PlanGrayStep).
	sizesStepped
)

// sizePlan is a sync's ReplicaSet writes: the new ReplicaSet's size first, then the old
// ReplicaSets' in the order they are written.
type sizePlan struct {
	kind     sizeKind
	newSize  int32
	old      []*appsv1.ReplicaSet
	oldSizes []int32
	// force: every active ReplicaSet also gets its desired- and max-replicas annotations
	// refreshed, as at the end of upstream's scale().
	force bool
}

// planSizes decides a gray sync's ReplicaSet writes. A scaling event keeps the share; caps
// broken by edited hold points are restored; the user's own pause writes nothing; otherwise one
// capped rolling step, which while held only converges the old ReplicaSets (the new one is at
// its target and never topped up). While the stable ReplicaSet is gone no old one grows.
// Neither the facts nor the objects in them are modified.
func planSizes(ctx context.Context, f sizeFacts) sizePlan {
	_, minOld := rollout.GrayCaps(*f.d.Spec.Replicas, f.target)
	var plan sizePlan
	switch {
	case f.scaling:
		plan = planRescale(ctx, f)
	case f.newRS != nil && (*f.newRS.Spec.Replicas > f.target || deployutil.GetReplicaCountForReplicaSets(f.oldRSs) < minOld):
		plan = planRestore(f)
	case f.d.Spec.Paused && !f.held:
		return sizePlan{kind: sizesKept}
	case f.newRS == nil:
		return sizePlan{kind: sizesCreateFirst}
	default:
		plan = planStep(f)
	}
	return keepOldFromGrowing(f, plan)
}

// planFirstStep plans the step of a sync that has just created the new ReplicaSet (after
// sizesCreateFirst): always a rolling step, whatever the old ReplicaSets' sizes.
func planFirstStep(f sizeFacts) sizePlan {
	return keepOldFromGrowing(f, planStep(f))
}

// keepOldFromGrowing caps the planned size of every old ReplicaSet at its current one while the
// stable ReplicaSet is gone (see stableGone).
func keepOldFromGrowing(f sizeFacts, plan sizePlan) sizePlan {
	if f.stableGone {
		for i, rs := range plan.old {
			plan.oldSizes[i] = min(plan.oldSizes[i], *rs.Spec.Replicas)
		}
	}
	return plan
}

// planRescale is GrayScaleSizes for a changed spec.replicas.
func planRescale(ctx context.Context, f sizeFacts) sizePlan {
	old := oldKeepOrder(f.oldRSs, f.stableRevision)
	in := rollout.GrayScaleInput{
		Replicas: *f.d.Spec.Replicas, Target: f.target, Held: f.held, HasNew: f.newRS != nil,
		Old: specsOf(old),
	}
	if f.newRS != nil {
		in.NewSpec = *f.newRS.Spec.Replicas
		in.ProportionalNew = in.NewSpec
		for _, step := range deployutil.ScalePlan(ctx, f.d, f.newRS, f.oldRSs) {
			if step.ReplicaSet == f.newRS {
				in.ProportionalNew = step.Size
			}
		}
	}
	newSize, oldSizes := rollout.GrayScaleSizes(in)
	return sizePlan{kind: sizesScaled, newSize: newSize, old: old, oldSizes: oldSizes, force: true}
}

// planRestore is PlanGrayRestore, counting only availability the ReplicaSet statuses vouch for
// (grayReplicaSet).
func planRestore(f sizeFacts) sizePlan {
	old := oldKeepOrder(f.oldRSs, f.stableRevision)
	newRS := grayReplicaSet(f.newRS)
	in := rollout.GrayRestoreInput{
		Replicas: *f.d.Spec.Replicas, Surge: deployutil.MaxSurge(*f.d), Unavailable: deployutil.MaxUnavailable(*f.d),
		Target: f.target, NewSpec: newRS.Spec, Available: newRS.Available, Old: specsOf(old),
	}
	if statusObserved(f.newRS) {
		in.NewUnavailable = newRS.Spec - max(newRS.Ready, newRS.Available)
	}
	for _, rs := range old {
		in.Available += grayReplicaSet(rs).Available
	}
	newSize, oldSizes := rollout.PlanGrayRestore(in)
	return sizePlan{kind: sizesRestored, newSize: newSize, old: old, oldSizes: oldSizes}
}

// planStep is one PlanGrayStep: the new ReplicaSet grows, or else old ReplicaSets shrink,
// abandoned canaries first and the stable ReplicaSet last. It needs the new ReplicaSet.
func planStep(f sizeFacts) sizePlan {
	old := oldScaleDownOrder(f.oldRSs, f.stableRevision)
	in := rollout.GrayStepInput{
		Replicas:    *f.d.Spec.Replicas,
		Surge:       deployutil.MaxSurge(*f.d),
		Unavailable: deployutil.MaxUnavailable(*f.d),
		Target:      f.target,
		New:         grayReplicaSet(f.newRS),
		Old:         make([]rollout.GrayReplicaSet, len(old)),
	}
	for i, rs := range old {
		in.Old[i] = grayReplicaSet(rs)
	}
	step := rollout.PlanGrayStep(in)
	return sizePlan{kind: sizesStepped, newSize: step.New, old: old, oldSizes: step.Old}
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

// oldScaleDownOrder lists the old ReplicaSets in the order a rollout shrinks them: abandoned
// canaries (every non-stable old ReplicaSet) oldest first, then the stable one.
func oldScaleDownOrder(oldRSs []*appsv1.ReplicaSet, stableRevision int64) []*appsv1.ReplicaSet {
	stable, canaries := splitStable(oldRSs, stableRevision)
	sort.Sort(deployutil.ReplicaSetsByCreationTimestamp(canaries))
	return append(canaries, stable...)
}

// oldKeepOrder lists the old ReplicaSets in the order SpreadOld favours on ties: the stable
// one first, then the others newest first.
func oldKeepOrder(oldRSs []*appsv1.ReplicaSet, stableRevision int64) []*appsv1.ReplicaSet {
	stable, others := splitStable(oldRSs, stableRevision)
	deployutil.SortNewestFirst(others)
	return append(stable, others...)
}

// splitStable separates the ReplicaSet of the stable revision from the other old ones, in new
// slices.
func splitStable(oldRSs []*appsv1.ReplicaSet, stableRevision int64) (stable, others []*appsv1.ReplicaSet) {
	for _, rs := range oldRSs {
		rev, err := deployutil.Revision(rs)
		if err == nil && stableRevision > 0 && rev == stableRevision {
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
