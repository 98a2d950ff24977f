package deployutil

import (
	"reflect"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func cond(t appsv1.DeploymentConditionType, s corev1.ConditionStatus, reason, msg string, update, transition metav1.Time) appsv1.DeploymentCondition {
	return appsv1.DeploymentCondition{Type: t, Status: s, Reason: reason, Message: msg, LastUpdateTime: update, LastTransitionTime: transition}
}

func TestNewDeploymentCondition(t *testing.T) {
	got := NewDeploymentCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, NewReplicaSetReason, `Created new replica set "web-1"`, t1)
	want := cond(appsv1.DeploymentProgressing, corev1.ConditionTrue, "NewReplicaSetCreated", `Created new replica set "web-1"`, t1, t1)
	if !reflect.DeepEqual(*got, want) {
		t.Errorf("NewDeploymentCondition() = %+v, want %+v", *got, want)
	}
}

func TestGetDeploymentCondition(t *testing.T) {
	status := appsv1.DeploymentStatus{Conditions: []appsv1.DeploymentCondition{
		cond(appsv1.DeploymentProgressing, corev1.ConditionFalse, "ForSomeReason", "", t0, t0),
		cond(appsv1.DeploymentAvailable, corev1.ConditionTrue, "AwesomeController", "", t0, t0),
	}}
	tests := []struct {
		name       string
		condType   appsv1.DeploymentConditionType
		wantReason string
		wantNil    bool
	}{
		{name: "condition exists", condType: appsv1.DeploymentAvailable, wantReason: "AwesomeController"},
		{name: "condition does not exist", condType: appsv1.DeploymentReplicaFailure, wantNil: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := GetDeploymentCondition(status, tt.condType)
			if (got == nil) != tt.wantNil {
				t.Fatalf("GetDeploymentCondition() = %v, wantNil %v", got, tt.wantNil)
			}
			if got != nil && got.Reason != tt.wantReason {
				t.Errorf("reason = %q, want %q", got.Reason, tt.wantReason)
			}
		})
	}
	// The result is a copy: changing it leaves the status alone.
	GetDeploymentCondition(status, appsv1.DeploymentAvailable).Reason = "changed"
	if status.Conditions[1].Reason != "AwesomeController" {
		t.Errorf("GetDeploymentCondition returned an alias into the status")
	}
}

func TestSetDeploymentCondition(t *testing.T) {
	progressingFalse := cond(appsv1.DeploymentProgressing, corev1.ConditionFalse, "ForSomeReason", "old", t0, t0)
	available := cond(appsv1.DeploymentAvailable, corev1.ConditionTrue, "AwesomeController", "", t0, t0)
	tests := []struct {
		name   string
		status []appsv1.DeploymentCondition
		set    appsv1.DeploymentCondition
		want   []appsv1.DeploymentCondition
	}{
		{
			name: "set for the first time",
			set:  available,
			want: []appsv1.DeploymentCondition{available},
		},
		{
			name:   "simple set appends",
			status: []appsv1.DeploymentCondition{progressingFalse},
			set:    available,
			want:   []appsv1.DeploymentCondition{progressingFalse, available},
		},
		{
			name:   "status changes: replaced with the new timestamps",
			status: []appsv1.DeploymentCondition{progressingFalse},
			set:    cond(appsv1.DeploymentProgressing, corev1.ConditionTrue, "BecauseItIs", "new", t2, t2),
			want:   []appsv1.DeploymentCondition{cond(appsv1.DeploymentProgressing, corev1.ConditionTrue, "BecauseItIs", "new", t2, t2)},
		},
		{
			name:   "same status and reason: nothing changes, not even message or timestamps",
			status: []appsv1.DeploymentCondition{progressingFalse, available},
			set:    cond(appsv1.DeploymentProgressing, corev1.ConditionFalse, "ForSomeReason", "new message", t2, t2),
			want:   []appsv1.DeploymentCondition{progressingFalse, available},
		},
		{
			name:   "same status, new reason: keeps lastTransitionTime, moves to the end",
			status: []appsv1.DeploymentCondition{progressingFalse, available},
			set:    cond(appsv1.DeploymentProgressing, corev1.ConditionFalse, "OtherReason", "new", t2, t2),
			want:   []appsv1.DeploymentCondition{available, cond(appsv1.DeploymentProgressing, corev1.ConditionFalse, "OtherReason", "new", t2, t0)},
		},
		{
			name:   "pause: True → Unknown gets a new lastTransitionTime",
			status: []appsv1.DeploymentCondition{cond(appsv1.DeploymentProgressing, corev1.ConditionTrue, ReplicaSetUpdatedReason, "", t0, t0)},
			set:    cond(appsv1.DeploymentProgressing, corev1.ConditionUnknown, PausedDeployReason, "Deployment is paused", t1, t1),
			want:   []appsv1.DeploymentCondition{cond(appsv1.DeploymentProgressing, corev1.ConditionUnknown, PausedDeployReason, "Deployment is paused", t1, t1)},
		},
		{
			name:   "resume: Unknown → Unknown keeps lastTransitionTime, fresh lastUpdateTime",
			status: []appsv1.DeploymentCondition{cond(appsv1.DeploymentProgressing, corev1.ConditionUnknown, PausedDeployReason, "Deployment is paused", t1, t1)},
			set:    cond(appsv1.DeploymentProgressing, corev1.ConditionUnknown, ResumedDeployReason, "Deployment is resumed", t2, t2),
			want:   []appsv1.DeploymentCondition{cond(appsv1.DeploymentProgressing, corev1.ConditionUnknown, ResumedDeployReason, "Deployment is resumed", t2, t1)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status := &appsv1.DeploymentStatus{Conditions: append([]appsv1.DeploymentCondition(nil), tt.status...)}
			SetDeploymentCondition(status, tt.set)
			if !reflect.DeepEqual(status.Conditions, tt.want) {
				t.Errorf("conditions = %+v\nwant %+v", status.Conditions, tt.want)
			}
		})
	}
}

func TestRemoveDeploymentCondition(t *testing.T) {
	progressing := cond(appsv1.DeploymentProgressing, corev1.ConditionFalse, "ForSomeReason", "", t0, t0)
	available := cond(appsv1.DeploymentAvailable, corev1.ConditionTrue, "AwesomeController", "", t0, t0)
	tests := []struct {
		name     string
		status   []appsv1.DeploymentCondition
		condType appsv1.DeploymentConditionType
		want     []appsv1.DeploymentCondition
	}{
		{name: "remove from empty status", condType: appsv1.DeploymentProgressing, want: nil},
		{name: "simple remove", status: []appsv1.DeploymentCondition{progressing}, condType: appsv1.DeploymentProgressing, want: nil},
		{name: "keeps the others in order", status: []appsv1.DeploymentCondition{progressing, available}, condType: appsv1.DeploymentProgressing, want: []appsv1.DeploymentCondition{available}},
		{name: "doesn't remove anything", status: []appsv1.DeploymentCondition{progressing, available}, condType: appsv1.DeploymentReplicaFailure, want: []appsv1.DeploymentCondition{progressing, available}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status := &appsv1.DeploymentStatus{Conditions: tt.status}
			RemoveDeploymentCondition(status, tt.condType)
			if !reflect.DeepEqual(status.Conditions, tt.want) {
				t.Errorf("conditions = %+v, want %+v", status.Conditions, tt.want)
			}
		})
	}
}

func TestReplicaSetToDeploymentCondition(t *testing.T) {
	in := appsv1.ReplicaSetCondition{
		Type: appsv1.ReplicaSetReplicaFailure, Status: corev1.ConditionTrue, Reason: "FailedCreate",
		Message: "pods forbidden", LastTransitionTime: t1,
	}
	want := cond(appsv1.DeploymentReplicaFailure, corev1.ConditionTrue, "FailedCreate", "pods forbidden", t1, t1)
	if got := ReplicaSetToDeploymentCondition(in); !reflect.DeepEqual(got, want) {
		t.Errorf("ReplicaSetToDeploymentCondition() = %+v, want %+v", got, want)
	}
}
