package deployment

import (
	"context"
	"fmt"
	"reflect"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/kubegray/kubectl-gray/pkg/deployutil"
)

// syncRolloutStatus writes the status of a rolling or recreating Deployment, including the
// Progressing condition (complete, progressing, or timed out against progressDeadlineSeconds)
// and the ReplicaFailure condition mirrored from the ReplicaSets. When nothing changed it
// schedules the next progress-deadline check instead. resized says this sync has just changed
// a ReplicaSet's size.
//
// Unlike upstream, it does not write counts the ReplicaSet controller is about to replace: when
// a ReplicaSet's size is unobserved (resized now, or its status.observedGeneration behind) and
// only counts moved, the write waits. The ReplicaSet controller always writes that status
// (observedGeneration moves), which syncs this Deployment again with the counts that follow
// the resize. Upstream writes both; this is about one status write less per rollout step.
func (dc *DeploymentController) syncRolloutStatus(ctx context.Context, allRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment, resized bool) error {
	newStatus := dc.CalculateRolloutStatus(ctx, allRSs, newRS, d)
	if reflect.DeepEqual(d.Status, newStatus) {
		dc.RequeueStuckDeployment(ctx, d, newStatus)
		return nil
	}
	if (resized || !allStatusesObserved(allRSs)) && onlyCountsMoved(d.Status, newStatus) {
		klog.FromContext(ctx).V(4).Info("Status write waits for the ReplicaSet controller", "deployment", klog.KObj(d))
		dc.RequeueStuckDeployment(ctx, d, newStatus)
		return nil
	}
	d.Status = newStatus
	_, err := dc.client.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, d, metav1.UpdateOptions{FieldManager: dc.fieldManager})
	return err
}

// allStatusesObserved reports whether the ReplicaSet controller has observed every size written.
func allStatusesObserved(allRSs []*appsv1.ReplicaSet) bool {
	for _, rs := range allRSs {
		if rs != nil && !deployutil.StatusObserved(rs) {
			return false
		}
	}
	return true
}

// onlyCountsMoved reports whether next differs from current in nothing but replica counts and
// conditions' lastUpdateTime (the Progressing condition refreshes it on every progress):
// observedGeneration, collisionCount and every condition's status, reason and message are the
// same, so no reader waiting on those misses anything while the write waits.
func onlyCountsMoved(current, next appsv1.DeploymentStatus) bool {
	return reflect.DeepEqual(withoutCounts(current), withoutCounts(next))
}

func withoutCounts(status appsv1.DeploymentStatus) appsv1.DeploymentStatus {
	s := *status.DeepCopy()
	s.Replicas, s.UpdatedReplicas, s.ReadyReplicas, s.AvailableReplicas, s.UnavailableReplicas = 0, 0, 0, 0, 0
	s.TerminatingReplicas = nil
	for i := range s.Conditions {
		s.Conditions[i].LastUpdateTime = metav1.Time{}
	}
	return s
}

// CalculateRolloutStatus is the status syncRolloutStatus writes: calculateStatus plus the
// Progressing and ReplicaFailure conditions. A gray rollout writes it together with its own
// annotation and condition.
func (dc *DeploymentController) CalculateRolloutStatus(ctx context.Context, allRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment) appsv1.DeploymentStatus {
	newStatus := dc.CalculateStatus(allRSs, newRS, d)

	if !deployutil.HasProgressDeadline(d) {
		deployutil.RemoveDeploymentCondition(&newStatus, appsv1.DeploymentProgressing)
	}

	// A completed rollout whose replicas are all updated is just being resynced: no estimate.
	currentCond := deployutil.GetDeploymentCondition(d.Status, appsv1.DeploymentProgressing)
	isCompleteDeployment := newStatus.Replicas == newStatus.UpdatedReplicas && currentCond != nil && currentCond.Reason == deployutil.NewRSAvailableReason
	if deployutil.HasProgressDeadline(d) && !isCompleteDeployment {
		switch {
		case deployutil.DeploymentComplete(d, &newStatus):
			msg := fmt.Sprintf("Deployment %q has successfully progressed.", d.Name)
			if newRS != nil {
				msg = fmt.Sprintf("ReplicaSet %q has successfully progressed.", newRS.Name)
			}
			condition := deployutil.NewDeploymentCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, deployutil.NewRSAvailableReason, msg, dc.metaNow())
			deployutil.SetDeploymentCondition(&newStatus, *condition)

		case deployutil.DeploymentProgressing(d, &newStatus):
			msg := fmt.Sprintf("Deployment %q is progressing.", d.Name)
			if newRS != nil {
				msg = fmt.Sprintf("ReplicaSet %q is progressing.", newRS.Name)
			}
			condition := deployutil.NewDeploymentCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, deployutil.ReplicaSetUpdatedReason, msg, dc.metaNow())
			// SetDeploymentCondition would keep an existing condition with the same reason
			// untouched, but every observed progress must refresh lastUpdateTime (the deadline is
			// measured from it), so replace it; keep lastTransitionTime if it already was True.
			if currentCond != nil {
				if currentCond.Status == corev1.ConditionTrue {
					condition.LastTransitionTime = currentCond.LastTransitionTime
				}
				deployutil.RemoveDeploymentCondition(&newStatus, appsv1.DeploymentProgressing)
			}
			deployutil.SetDeploymentCondition(&newStatus, *condition)

		case deployutil.DeploymentTimedOut(ctx, d, &newStatus, dc.now()):
			msg := fmt.Sprintf("Deployment %q has timed out progressing.", d.Name)
			if newRS != nil {
				msg = fmt.Sprintf("ReplicaSet %q has timed out progressing.", newRS.Name)
			}
			condition := deployutil.NewDeploymentCondition(appsv1.DeploymentProgressing, corev1.ConditionFalse, deployutil.TimedOutReason, msg, dc.metaNow())
			deployutil.SetDeploymentCondition(&newStatus, *condition)
		}
	}

	// Only one ReplicaFailure condition is mirrored: the new ReplicaSet's first, else any.
	if failures := getReplicaFailures(allRSs, newRS); len(failures) > 0 {
		deployutil.SetDeploymentCondition(&newStatus, failures[0])
	} else {
		deployutil.RemoveDeploymentCondition(&newStatus, appsv1.DeploymentReplicaFailure)
	}
	return newStatus
}

// getReplicaFailures converts the ReplicaFailure conditions of the new ReplicaSet, or if it has
// none those of all ReplicaSets, into Deployment conditions.
func getReplicaFailures(allRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) []appsv1.DeploymentCondition {
	var conditions []appsv1.DeploymentCondition
	if newRS != nil {
		for _, c := range newRS.Status.Conditions {
			if c.Type == appsv1.ReplicaSetReplicaFailure {
				conditions = append(conditions, deployutil.ReplicaSetToDeploymentCondition(c))
			}
		}
	}
	if len(conditions) > 0 {
		return conditions
	}
	for _, rs := range allRSs {
		if rs == nil {
			continue
		}
		for _, c := range rs.Status.Conditions {
			if c.Type == appsv1.ReplicaSetReplicaFailure {
				conditions = append(conditions, deployutil.ReplicaSetToDeploymentCondition(c))
			}
		}
	}
	return conditions
}

// RequeueStuckDeployment schedules a sync for the moment d's progress deadline expires, so that
// Progressing flips to ProgressDeadlineExceeded without any other event. It returns the time
// until the deadline (0 when requeued immediately, -1 when no check is needed); the queue delay
// adds one second to absorb clock skew in AddAfter.
//
// Example: condition updated 00:00:00, deadline 600s, now 00:03:00 → AddAfter(7m + 1s).
func (dc *DeploymentController) RequeueStuckDeployment(ctx context.Context, d *appsv1.Deployment, newStatus appsv1.DeploymentStatus) time.Duration {
	logger := klog.FromContext(ctx)
	currentCond := deployutil.GetDeploymentCondition(d.Status, appsv1.DeploymentProgressing)
	if !deployutil.HasProgressDeadline(d) || currentCond == nil {
		return time.Duration(-1)
	}
	if deployutil.DeploymentComplete(d, &newStatus) || currentCond.Reason == deployutil.TimedOutReason {
		return time.Duration(-1)
	}
	after := currentCond.LastUpdateTime.Add(time.Duration(*d.Spec.ProgressDeadlineSeconds) * time.Second).Sub(dc.now())
	if after < time.Second {
		// Rate limited rather than immediate, to stay safe if the deadline keeps being missed.
		logger.V(4).Info("Queueing up deployment for a progress check now", "deployment", klog.KObj(d))
		dc.enqueueRateLimited(d)
		return 0
	}
	logger.V(4).Info("Queueing up deployment for a progress check", "deployment", klog.KObj(d), "queueAfter", int(after.Seconds()))
	dc.EnqueueAfter(d, after+time.Second)
	return after
}
