package gray

import (
	"context"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegray/kubectl-gray/pkg/deployutil"
	"github.com/kubegray/kubectl-gray/pkg/rollout"
)

// SizeFacts is what planSizes decides from: the Deployment as the sync sees it (through the
// mode's view), its ReplicaSets as read, and where the rollout stands.
type SizeFacts struct {
	Deployment *appsv1.Deployment
	NewRS      *appsv1.ReplicaSet // nil until it is created
	OldRSs     []*appsv1.ReplicaSet
	// target is the new ReplicaSet's target for the current step and replica count.
	Target int32
	// stableRevision orders the old ReplicaSets: the stable one shrinks last and keeps the most.
	StableRevision int64
	// held: our hold stands (spec.paused with heldAt recorded); scaling: spec.replicas changed
	// (ReplicasChanged).
	Held, Scaling bool
	// stableGone: the stable ReplicaSet is gone, and no old ReplicaSet may grow (stableGone).
	StableGone bool
}

// SizeKind says which rule sized the ReplicaSets.
type SizeKind int

// SizePlan is a sync's ReplicaSet writes: the new ReplicaSet's size first (its creation at
// Created first when there is none), then the old ReplicaSets' in the order they are written.
type SizePlan struct {
	Kind SizeKind
	// Created is the size the canary's ReplicaSet is created with (SizesCreateFirst).
	Created  int32
	NewSize  int32
	Old      []*appsv1.ReplicaSet
	OldSizes []int32
	// force: every active ReplicaSet also gets its desired- and max-replicas annotations
	// refreshed, as at the end of upstream's scale().
	Force bool
}

// resizes reports whether the plan gives the ReplicaSets sizes (NewSize, OldSizes) to write.
func (p SizePlan) resizes() bool {
	return p.Kind == SizesCreateFirst || p.Kind == SizesScaled || p.Kind == SizesRestored || p.Kind == SizesRolled
}

// planSizes decides a gray sync's ReplicaSet writes. A scaling event keeps the share; caps
// broken by edited hold points are restored; the user's own pause writes nothing; otherwise one
// roll, which while held only converges the old ReplicaSets (the new one is at
// its target and never topped up). While the stable ReplicaSet is gone no old one grows.
// Neither the facts nor the objects in them are modified.
func planSizes(ctx context.Context, f SizeFacts) SizePlan {
	_, minOld := rollout.GrayCaps(*f.Deployment.Spec.Replicas, f.Target)
	var plan SizePlan
	switch {
	case f.Scaling:
		plan = planRescale(ctx, f)
	case f.NewRS != nil && (*f.NewRS.Spec.Replicas > f.Target || deployutil.GetReplicaCountForReplicaSets(f.OldRSs) < minOld):
		plan = planRestore(f)
	case f.Deployment.Spec.Paused && !f.Held:
		return SizePlan{Kind: SizesKept}
	case f.NewRS == nil:
		return planCreate(f)
	default:
		plan = planRoll(f)
	}
	return keepOldFromGrowing(f, plan)
}

// keepOldFromGrowing caps the planned size of every old ReplicaSet at its current one while the
// stable ReplicaSet is gone (see stableGone).
func keepOldFromGrowing(f SizeFacts, plan SizePlan) SizePlan {
	if f.StableGone {
		for i, rs := range plan.Old {
			plan.OldSizes[i] = min(plan.OldSizes[i], *rs.Spec.Replicas)
		}
	}
	return plan
}

// planCreate plans the canary's creation and the roll after it, as upstream plans a rolling step
// in the sync that creates its new ReplicaSet: the canary starts at upstream's size for a new
// ReplicaSet (NewReplicasForRolling), capped at the target, and the roll is planned with it as
// the server will make it (generation 1, its status not yet observed). Web at 20% of 10 with
// maxSurge 25% and 10 old replicas creates its canary at 2, and the roll shrinks no old
// ReplicaSet yet: nothing new is available. A roll never grows an old ReplicaSet, so a gone
// stable ReplicaSet changes nothing here.
func planCreate(f SizeFacts) SizePlan {
	d := f.Deployment
	created := min(rollout.NewReplicasForRolling(*d.Spec.Replicas, deployutil.MaxSurge(*d), 0,
		deployutil.GetReplicaCountForReplicaSets(f.OldRSs)), f.Target)
	f.NewRS = &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Generation: 1}, Spec: appsv1.ReplicaSetSpec{Replicas: &created}}
	plan := planRoll(f)
	plan.Kind, plan.Created = SizesCreateFirst, created
	return plan
}

// planRescale is GrayScaleSizes for a changed spec.replicas.
func planRescale(ctx context.Context, f SizeFacts) SizePlan {
	old := oldKeepOrder(f.OldRSs, f.StableRevision)
	in := rollout.GrayScaleInput{
		Replicas: *f.Deployment.Spec.Replicas, Target: f.Target, Held: f.Held, HasNew: f.NewRS != nil,
		Old: specsOf(old),
	}
	if f.NewRS != nil {
		in.NewSpec = *f.NewRS.Spec.Replicas
		in.ProportionalNew = in.NewSpec
		for _, step := range deployutil.ScalePlan(ctx, f.Deployment, f.NewRS, f.OldRSs) {
			if step.ReplicaSet == f.NewRS {
				in.ProportionalNew = step.Size
			}
		}
	}
	newSize, oldSizes := rollout.GrayScaleSizes(in)
	return SizePlan{Kind: SizesScaled, NewSize: newSize, Old: old, OldSizes: oldSizes, Force: true}
}

// planRestore is PlanGrayRestore, counting only availability the ReplicaSet statuses vouch for
// (GrayReplicaSet).
func planRestore(f SizeFacts) SizePlan {
	old := oldKeepOrder(f.OldRSs, f.StableRevision)
	newRS := GrayReplicaSet(f.NewRS)
	in := rollout.GrayRestoreInput{
		Replicas: *f.Deployment.Spec.Replicas, Surge: deployutil.MaxSurge(*f.Deployment), Unavailable: deployutil.MaxUnavailable(*f.Deployment),
		Target: f.Target, NewSpec: newRS.Spec, Available: newRS.Available, Old: specsOf(old),
	}
	if deployutil.StatusObserved(f.NewRS) {
		in.NewUnavailable = newRS.Spec - max(newRS.Ready, newRS.Available)
	}
	for _, rs := range old {
		in.Available += GrayReplicaSet(rs).Available
	}
	newSize, oldSizes := rollout.PlanGrayRestore(in)
	return SizePlan{Kind: SizesRestored, NewSize: newSize, Old: old, OldSizes: oldSizes}
}

// planRoll is one roll (PlanGrayStep): the new ReplicaSet grows, or else old ReplicaSets shrink,
// abandoned canaries first and the stable ReplicaSet last. It needs the new ReplicaSet.
func planRoll(f SizeFacts) SizePlan {
	old := oldScaleDownOrder(f.OldRSs, f.StableRevision)
	in := rollout.GrayStepInput{
		Replicas:    *f.Deployment.Spec.Replicas,
		Surge:       deployutil.MaxSurge(*f.Deployment),
		Unavailable: deployutil.MaxUnavailable(*f.Deployment),
		Target:      f.Target,
		New:         GrayReplicaSet(f.NewRS),
		Old:         make([]rollout.GrayReplicaSet, len(old)),
	}
	for i, rs := range old {
		in.Old[i] = GrayReplicaSet(rs)
	}
	sizes := rollout.PlanGrayStep(in)
	return SizePlan{Kind: SizesRolled, NewSize: sizes.New, Old: old, OldSizes: sizes.Old}
}

// GrayReplicaSet is what PlanGrayStep sees of rs. Its availability is only
// trusted once the ReplicaSet controller has observed its latest spec: right
// after a resize the status still counts pods being deleted (or not yet
// created), and trusting it would let a step remove old replicas that are not
// really there (upstream has this race; a gray rollout promises availability).
// A stale status counts as nothing available, which only delays scale-downs
// until the ReplicaSet controller's next status write, itself a sync trigger.
// Even a current status counts at most spec.replicas.
func GrayReplicaSet(rs *appsv1.ReplicaSet) rollout.GrayReplicaSet {
	available := min(rs.Status.AvailableReplicas, *rs.Spec.Replicas)
	ready := min(rs.Status.ReadyReplicas, *rs.Spec.Replicas)
	observed := deployutil.StatusObserved(rs)
	if !observed {
		available, ready = 0, 0
	}
	return rollout.GrayReplicaSet{Spec: *rs.Spec.Replicas, Available: available, Ready: ready, Unobserved: !observed}
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

const (
	// SizesKept: the user's own pause stops the rollout, as upstream's does; nothing is written.
	SizesKept SizeKind = iota
	// SizesCreateFirst: there is no new ReplicaSet yet; it is created (within the target) and
	// the roll is planned with it (planCreate).
	SizesCreateFirst
	// SizesScaled: spec.replicas changed and every ReplicaSet keeps its share (GrayScaleSizes).
	SizesScaled
	// SizesRestored: the caps broke without a scaling event (a lowered hold point) and come
	// back within maxSurge and maxUnavailable (PlanGrayRestore).
	SizesRestored
	// SizesRolled: one roll, a capped increment of the rolling update (PlanGrayStep).
	SizesRolled
)
