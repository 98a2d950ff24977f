package deployment

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubegray/kubectl-gray/pkg/deployutil"
)

// rolloutRecreate performs one step of a Recreate rollout: scale every old ReplicaSet to 0,
// wait until none of their pods runs any more, then create (or scale) the new ReplicaSet to R.
func (dc *DeploymentController) rolloutRecreate(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet, podMap map[types.UID][]*corev1.Pod) error {
	// No create yet: new pods must not start before the old ones are gone.
	newRS, oldRSs, err := dc.getAllReplicaSetsAndSyncRevision(ctx, d, rsList, false)
	if err != nil {
		return err
	}
	allRSs := deployutil.WithNewRS(oldRSs, newRS)
	activeOldRSs := deployutil.FilterActiveReplicaSets(oldRSs)

	scaledDown, err := dc.scaleDownOldReplicaSetsForRecreate(ctx, activeOldRSs, d)
	if err != nil {
		return err
	}
	if scaledDown {
		return dc.syncRolloutStatus(ctx, allRSs, newRS, d, true)
	}

	// Pod deletions requeue Recreate Deployments, so waiting here needs no timer.
	if oldPodsRunning(newRS, oldRSs, podMap) {
		return dc.syncRolloutStatus(ctx, allRSs, newRS, d, false)
	}

	if newRS == nil {
		newRS, oldRSs, err = dc.getAllReplicaSetsAndSyncRevision(ctx, d, rsList, true)
		if err != nil {
			return err
		}
		allRSs = deployutil.WithNewRS(oldRSs, newRS)
	}

	scaledUp, err := dc.scaleUpNewReplicaSetForRecreate(ctx, newRS, d)
	if err != nil {
		return err
	}

	if deployutil.DeploymentComplete(d, &d.Status) {
		if err := dc.CleanupDeployment(ctx, oldRSs, d); err != nil {
			return err
		}
	}
	return dc.syncRolloutStatus(ctx, allRSs, newRS, d, scaledUp)
}

// scaleDownOldReplicaSetsForRecreate scales every given ReplicaSet to 0, swapping the written
// objects into oldRSs, and reports whether any was scaled.
func (dc *DeploymentController) scaleDownOldReplicaSetsForRecreate(ctx context.Context, oldRSs []*appsv1.ReplicaSet, d *appsv1.Deployment) (bool, error) {
	scaled := false
	for i, rs := range oldRSs {
		if *rs.Spec.Replicas == 0 {
			continue
		}
		scaledRS, updatedRS, err := dc.ScaleReplicaSet(ctx, rs, 0, d, false)
		if err != nil {
			return false, err
		}
		if scaledRS {
			oldRSs[i] = updatedRS
			scaled = true
		}
	}
	return scaled, nil
}

// oldPodsRunning reports whether an old ReplicaSet still has pods: a non-zero status.replicas,
// or any pod of a ReplicaSet other than the new one that is not Failed or Succeeded (Unknown and
// terminating-but-running pods count, since they may still be running).
func oldPodsRunning(newRS *appsv1.ReplicaSet, oldRSs []*appsv1.ReplicaSet, podMap map[types.UID][]*corev1.Pod) bool {
	if deployutil.GetActualReplicaCountForReplicaSets(oldRSs) > 0 {
		return true
	}
	for rsUID, pods := range podMap {
		if newRS != nil && newRS.UID == rsUID {
			continue
		}
		for _, pod := range pods {
			switch pod.Status.Phase {
			case corev1.PodFailed, corev1.PodSucceeded:
				continue
			default:
				return true
			}
		}
	}
	return false
}

// scaleUpNewReplicaSetForRecreate scales the new ReplicaSet to R.
func (dc *DeploymentController) scaleUpNewReplicaSetForRecreate(ctx context.Context, newRS *appsv1.ReplicaSet, d *appsv1.Deployment) (bool, error) {
	scaled, _, err := dc.ScaleReplicaSet(ctx, newRS, *d.Spec.Replicas, d, false)
	return scaled, err
}
