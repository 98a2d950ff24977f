package deployutil

import (
	"math"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"
)

// TestDeploymentComplete is upstream's table (desired, current, updated,
// available) plus the observedGeneration rule.
func TestDeploymentComplete(t *testing.T) {
	tests := []struct {
		name                                 string
		desired, current, updated, available int32
		generation, observedGeneration       int64
		want                                 bool
	}{
		{name: "min but not all pods available", desired: 5, current: 5, updated: 5, available: 4, want: false},
		{name: "min availability not honored", desired: 5, current: 5, updated: 5, available: 3, want: false},
		{name: "complete", desired: 5, current: 5, updated: 5, available: 5, want: true},
		{name: "all available but not updated", desired: 5, current: 5, updated: 4, available: 5, want: false},
		{name: "old pods still running", desired: 1, current: 2, updated: 1, available: 1, want: false},
		{name: "one-replica deployment never comes up", desired: 1, current: 1, updated: 1, available: 0, want: false},
		{name: "new generation not observed yet", desired: 5, current: 5, updated: 5, available: 5, generation: 3, observedGeneration: 2, want: false},
		{name: "observed generation ahead is fine", desired: 5, current: 5, updated: 5, available: 5, generation: 3, observedGeneration: 3, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := rollingDeployment(tt.desired, "1", "1")
			d.Generation = tt.generation
			s := appsv1.DeploymentStatus{Replicas: tt.current, UpdatedReplicas: tt.updated, AvailableReplicas: tt.available, ObservedGeneration: tt.observedGeneration}
			if got := DeploymentComplete(d, &s); got != tt.want {
				t.Errorf("DeploymentComplete() = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestDeploymentProgressing(t *testing.T) {
	type counts struct{ current, updated, ready, available int32 }
	tests := []struct {
		name     string
		old, new counts
		want     bool
	}{
		{name: "updated pods", old: counts{10, 4, 4, 4}, new: counts{10, 6, 4, 4}, want: true},
		{name: "not progressing", old: counts{10, 4, 4, 4}, new: counts{10, 4, 4, 4}, want: false},
		{name: "old pods removed", old: counts{10, 4, 6, 6}, new: counts{8, 4, 6, 6}, want: true},
		{name: "less new pods", old: counts{10, 7, 3, 3}, new: counts{10, 6, 3, 3}, want: false},
		{name: "less overall but more new pods", old: counts{10, 4, 7, 7}, new: counts{8, 8, 5, 5}, want: true},
		{name: "more ready pods", old: counts{10, 10, 9, 8}, new: counts{10, 10, 10, 8}, want: true},
		{name: "more available pods", old: counts{10, 10, 10, 9}, new: counts{10, 10, 10, 10}, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := rollingDeployment(10, "1", "1")
			d.Status = appsv1.DeploymentStatus{Replicas: tt.old.current, UpdatedReplicas: tt.old.updated, ReadyReplicas: tt.old.ready, AvailableReplicas: tt.old.available}
			s := appsv1.DeploymentStatus{Replicas: tt.new.current, UpdatedReplicas: tt.new.updated, ReadyReplicas: tt.new.ready, AvailableReplicas: tt.new.available}
			if got := DeploymentProgressing(d, &s); got != tt.want {
				t.Errorf("DeploymentProgressing() = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestDeploymentTimedOut(t *testing.T) {
	at := func(min, sec int) time.Time { return time.Date(2016, 1, 1, 0, min, sec, 0, time.UTC) }
	tests := []struct {
		name     string
		deadline *int32
		cond     *appsv1.DeploymentCondition
		now      time.Time
		want     bool
	}{
		{name: "nil deadline", deadline: nil, cond: progressing("", at(1, 9)), now: at(1, 20), want: false},
		{name: "infinite deadline", deadline: ptr.To[int32](math.MaxInt32), cond: progressing("", at(1, 9)), now: at(1, 20), want: false},
		{name: "10s deadline, 11s since last progress", deadline: ptr.To[int32](10), cond: progressing("", at(1, 9)), now: at(1, 20), want: true},
		{name: "10s deadline, 9s since last progress", deadline: ptr.To[int32](10), cond: progressing("", at(1, 11)), now: at(1, 20), want: false},
		{name: "exactly at the deadline is not yet timed out", deadline: ptr.To[int32](10), cond: progressing("", at(1, 10)), now: at(1, 20), want: false},
		{name: "previous rollout complete", deadline: ptr.To[int32](10), cond: progressing(NewRSAvailableReason, at(0, 0)), now: at(1, 20), want: false},
		{name: "already timed out stays timed out", deadline: ptr.To[int32](10), cond: progressing(TimedOutReason, at(1, 19)), now: at(1, 20), want: true},
		{name: "no Progressing condition", deadline: ptr.To[int32](10), cond: nil, now: at(1, 20), want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			d := rollingDeployment(1, "1", "0")
			d.Spec.ProgressDeadlineSeconds = tt.deadline
			if tt.cond != nil {
				d.Status.Conditions = []appsv1.DeploymentCondition{*tt.cond}
			}
			if got := DeploymentTimedOut(ctx, d, &d.Status, tt.now); got != tt.want {
				t.Errorf("DeploymentTimedOut() = %v, want %v", got, tt.want)
			}
		})
	}
}

func progressing(reason string, lastUpdate time.Time) *appsv1.DeploymentCondition {
	return &appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: reason, LastUpdateTime: metav1.NewTime(lastUpdate)}
}

func TestHasProgressDeadlineAndRevisionHistoryLimit(t *testing.T) {
	tests := []struct {
		name  string
		value *int32
		want  bool
	}{
		{name: "nil", value: nil, want: false},
		{name: "MaxInt32 means unlimited", value: ptr.To[int32](math.MaxInt32), want: false},
		{name: "zero", value: ptr.To[int32](0), want: true},
		{name: "600", value: ptr.To[int32](600), want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := rollingDeployment(1, "1", "0")
			d.Spec.ProgressDeadlineSeconds = tt.value
			d.Spec.RevisionHistoryLimit = tt.value
			if got := HasProgressDeadline(d); got != tt.want {
				t.Errorf("HasProgressDeadline() = %v, want %v", got, tt.want)
			}
			if got := HasRevisionHistoryLimit(d); got != tt.want {
				t.Errorf("HasRevisionHistoryLimit() = %v, want %v", got, tt.want)
			}
		})
	}
}
