package deployment

import (
	"context"
	"fmt"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/klog/v2"

	"github.com/kubegray/kubectl-gray/pkg/deployutil"
	"github.com/kubegray/kubectl-gray/pkg/rollout"
)

// rolloutRolling performs one step of a RollingUpdate rollout: create the new ReplicaSet if
// needed, scale it up within maxSurge, else scale old ReplicaSets down within maxUnavailable,
// else (rollout complete as of the status read at the start of the sync) trim history; then
// sync the status.
func (dc *DeploymentController) rolloutRolling(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) error {
	newRS, oldRSs, err := dc.getAllReplicaSetsAndSyncRevision(ctx, d, rsList, true)
	if err != nil {
		return err
	}
	allRSs := deployutil.WithNewRS(oldRSs, newRS)

	scaledUp, err := dc.reconcileNewReplicaSet(ctx, allRSs, newRS, d)
	if err != nil {
		return err
	}
	if scaledUp {
		return dc.syncRolloutStatus(ctx, allRSs, newRS, d, true)
	}

	scaledDown, err := dc.reconcileOldReplicaSets(ctx, allRSs, deployutil.FilterActiveReplicaSets(oldRSs), newRS, d)
	if err != nil {
		return err
	}
	if scaledDown {
		return dc.syncRolloutStatus(ctx, allRSs, newRS, d, true)
	}

	if deployutil.DeploymentComplete(d, &d.Status) {
		if err := dc.CleanupDeployment(ctx, oldRSs, d); err != nil {
			return err
		}
	}
	return dc.syncRolloutStatus(ctx, allRSs, newRS, d, false)
}

// reconcileNewReplicaSet scales the new ReplicaSet down to R if it is above, else up to
// newReplicaSetTargetForRolling. It reports whether the size changed.
func (dc *DeploymentController) reconcileNewReplicaSet(ctx context.Context, allRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment) (bool, error) {
	replicas := *d.Spec.Replicas
	if *newRS.Spec.Replicas == replicas {
		return false, nil
	}
	if *newRS.Spec.Replicas > replicas {
		scaled, _, err := dc.ScaleReplicaSet(ctx, newRS, replicas, d, false)
		return scaled, err
	}
	target, err := newReplicaSetTargetForRolling(d, allRSs, newRS)
	if err != nil {
		return false, err
	}
	scaled, _, err := dc.ScaleReplicaSet(ctx, newRS, target, d, false)
	return scaled, err
}

// newReplicaSetTargetForRolling is the size the new ReplicaSet may grow to in this step:
// new + min(R + surge − Σspec(all), R − new), unchanged when the total is already at R + surge.
// Example: R=10, surge 3, old 10, new 0 → 3; old 8, new 3 → 5.
func newReplicaSetTargetForRolling(d *appsv1.Deployment, allRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) (int32, error) {
	target, err := deployutil.NewRSNewReplicas(d, allRSs, newRS)
	if err != nil {
		return 0, fmt.Errorf("deployment %s/%s: sizing new replica set %s: %w", d.Namespace, d.Name, newRS.Name, err)
	}
	return target, nil
}

// reconcileOldReplicaSets scales old ReplicaSets down: first their unhealthy replicas (which
// cannot reduce availability), then healthy ones as far as minAvailable allows. oldRSs are the
// active old ReplicaSets. Errors in those two steps are swallowed, as upstream does: the step
// reports "not scaled" and the status sync still happens.
func (dc *DeploymentController) reconcileOldReplicaSets(ctx context.Context, allRSs []*appsv1.ReplicaSet, oldRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment) (bool, error) {
	logger := klog.FromContext(ctx)
	if deployutil.GetReplicaCountForReplicaSets(oldRSs) == 0 {
		return false, nil
	}
	logger.V(4).Info("New replica set", "replicaSet", klog.KObj(newRS), "availableReplicas", newRS.Status.AvailableReplicas)

	maxScaledDown := maxScaledDownForRolling(d, allRSs, newRS)
	if maxScaledDown <= 0 {
		return false, nil
	}

	// Unhealthy replicas first, otherwise they could block the rollout until it times out.
	oldRSs, cleanupCount, err := dc.cleanupUnhealthyReplicas(ctx, oldRSs, d, maxScaledDown)
	if err != nil {
		logger.V(2).Info("Failed to clean up unhealthy replicas", "deployment", klog.KObj(d), "err", err)
		return false, nil
	}
	logger.V(4).Info("Cleaned up unhealthy replicas from old RSes", "count", cleanupCount)

	allRSs = deployutil.WithNewRS(oldRSs, newRS)
	scaledDownCount, err := dc.scaleDownOldReplicaSetsForRollingUpdate(ctx, allRSs, oldRSs, d)
	if err != nil {
		logger.V(2).Info("Failed to scale down old replica sets", "deployment", klog.KObj(d), "err", err)
		return false, nil
	}
	logger.V(4).Info("Scaled down old RSes", "deployment", klog.KObj(d), "count", scaledDownCount)

	return cleanupCount+scaledDownCount > 0, nil
}

// maxScaledDownForRolling is how many old replicas may go in this step without the new
// ReplicaSet's unavailable pods pushing availability below R − maxUnavailable:
// Σspec(all) − (R − maxUnavailable) − (new.spec − new.available). Example: R=10, surge 3,
// unavailable 2, all 13, new 5 with 0 available → 13 − 8 − 5 = 0; rollover with a fresh new
// ReplicaSet of 0 → 13 − 8 − 0 = 5.
func maxScaledDownForRolling(d *appsv1.Deployment, allRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) int32 {
	allPods := deployutil.GetReplicaCountForReplicaSets(allRSs)
	minAvailable := *d.Spec.Replicas - deployutil.MaxUnavailable(*d)
	newUnavailable := *newRS.Spec.Replicas - newRS.Status.AvailableReplicas
	return rollout.MaxScaledDown(allPods, minAvailable, newUnavailable)
}

// cleanupUnhealthyReplicas scales old ReplicaSets (oldest first) down by their unavailable
// replicas, at most maxCleanupCount in total. The ReplicaSet controller deletes not-ready pods
// first, so this never lowers availability. It returns oldRSs with the written objects swapped
// in and the number of replicas removed.
func (dc *DeploymentController) cleanupUnhealthyReplicas(ctx context.Context, oldRSs []*appsv1.ReplicaSet, d *appsv1.Deployment, maxCleanupCount int32) ([]*appsv1.ReplicaSet, int32, error) {
	logger := klog.FromContext(ctx)
	sort.Sort(deployutil.ReplicaSetsByCreationTimestamp(oldRSs))

	totalScaledDown := int32(0)
	for i, targetRS := range oldRSs {
		if totalScaledDown >= maxCleanupCount {
			break
		}
		if *targetRS.Spec.Replicas == 0 {
			continue
		}
		logger.V(4).Info("Found available pods in old RS", "replicaSet", klog.KObj(targetRS), "availableReplicas", targetRS.Status.AvailableReplicas)
		if *targetRS.Spec.Replicas == targetRS.Status.AvailableReplicas {
			continue
		}

		scaledDownCount := min(maxCleanupCount-totalScaledDown, *targetRS.Spec.Replicas-targetRS.Status.AvailableReplicas)
		newReplicasCount := *targetRS.Spec.Replicas - scaledDownCount
		if newReplicasCount > *targetRS.Spec.Replicas {
			return nil, 0, fmt.Errorf("when cleaning up unhealthy replicas, got invalid request to scale down %s/%s %d -> %d", targetRS.Namespace, targetRS.Name, *targetRS.Spec.Replicas, newReplicasCount)
		}
		_, updatedOldRS, err := dc.ScaleReplicaSet(ctx, targetRS, newReplicasCount, d, false)
		if err != nil {
			return nil, totalScaledDown, err
		}
		totalScaledDown += scaledDownCount
		oldRSs[i] = updatedOldRS
	}
	return oldRSs, totalScaledDown, nil
}

// scaleDownOldReplicaSetsForRollingUpdate removes available old replicas (oldest ReplicaSet
// first) while total availability stays at or above R − maxUnavailable. Note the bound is
// availability, not maxScaledDown. It returns the number of replicas removed.
func (dc *DeploymentController) scaleDownOldReplicaSetsForRollingUpdate(ctx context.Context, allRSs []*appsv1.ReplicaSet, oldRSs []*appsv1.ReplicaSet, d *appsv1.Deployment) (int32, error) {
	logger := klog.FromContext(ctx)

	totalScaleDownCount := oldReplicaSetsScaleDownBudget(d, allRSs)
	if totalScaleDownCount <= 0 {
		return 0, nil
	}
	logger.V(4).Info("Found available pods in deployment, scaling down old RSes", "deployment", klog.KObj(d), "scaleDownBudget", totalScaleDownCount)

	sort.Sort(deployutil.ReplicaSetsByCreationTimestamp(oldRSs))

	totalScaledDown := int32(0)
	for _, targetRS := range oldRSs {
		if totalScaledDown >= totalScaleDownCount {
			break
		}
		if *targetRS.Spec.Replicas == 0 {
			continue
		}
		scaleDownCount := min(*targetRS.Spec.Replicas, totalScaleDownCount-totalScaledDown)
		newReplicasCount := *targetRS.Spec.Replicas - scaleDownCount
		if newReplicasCount > *targetRS.Spec.Replicas {
			return 0, fmt.Errorf("when scaling down old RS, got invalid request to scale down %s/%s %d -> %d", targetRS.Namespace, targetRS.Name, *targetRS.Spec.Replicas, newReplicasCount)
		}
		if _, _, err := dc.ScaleReplicaSet(ctx, targetRS, newReplicasCount, d, false); err != nil {
			return totalScaledDown, err
		}
		totalScaledDown += scaleDownCount
	}
	return totalScaledDown, nil
}

// oldReplicaSetsScaleDownBudget is how many available replicas exceed the minimum:
// Σavailable(all) − (R − maxUnavailable), ≤ 0 meaning none may go. Example: R=10, unavailable
// 2, 13 available → 5; 8 available → 0.
func oldReplicaSetsScaleDownBudget(d *appsv1.Deployment, allRSs []*appsv1.ReplicaSet) int32 {
	minAvailable := *d.Spec.Replicas - deployutil.MaxUnavailable(*d)
	return deployutil.GetAvailableReplicaCountForReplicaSets(allRSs) - minAvailable
}
