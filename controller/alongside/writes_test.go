package alongside

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegray/kubectl-gray/pkg/deployutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// Only our part of the status is compared (kubegray.io/status, the mirrored revision, our
// conditions), and a condition only by status, reason and message: a new timestamp alone is not
// worth a patch, the built-in controller's fields are not ours to write.
func TestGrayPartUnchanged(t *testing.T) {
	at := func(minute int) metav1.Time { return metav1.Date(2026, 12, 5, 8, minute, 0, 0, time.UTC) }
	held := func(reason, message string, when metav1.Time) appsv1.DeploymentCondition {
		return *deployutil.NewDeploymentCondition(grayapi.ConditionGrayHeld, corev1.ConditionTrue, reason, message, when)
	}
	server := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{grayapi.StatusAnnotation: "s1", deployutil.RevisionAnnotation: "2"}},
		Status: appsv1.DeploymentStatus{Replicas: 10, Conditions: []appsv1.DeploymentCondition{
			held(grayapi.ReasonHoldPointReached, "held at 20%", at(0)),
		}},
	}
	for _, tc := range []struct {
		name  string
		edit  func(d *appsv1.Deployment)
		equal bool
	}{
		{"nothing", func(*appsv1.Deployment) {}, true},
		{"the built-in controller's counts", func(d *appsv1.Deployment) { d.Status.Replicas = 12 }, true},
		{"a condition's timestamps", func(d *appsv1.Deployment) {
			d.Status.Conditions[0].LastUpdateTime, d.Status.Conditions[0].LastTransitionTime = at(5), at(5)
		}, true},
		{"our status", func(d *appsv1.Deployment) { d.Annotations[grayapi.StatusAnnotation] = "s2" }, false},
		{"the mirrored revision", func(d *appsv1.Deployment) { d.Annotations[deployutil.RevisionAnnotation] = "3" }, false},
		{"a condition's message", func(d *appsv1.Deployment) { d.Status.Conditions[0].Message = "held at 40%" }, false},
		{"a condition's reason", func(d *appsv1.Deployment) { d.Status.Conditions[0].Reason = grayapi.ReasonGateInconclusive }, false},
		{"a condition's status", func(d *appsv1.Deployment) { d.Status.Conditions[0].Status = corev1.ConditionFalse }, false},
		{"a condition removed", func(d *appsv1.Deployment) { d.Status.Conditions = nil }, false},
		{"a condition added", func(d *appsv1.Deployment) {
			d.Status.Conditions = append(d.Status.Conditions,
				*deployutil.NewDeploymentCondition(grayapi.ConditionStalled, corev1.ConditionTrue, "Aborted", "aborted", at(0)))
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			updated := server.DeepCopy()
			tc.edit(updated)
			if got := grayPartUnchanged(server, updated); got != tc.equal {
				t.Errorf("grayPartUnchanged = %t, want %t", got, tc.equal)
			}
		})
	}
}
