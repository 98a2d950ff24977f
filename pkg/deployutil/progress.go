package deployutil

import (
	"context"
	"math"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/klog/v2"
)

// DeploymentComplete reports whether newStatus shows a finished rollout:
// updated = replicas = available = R and the current generation observed.
// Old pods still running (replicas > R) keep it incomplete.
func DeploymentComplete(d *appsv1.Deployment, newStatus *appsv1.DeploymentStatus) bool {
	r := replicas(d)
	return newStatus.UpdatedReplicas == r &&
		newStatus.Replicas == r &&
		newStatus.AvailableReplicas == r &&
		newStatus.ObservedGeneration >= d.Generation
}

// DeploymentProgressing reports whether newStatus shows progress compared
// with the Deployment's current status: more updated, ready or available
// replicas, or fewer old replicas (replicas − updated).
func DeploymentProgressing(d *appsv1.Deployment, newStatus *appsv1.DeploymentStatus) bool {
	old := d.Status
	return newStatus.UpdatedReplicas > old.UpdatedReplicas ||
		newStatus.Replicas-newStatus.UpdatedReplicas < old.Replicas-old.UpdatedReplicas ||
		newStatus.ReadyReplicas > old.ReadyReplicas ||
		newStatus.AvailableReplicas > old.AvailableReplicas
}

// DeploymentTimedOut reports whether the rollout exceeded its progress
// deadline as of now. Without a deadline or without a Progressing condition
// in newStatus there is no basis, so false; a completed rollout
// (NewReplicaSetAvailable) is never timed out; an existing
// ProgressDeadlineExceeded stays timed out; otherwise it is timed out when
// lastUpdateTime + progressDeadlineSeconds is strictly before now.
func DeploymentTimedOut(ctx context.Context, d *appsv1.Deployment, newStatus *appsv1.DeploymentStatus, now time.Time) bool {
	if !HasProgressDeadline(d) {
		return false
	}
	cond := GetDeploymentCondition(*newStatus, appsv1.DeploymentProgressing)
	if cond == nil {
		return false
	}
	switch cond.Reason {
	case NewRSAvailableReason:
		// A rollout that finished long ago must not be judged by the stale
		// timestamp while a new ReplicaSet's creation is still catching up.
		return false
	case TimedOutReason:
		return true
	}
	deadline := cond.LastUpdateTime.Add(time.Duration(*d.Spec.ProgressDeadlineSeconds) * time.Second)
	timedOut := deadline.Before(now)
	klog.FromContext(ctx).V(4).Info("Checked progress deadline", "deployment", klog.KObj(d), "timedOut", timedOut, "from", cond.LastUpdateTime, "now", now)
	return timedOut
}

// HasProgressDeadline reports whether progressDeadlineSeconds is set to a
// finite value (MaxInt32 means "no deadline").
func HasProgressDeadline(d *appsv1.Deployment) bool {
	return d.Spec.ProgressDeadlineSeconds != nil && *d.Spec.ProgressDeadlineSeconds != math.MaxInt32
}

// HasRevisionHistoryLimit reports whether old ReplicaSets are cleaned up:
// revisionHistoryLimit set and not MaxInt32 (which keeps everything).
func HasRevisionHistoryLimit(d *appsv1.Deployment) bool {
	return d.Spec.RevisionHistoryLimit != nil && *d.Spec.RevisionHistoryLimit != math.MaxInt32
}
