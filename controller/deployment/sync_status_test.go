package deployment

// The Deployment status a sync writes: the paused and resumed Progressing conditions
// (checkPausedConditions) and the counts and Available condition (calculateStatus).

import (
	"reflect"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/kubegray/kubectl-gray/internal/testutil"
)

func TestCheckPausedConditions(t *testing.T) {
	earlier := metav1.NewTime(testNow.Add(-time.Hour))
	cond := func(status corev1.ConditionStatus, reason string) []appsv1.DeploymentCondition {
		return []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: status, Reason: reason, LastUpdateTime: earlier, LastTransitionTime: earlier}}
	}
	tests := []struct {
		name       string
		deadline   bool
		paused     bool
		conditions []appsv1.DeploymentCondition
		want       *appsv1.DeploymentCondition // nil: no write
	}{
		{name: "no progress deadline", paused: true},
		{
			name: "pausing", deadline: true, paused: true, conditions: cond(corev1.ConditionTrue, "ReplicaSetUpdated"),
			want: &appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionUnknown, Reason: "DeploymentPaused",
				Message: "Deployment is paused", LastUpdateTime: metav1.NewTime(testNow), LastTransitionTime: metav1.NewTime(testNow)},
		},
		{name: "already paused", deadline: true, paused: true, conditions: cond(corev1.ConditionUnknown, "DeploymentPaused")},
		{
			// Unknown → Unknown keeps lastTransitionTime; the fresh lastUpdateTime restarts the deadline.
			name: "resuming", deadline: true, conditions: cond(corev1.ConditionUnknown, "DeploymentPaused"),
			want: &appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionUnknown, Reason: "DeploymentResumed",
				Message: "Deployment is resumed", LastUpdateTime: metav1.NewTime(testNow), LastTransitionTime: earlier},
		},
		{name: "timed out keeps its condition when paused", deadline: true, paused: true, conditions: cond(corev1.ConditionFalse, "ProgressDeadlineExceeded")},
		{name: "running and not paused before", deadline: true, conditions: cond(corev1.ConditionTrue, "ReplicaSetUpdated")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			d := newDeployment("foo", 1)
			if tc.deadline {
				testutil.WithProgressDeadline(600)(d)
			}
			d.Spec.Paused = tc.paused
			d.Status.Conditions = tc.conditions
			f.both(d)
			if err := f.dc.checkPausedConditions(f.ctx, d); err != nil {
				t.Fatalf("checkPausedConditions: %v", err)
			}
			actions := f.actions()
			if tc.want == nil {
				if len(actions) != 0 {
					t.Errorf("actions = %v, want none", verbs(actions))
				}
				return
			}
			if got := progressing(lastStatusWrite(t, actions)); got == nil || !reflect.DeepEqual(*got, *tc.want) {
				t.Errorf("Progressing = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestCalculateStatus(t *testing.T) {
	f := newFixture(t)
	d := newDeployment("foo", 10, testutil.WithRollingUpdate(intstr.FromInt32(3), intstr.FromInt32(2)))
	d.Generation = 7
	d.Status.CollisionCount = ptr.To[int32](2)
	old := testutil.ReplicaSet("old", 8, testutil.RSCreatedAt(oldTime))
	old.Status = appsv1.ReplicaSetStatus{Replicas: 9, ReadyReplicas: 8, AvailableReplicas: 8, TerminatingReplicas: ptr.To[int32](1), ObservedGeneration: 1}
	cur := testutil.ReplicaSet("new", 5, testutil.RSCreatedAt(newerTime))
	cur.Status = appsv1.ReplicaSetStatus{Replicas: 5, ReadyReplicas: 1, AvailableReplicas: 0, TerminatingReplicas: ptr.To[int32](0), ObservedGeneration: 1}

	got := f.dc.CalculateStatus([]*appsv1.ReplicaSet{old, cur}, cur, d)
	want := appsv1.DeploymentStatus{
		ObservedGeneration: 7,
		Replicas:           14,
		UpdatedReplicas:    5,
		ReadyReplicas:      9,
		AvailableReplicas:  8,
		// Spec sums, so surge pods count: 13 − 8.
		UnavailableReplicas: 5,
		TerminatingReplicas: ptr.To[int32](1),
		CollisionCount:      ptr.To[int32](2),
		Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable",
			Message: "Deployment has minimum availability.", LastUpdateTime: metav1.NewTime(testNow), LastTransitionTime: metav1.NewTime(testNow)}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("calculateStatus =\n%+v\nwant\n%+v", got, want)
	}

	// One fewer available replica drops below R − maxUnavailable = 8.
	old.Status.AvailableReplicas = 7
	got = f.dc.CalculateStatus([]*appsv1.ReplicaSet{old, cur}, cur, d)
	if c := got.Conditions[0]; c.Status != corev1.ConditionFalse || c.Reason != "MinimumReplicasUnavailable" || c.Message != "Deployment does not have minimum availability." {
		t.Errorf("Available = %+v, want False/MinimumReplicasUnavailable", c)
	}
}
