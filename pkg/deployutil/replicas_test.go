package deployutil

import (
	"reflect"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	"github.com/kubegray/kubectl-gray/internal/testutil"
)

func TestConstantsMatchUpstream(t *testing.T) {
	got := map[string]string{
		"RevisionAnnotation": RevisionAnnotation, "RevisionHistoryAnnotation": RevisionHistoryAnnotation,
		"DesiredReplicasAnnotation": DesiredReplicasAnnotation, "MaxReplicasAnnotation": MaxReplicasAnnotation,
		"RollbackToAnnotation": RollbackToAnnotation, "LastAppliedAnnotation": LastAppliedAnnotation,
		"DefaultPodTemplateHashKey": DefaultPodTemplateHashKey,
		"ReplicaSetUpdatedReason":   ReplicaSetUpdatedReason, "FailedRSCreateReason": FailedRSCreateReason,
		"NewReplicaSetReason": NewReplicaSetReason, "FoundNewRSReason": FoundNewRSReason,
		"NewRSAvailableReason": NewRSAvailableReason, "TimedOutReason": TimedOutReason,
		"PausedDeployReason": PausedDeployReason, "ResumedDeployReason": ResumedDeployReason,
		"MinimumReplicasAvailable": MinimumReplicasAvailable, "MinimumReplicasUnavailable": MinimumReplicasUnavailable,
		"RollbackRevisionNotFound": RollbackRevisionNotFound, "RollbackTemplateUnchanged": RollbackTemplateUnchanged,
		"RollbackDone": RollbackDone,
	}
	want := map[string]string{
		"RevisionAnnotation": "deployment.kubernetes.io/revision", "RevisionHistoryAnnotation": "deployment.kubernetes.io/revision-history",
		"DesiredReplicasAnnotation": "deployment.kubernetes.io/desired-replicas", "MaxReplicasAnnotation": "deployment.kubernetes.io/max-replicas",
		"RollbackToAnnotation": "deprecated.deployment.rollback.to", "LastAppliedAnnotation": "kubectl.kubernetes.io/last-applied-configuration",
		"DefaultPodTemplateHashKey": "pod-template-hash",
		"ReplicaSetUpdatedReason":   "ReplicaSetUpdated", "FailedRSCreateReason": "ReplicaSetCreateError",
		"NewReplicaSetReason": "NewReplicaSetCreated", "FoundNewRSReason": "FoundNewReplicaSet",
		"NewRSAvailableReason": "NewReplicaSetAvailable", "TimedOutReason": "ProgressDeadlineExceeded",
		"PausedDeployReason": "DeploymentPaused", "ResumedDeployReason": "DeploymentResumed",
		"MinimumReplicasAvailable": "MinimumReplicasAvailable", "MinimumReplicasUnavailable": "MinimumReplicasUnavailable",
		"RollbackRevisionNotFound": "DeploymentRollbackRevisionNotFound", "RollbackTemplateUnchanged": "DeploymentRollbackTemplateUnchanged",
		"RollbackDone": "DeploymentRollback",
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s = %q, want %q", k, got[k], w)
		}
	}
	if RevisionHistoryMaxChars != 2000 {
		t.Errorf("RevisionHistoryMaxChars = %d, want 2000", RevisionHistoryMaxChars)
	}
}

func TestMaxUnavailableMaxSurge(t *testing.T) {
	tests := []struct {
		name            string
		d               *appsv1.Deployment
		wantUnavailable int32
		wantSurge       int32
	}{
		{name: "unavailable 5 of 10", d: rollingDeployment(10, "1", "5"), wantUnavailable: 5, wantSurge: 1},
		{name: "unavailable 10 of 10", d: rollingDeployment(10, "1", "10"), wantUnavailable: 10, wantSurge: 1},
		{name: "unavailable 10 of 5 clamps to R", d: rollingDeployment(5, "1", "10"), wantUnavailable: 5, wantSurge: 1},
		{name: "R=0", d: rollingDeployment(0, "1", "10"), wantUnavailable: 0, wantSurge: 1},
		{name: "50% of 10", d: rollingDeployment(10, "1", "50%"), wantUnavailable: 5, wantSurge: 1},
		{name: "60% of 10", d: rollingDeployment(10, "1", "60%"), wantUnavailable: 6, wantSurge: 1},
		{name: "100% of 10", d: rollingDeployment(10, "1", "100%"), wantUnavailable: 10, wantSurge: 1},
		{name: "100% of 5", d: rollingDeployment(5, "1", "100%"), wantUnavailable: 5, wantSurge: 1},
		{name: "defaults 25%/25% of 10", d: rollingDeployment(10, "25%", "25%"), wantUnavailable: 2, wantSurge: 3},
		{name: "both resolve to 0 → unavailable 1", d: rollingDeployment(3, "0", "25%"), wantUnavailable: 1, wantSurge: 0},
		{name: "no rollingUpdate block: fenceposts nil → unavailable 1", d: func() *appsv1.Deployment {
			d := rollingDeployment(4, "", "")
			d.Spec.Strategy.RollingUpdate = nil
			return d
		}(), wantUnavailable: 1, wantSurge: 0},
		{name: "Recreate", d: recreateDeployment(10), wantUnavailable: 0, wantSurge: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := MaxUnavailable(*tt.d); got != tt.wantUnavailable {
				t.Errorf("MaxUnavailable() = %d, want %d", got, tt.wantUnavailable)
			}
			if got := MaxSurge(*tt.d); got != tt.wantSurge {
				t.Errorf("MaxSurge() = %d, want %d", got, tt.wantSurge)
			}
		})
	}
}

func TestIsRollingUpdate(t *testing.T) {
	if !IsRollingUpdate(rollingDeployment(1, "1", "0")) || IsRollingUpdate(recreateDeployment(1)) {
		t.Errorf("IsRollingUpdate misclassifies the strategies")
	}
}

// TestReplicaCounts follows upstream TestGetReplicaCountForReplicaSets.
func TestReplicaCounts(t *testing.T) {
	mk := func(name string, spec, status, ready, available int32, observedGen int64, terminating *int32) *appsv1.ReplicaSet {
		rs := newRS(name, spec, available, t0)
		rs.Status = appsv1.ReplicaSetStatus{Replicas: status, ReadyReplicas: ready, AvailableReplicas: available, ObservedGeneration: observedGen, TerminatingReplicas: terminating}
		return rs
	}
	rs1 := mk("rs1", 1, 2, 2, 1, 1, ptr.To[int32](3))
	rs2 := mk("rs2", 2, 3, 1, 1, 0, ptr.To[int32](1))
	unsynced := mk("unsynced", 3, 0, 0, 0, 0, nil)
	dropped := mk("dropped", 1, 1, 1, 1, 1, nil)
	tests := []struct {
		name            string
		sets            []*appsv1.ReplicaSet
		wantSpec        int32
		wantStatus      int32
		wantReady       int32
		wantAvailable   int32
		wantTerminating *int32
	}{
		{name: "rs1", sets: []*appsv1.ReplicaSet{rs1}, wantSpec: 1, wantStatus: 2, wantReady: 2, wantAvailable: 1, wantTerminating: ptr.To[int32](3)},
		{name: "rs1 and rs2", sets: []*appsv1.ReplicaSet{rs1, rs2}, wantSpec: 3, wantStatus: 5, wantReady: 3, wantAvailable: 2, wantTerminating: ptr.To[int32](4)},
		{name: "never-synced RS without the field counts 0", sets: []*appsv1.ReplicaSet{unsynced}, wantSpec: 3, wantTerminating: ptr.To[int32](0)},
		{name: "rs1, rs2, unsynced", sets: []*appsv1.ReplicaSet{rs1, rs2, unsynced}, wantSpec: 6, wantStatus: 5, wantReady: 3, wantAvailable: 2, wantTerminating: ptr.To[int32](4)},
		{name: "synced RS without the field: unknown", sets: []*appsv1.ReplicaSet{dropped}, wantSpec: 1, wantStatus: 1, wantReady: 1, wantAvailable: 1, wantTerminating: nil},
		{name: "any unknown makes the sum unknown", sets: []*appsv1.ReplicaSet{rs1, rs2, unsynced, dropped}, wantSpec: 7, wantStatus: 6, wantReady: 4, wantAvailable: 3, wantTerminating: nil},
		{name: "nil entries are skipped", sets: []*appsv1.ReplicaSet{nil, rs1, nil}, wantSpec: 1, wantStatus: 2, wantReady: 2, wantAvailable: 1, wantTerminating: ptr.To[int32](3)},
		{name: "empty", sets: nil, wantTerminating: ptr.To[int32](0)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := GetReplicaCountForReplicaSets(tt.sets); got != tt.wantSpec {
				t.Errorf("spec sum = %d, want %d", got, tt.wantSpec)
			}
			if got := GetActualReplicaCountForReplicaSets(tt.sets); got != tt.wantStatus {
				t.Errorf("status sum = %d, want %d", got, tt.wantStatus)
			}
			if got := GetReadyReplicaCountForReplicaSets(tt.sets); got != tt.wantReady {
				t.Errorf("ready sum = %d, want %d", got, tt.wantReady)
			}
			if got := GetAvailableReplicaCountForReplicaSets(tt.sets); got != tt.wantAvailable {
				t.Errorf("available sum = %d, want %d", got, tt.wantAvailable)
			}
			if got := GetTerminatingReplicaCountForReplicaSets(tt.sets); !ptr.Equal(got, tt.wantTerminating) {
				t.Errorf("terminating = %v, want %v", ptr.Deref(got, -1), ptr.Deref(tt.wantTerminating, -1))
			}
		})
	}
}

func TestNewRSNewReplicas(t *testing.T) {
	tests := []struct {
		name    string
		d       *appsv1.Deployment
		newSpec int32
		oldSpec int32
		want    int32
		wantErr string
	}{
		{name: "cannot scale up: stays at new RS size", d: rollingDeployment(1, "1", "1"), newSpec: 5, want: 5},
		{name: "scale up capped at R", d: rollingDeployment(6, "10", "1"), newSpec: 2, want: 6},
		{name: "recreate: R", d: recreateDeployment(3), newSpec: 1, oldSpec: 5, want: 3},
		{name: "25% of 10 rounds up to 3 with old 10", d: rollingDeployment(10, "25%", "25%"), newSpec: 0, oldSpec: 10, want: 3},
		{name: "surge 0 and unavailable 0%: no fencepost fix here", d: rollingDeployment(10, "0", "0%"), newSpec: 0, oldSpec: 10, want: 0},
		{name: "bad surge string", d: rollingDeployment(10, "x%", "1"), wantErr: "deployment default/web: maxSurge"},
		{name: "unknown strategy", d: func() *appsv1.Deployment {
			d := recreateDeployment(3)
			d.Spec.Strategy.Type = "BlueGreen"
			return d
		}(), wantErr: `deployment default/web: deployment type "BlueGreen" isn't supported`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			newRSObj := newRS("new", tt.newSpec, 0, t1)
			all := []*appsv1.ReplicaSet{newRS("old", tt.oldSpec, tt.oldSpec, t0, testutil.RSImage("nginx:0")), newRSObj}
			got, err := NewRSNewReplicas(tt.d, all, newRSObj)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error %v", err)
			}
			if got != tt.want {
				t.Errorf("NewRSNewReplicas() = %d, want %d", got, tt.want)
			}
		})
	}
}

type plannedScale struct {
	name  string
	size  int32
	force bool
}

func planNames(steps []ReplicaSetScale) []plannedScale {
	var out []plannedScale
	for _, s := range steps {
		out = append(out, plannedScale{s.ReplicaSet.Name, s.Size, s.Force})
	}
	return out
}

// TestScalePlan checks that the object adapter orders ReplicaSets by
// (creationTimestamp, name), reads the annotations and maps the steps back
// to the right objects. The rollout package tests cover the arithmetic.
func TestScalePlan(t *testing.T) {
	annotate := func(rs *appsv1.ReplicaSet, desired, max string) *appsv1.ReplicaSet {
		testutil.RSAnnotation(DesiredReplicasAnnotation, desired)(rs)
		testutil.RSAnnotation(MaxReplicasAnnotation, max)(rs)
		return rs
	}
	tests := []struct {
		name   string
		d      *appsv1.Deployment
		newRS  *appsv1.ReplicaSet
		oldRSs []*appsv1.ReplicaSet
		want   []plannedScale
	}{
		{
			name:   "scaling example B: scale to 20 at old 8 / new 5 → 15 / 10, largest first",
			d:      rollingDeployment(20, "25%", "25%"),
			newRS:  annotate(newRS("v2", 5, 0, t1), "10", "13"),
			oldRSs: []*appsv1.ReplicaSet{annotate(newRS("v1", 8, 8, t0, testutil.RSImage("nginx:0")), "10", "13")},
			want:   []plannedScale{{"v1", 15, true}, {"v2", 10, true}},
		},
		{
			name:  "same creation time: name breaks the tie (b is newer than a), leftover to the newer",
			d:     rollingDeployment(4, "0", "1"),
			newRS: nil,
			oldRSs: []*appsv1.ReplicaSet{
				annotate(newRS("b", 1, 1, t0), "3", "3"),
				annotate(newRS("a", 1, 1, t0), "3", "3"),
				annotate(newRS("c", 1, 1, t0), "3", "3"),
			},
			want: []plannedScale{{"c", 2, true}, {"b", 1, true}, {"a", 1, true}},
		},
		{
			name:   "saturated new RS: old RSs to 0, not forced",
			d:      rollingDeployment(3, "1", "0"),
			newRS:  annotate(newRS("v2", 3, 3, t1), "3", "4"),
			oldRSs: []*appsv1.ReplicaSet{annotate(newRS("v1", 1, 1, t0), "3", "4")},
			want:   []plannedScale{{"v1", 0, false}},
		},
		{
			name:   "single active RS goes to R",
			d:      rollingDeployment(7, "1", "0"),
			newRS:  annotate(newRS("v2", 5, 5, t1), "5", "6"),
			oldRSs: []*appsv1.ReplicaSet{newRS("v1", 0, 0, t0)},
			want:   []plannedScale{{"v2", 7, false}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			before := names(tt.oldRSs)
			got := planNames(ScalePlan(ctx, tt.d, tt.newRS, tt.oldRSs))
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ScalePlan() = %+v, want %+v", got, tt.want)
			}
			if after := names(tt.oldRSs); !reflect.DeepEqual(before, after) {
				t.Errorf("ScalePlan reordered oldRSs: %v → %v", before, after)
			}
		})
	}
}
