package deployutil

import (
	"context"
	"fmt"
	"sort"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kubegray/kubectl-gray/pkg/rollout"
)

// replicas returns d.spec.replicas. The API server always defaults it, so a
// nil only shows up in hand-built objects; it is read as the API default 1
// instead of panicking.
func replicas(d *appsv1.Deployment) int32 {
	if d.Spec.Replicas == nil {
		return 1
	}
	return *d.Spec.Replicas
}

// rsReplicas returns rs.spec.replicas with the same defaulting as replicas.
func rsReplicas(rs *appsv1.ReplicaSet) int32 {
	if rs.Spec.Replicas == nil {
		return 1
	}
	return *rs.Spec.Replicas
}

// fenceposts returns the raw maxSurge/maxUnavailable of a rolling Deployment
// (nil for both when the rollingUpdate block is absent).
func fenceposts(d *appsv1.Deployment) (maxSurge, maxUnavailable *intstr.IntOrString) {
	if ru := d.Spec.Strategy.RollingUpdate; ru != nil {
		return ru.MaxSurge, ru.MaxUnavailable
	}
	return nil, nil
}

// IsRollingUpdate reports whether d uses the RollingUpdate strategy.
func IsRollingUpdate(d *appsv1.Deployment) bool {
	return d.Spec.Strategy.Type == appsv1.RollingUpdateDeploymentStrategyType
}

// MaxUnavailable returns how many replicas a rolling update may take down:
// 0 unless RollingUpdate, 0 when R = 0, otherwise the resolved
// maxUnavailable (rollout.ResolveFenceposts) clamped to R. Malformed values
// (prevented by validation) count as 0.
//
//	R=10, maxUnavailable 5 → 5;  25% → 2;  20 → 10 (clamped);  R=0 → 0
func MaxUnavailable(d appsv1.Deployment) int32 {
	r := replicas(&d)
	if !IsRollingUpdate(&d) || r == 0 {
		return 0
	}
	surge, unavailable := fenceposts(&d)
	_, u, _ := rollout.ResolveFenceposts(surge, unavailable, r)
	return min(u, r)
}

// MaxSurge returns the resolved maxSurge of a rolling Deployment, else 0.
// Malformed values (prevented by validation) count as 0.
//
//	R=10, 25% → 3 (rounds up);  R=20, 25% → 5;  Recreate → 0
func MaxSurge(d appsv1.Deployment) int32 {
	if !IsRollingUpdate(&d) {
		return 0
	}
	surge, unavailable := fenceposts(&d)
	s, _, _ := rollout.ResolveFenceposts(surge, unavailable, replicas(&d))
	return s
}

// GetReplicaCountForReplicaSets sums spec.replicas (nil entries skipped).
func GetReplicaCountForReplicaSets(rss []*appsv1.ReplicaSet) int32 {
	return sumReplicaSets(rss, rsReplicas)
}

// GetActualReplicaCountForReplicaSets sums status.replicas.
func GetActualReplicaCountForReplicaSets(rss []*appsv1.ReplicaSet) int32 {
	return sumReplicaSets(rss, func(rs *appsv1.ReplicaSet) int32 { return rs.Status.Replicas })
}

// GetReadyReplicaCountForReplicaSets sums status.readyReplicas.
func GetReadyReplicaCountForReplicaSets(rss []*appsv1.ReplicaSet) int32 {
	return sumReplicaSets(rss, func(rs *appsv1.ReplicaSet) int32 { return rs.Status.ReadyReplicas })
}

// GetAvailableReplicaCountForReplicaSets sums status.availableReplicas.
func GetAvailableReplicaCountForReplicaSets(rss []*appsv1.ReplicaSet) int32 {
	return sumReplicaSets(rss, func(rs *appsv1.ReplicaSet) int32 { return rs.Status.AvailableReplicas })
}

// sumReplicaSets adds up one count over the non-nil ReplicaSets.
func sumReplicaSets(rss []*appsv1.ReplicaSet, count func(*appsv1.ReplicaSet) int32) int32 {
	var total int32
	for _, rs := range rss {
		if rs != nil {
			total += count(rs)
		}
	}
	return total
}

// GetTerminatingReplicaCountForReplicaSets sums status.terminatingReplicas.
// A ReplicaSet the ReplicaSet controller never synced (observedGeneration 0)
// without the field counts as 0; any other ReplicaSet without it makes the
// sum unknown (nil), because that controller does not report it.
func GetTerminatingReplicaCountForReplicaSets(rss []*appsv1.ReplicaSet) *int32 {
	var total int32
	for _, rs := range rss {
		switch {
		case rs == nil:
		case rs.Status.TerminatingReplicas == nil && rs.Status.ObservedGeneration == 0:
		case rs.Status.TerminatingReplicas == nil:
			return nil
		default:
			total += *rs.Status.TerminatingReplicas
		}
	}
	return &total
}

// NewRSNewReplicas returns the size the new ReplicaSet should be scaled to:
// R for Recreate; for RollingUpdate rollout.NewReplicasForRolling with
// maxSurge scaled up against R (the both-zero fencepost rule does not apply
// here) and the spec sum of allRSs, which must include newRS.
//
//	R=1, surge 1, new 5 (all 5)  → 5 (already ≥ R+surge)
//	R=6, surge 10, new 2 (all 2) → 2 + min(16−2, 6−2) = 6
func NewRSNewReplicas(d *appsv1.Deployment, allRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) (int32, error) {
	r := replicas(d)
	switch d.Spec.Strategy.Type {
	case appsv1.RollingUpdateDeploymentStrategyType:
		maxSurge, _ := fenceposts(d)
		surge, err := intstr.GetScaledValueFromIntOrPercent(maxSurge, int(r), true)
		if err != nil {
			return 0, fmt.Errorf("deployment %s/%s: maxSurge: %w", d.Namespace, d.Name, err)
		}
		return rollout.NewReplicasForRolling(r, int32(surge), rsReplicas(newRS), GetReplicaCountForReplicaSets(allRSs)), nil
	case appsv1.RecreateDeploymentStrategyType:
		return r, nil
	default:
		return 0, fmt.Errorf("deployment %s/%s: deployment type %q isn't supported", d.Namespace, d.Name, d.Spec.Strategy.Type)
	}
}

// saturationDesired reads the desired-replicas annotation of rs with
// strconv.Atoi as upstream IsSaturated does (so "+5" counts).
func saturationDesired(rs *appsv1.ReplicaSet) (int32, bool) {
	n, err := strconv.Atoi(rs.Annotations[DesiredReplicasAnnotation])
	if err != nil {
		return 0, false
	}
	return int32(n), true
}

// ReplicaSetScale is one ReplicaSet write of a scaling pass.
type ReplicaSetScale struct {
	ReplicaSet *appsv1.ReplicaSet
	// Size is the new spec.replicas.
	Size int32
	// Force is upstream scaleReplicaSet's forceUpdate: write even when the
	// size is unchanged if the desired-/max-replicas annotations are stale.
	Force bool
}

// ScalePlan returns the ReplicaSet writes of upstream scale() for d (paused
// Deployments and scaling events), in the order they must be issued; the
// controller stops at the first failed write. It is rollout.PlanScale fed
// from the objects, so the worked tables of package rollout cover it.
// Neither the Deployment nor the ReplicaSets are modified.
func ScalePlan(ctx context.Context, d *appsv1.Deployment, newRS *appsv1.ReplicaSet, oldRSs []*appsv1.ReplicaSet) []ReplicaSetScale {
	all := make([]*appsv1.ReplicaSet, 0, len(oldRSs)+1)
	for _, rs := range oldRSs {
		if rs != nil {
			all = append(all, rs)
		}
	}
	if newRS != nil {
		all = append(all, newRS)
	}
	sort.Sort(ReplicaSetsByCreationTimestamp(all))

	in := rollout.ScaleInput{
		Desired:        replicas(d),
		MaxSurge:       MaxSurge(*d),
		RollingUpdate:  IsRollingUpdate(d),
		StatusReplicas: d.Status.Replicas,
		ReplicaSets:    make([]rollout.ScaleReplicaSet, len(all)),
		NewIndex:       -1,
	}
	for i, rs := range all {
		if rs == newRS {
			in.NewIndex = i
		}
		desired, hasDesired := saturationDesired(rs)
		annotatedMax, hasMax := GetMaxReplicasAnnotation(ctx, rs)
		in.ReplicaSets[i] = rollout.ScaleReplicaSet{
			Spec:       rsReplicas(rs),
			Available:  rs.Status.AvailableReplicas,
			Desired:    desired,
			HasDesired: hasDesired,
			Max:        annotatedMax,
			HasMax:     hasMax,
		}
	}

	steps := rollout.PlanScale(in)
	out := make([]ReplicaSetScale, len(steps))
	for i, s := range steps {
		out[i] = ReplicaSetScale{ReplicaSet: all[s.Index], Size: s.Size, Force: s.Force}
	}
	return out
}
