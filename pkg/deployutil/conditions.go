package deployutil

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NewDeploymentCondition builds a condition whose both timestamps are now.
// The clock is a parameter so tests and the controller share one time source.
func NewDeploymentCondition(t appsv1.DeploymentConditionType, s corev1.ConditionStatus, reason, message string, now metav1.Time) *appsv1.DeploymentCondition {
	return &appsv1.DeploymentCondition{
		Type:               t,
		Status:             s,
		LastUpdateTime:     now,
		LastTransitionTime: now,
		Reason:             reason,
		Message:            message,
	}
}

// GetDeploymentCondition returns a copy of the condition of type t, or nil.
func GetDeploymentCondition(status appsv1.DeploymentStatus, t appsv1.DeploymentConditionType) *appsv1.DeploymentCondition {
	for i := range status.Conditions {
		if status.Conditions[i].Type == t {
			c := status.Conditions[i]
			return &c
		}
	}
	return nil
}

// SetDeploymentCondition records c in status with upstream's timestamp rules:
//   - same type, status and reason already present: nothing changes at all
//     (message and timestamps of the existing condition are kept);
//   - same type and status, other reason: c replaces it but inherits the
//     existing lastTransitionTime (the status did not transition);
//   - otherwise c replaces it as given.
//
// The written condition always moves to the end of the list.
func SetDeploymentCondition(status *appsv1.DeploymentStatus, c appsv1.DeploymentCondition) {
	cur := GetDeploymentCondition(*status, c.Type)
	if cur != nil && cur.Status == c.Status && cur.Reason == c.Reason {
		return
	}
	if cur != nil && cur.Status == c.Status {
		c.LastTransitionTime = cur.LastTransitionTime
	}
	status.Conditions = append(withoutCondition(status.Conditions, c.Type), c)
}

// RemoveDeploymentCondition drops every condition of type t.
func RemoveDeploymentCondition(status *appsv1.DeploymentStatus, t appsv1.DeploymentConditionType) {
	status.Conditions = withoutCondition(status.Conditions, t)
}

// withoutCondition returns a fresh slice (nil when empty, as upstream) so the
// caller's backing array is never shared with the result.
func withoutCondition(conds []appsv1.DeploymentCondition, t appsv1.DeploymentConditionType) []appsv1.DeploymentCondition {
	var out []appsv1.DeploymentCondition
	for _, c := range conds {
		if c.Type != t {
			out = append(out, c)
		}
	}
	return out
}

// ReplicaSetToDeploymentCondition promotes a ReplicaSet condition (e.g.
// ReplicaFailure) to the Deployment; both timestamps take the ReplicaSet
// condition's lastTransitionTime.
func ReplicaSetToDeploymentCondition(c appsv1.ReplicaSetCondition) appsv1.DeploymentCondition {
	return appsv1.DeploymentCondition{
		Type:               appsv1.DeploymentConditionType(c.Type),
		Status:             c.Status,
		LastTransitionTime: c.LastTransitionTime,
		LastUpdateTime:     c.LastTransitionTime,
		Reason:             c.Reason,
		Message:            c.Message,
	}
}
