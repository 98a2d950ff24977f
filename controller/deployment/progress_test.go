package deployment

import (
	"math"
	"reflect"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kubegray/kubectl-gray/internal/testutil"
)

// progressDeployment is a Recreate Deployment (maxUnavailable 0) with the given status.
func progressDeployment(deadline *int32, replicas, statusReplicas, updated, available int32, conditions []appsv1.DeploymentCondition) *appsv1.Deployment {
	d := newDeployment("progress-test", replicas, testutil.WithRecreate())
	d.Spec.ProgressDeadlineSeconds = deadline
	d.Status = appsv1.DeploymentStatus{Replicas: statusReplicas, UpdatedReplicas: updated, AvailableReplicas: available, Conditions: conditions}
	return d
}

func rsWithAvailable(name string, spec, status, available int32) *appsv1.ReplicaSet {
	rs := testutil.ReplicaSet(name, spec, testutil.RSCreatedAt(time.Time{}))
	rs.Status = appsv1.ReplicaSetStatus{Replicas: status, AvailableReplicas: available}
	return rs
}

func TestRequeueStuckDeployment(t *testing.T) {
	pds := ptr.To[int32](60)
	lastUpdate := time.Date(2017, 2, 15, 18, 49, 0, 0, time.UTC)
	stuck := []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "ReplicaSetUpdated", LastUpdateTime: metav1.NewTime(lastUpdate)}}
	failed := []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded", LastUpdateTime: metav1.NewTime(lastUpdate)}}
	status := func(replicas, updated, available int32) appsv1.DeploymentStatus {
		return appsv1.DeploymentStatus{Replicas: replicas, UpdatedReplicas: updated, AvailableReplicas: available}
	}
	tests := []struct {
		name        string
		d           *appsv1.Deployment
		status      appsv1.DeploymentStatus
		now         time.Time
		want        time.Duration
		wantLimited bool // requeued through the rate limiter (immediately)
	}{
		{name: "nil progressDeadlineSeconds", d: progressDeployment(nil, 4, 3, 3, 2, stuck), status: status(3, 3, 2), want: -1},
		{name: "infinite progressDeadlineSeconds", d: progressDeployment(ptr.To[int32](math.MaxInt32), 4, 3, 3, 2, stuck), status: status(3, 3, 2), want: -1},
		{name: "no progressing condition", d: progressDeployment(pds, 4, 3, 3, 2, nil), status: status(3, 3, 2), want: -1},
		{name: "complete deployment", d: progressDeployment(pds, 3, 3, 3, 3, stuck), status: status(3, 3, 3), want: -1},
		{name: "already timed out", d: progressDeployment(pds, 3, 3, 3, 0, failed), status: status(3, 3, 0), want: -1},
		{name: "30s left", d: progressDeployment(pds, 3, 3, 3, 1, stuck), status: status(3, 3, 1), now: lastUpdate.Add(30 * time.Second), want: 30 * time.Second},
		{name: "1s left", d: progressDeployment(pds, 3, 3, 3, 1, stuck), status: status(3, 3, 1), now: lastUpdate.Add(59 * time.Second), want: time.Second},
		{name: "less than a second left", d: progressDeployment(pds, 3, 3, 3, 1, stuck), status: status(3, 3, 1), now: lastUpdate.Add(59*time.Second + time.Nanosecond), want: 0, wantLimited: true},
		{name: "exactly at the deadline", d: progressDeployment(pds, 3, 3, 3, 1, stuck), status: status(3, 3, 1), now: lastUpdate.Add(60 * time.Second), want: 0, wantLimited: true},
		{name: "1s after the deadline", d: progressDeployment(pds, 3, 3, 3, 1, stuck), status: status(3, 3, 1), now: lastUpdate.Add(61 * time.Second), want: 0, wantLimited: true},
		{name: "60s after the deadline", d: progressDeployment(pds, 3, 3, 3, 1, stuck), status: status(3, 3, 1), now: lastUpdate.Add(120 * time.Second), want: 0, wantLimited: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.dc.now = func() time.Time { return tc.now }
			if got := f.dc.RequeueStuckDeployment(f.ctx, tc.d, tc.status); got != tc.want {
				t.Errorf("requeueStuckDeployment = %v, want %v", got, tc.want)
			}
			limited := f.dc.queue.NumRequeues("default/progress-test") == 1
			if limited != tc.wantLimited {
				t.Errorf("rate-limited requeue = %v, want %v", limited, tc.wantLimited)
			}
			// AddAfter waits at least a second, so nothing is ready right away.
			if tc.want > 0 && f.dc.queue.Len() != 0 {
				t.Errorf("queue length = %d right after a delayed requeue, want 0", f.dc.queue.Len())
			}
			f.dc.queue.ShutDown()
		})
	}
}

func TestSyncRolloutStatus(t *testing.T) {
	pds := ptr.To[int32](60)
	testTime := metav1.NewTime(time.Date(2017, 2, 15, 18, 49, 0, 0, time.UTC))
	now := metav1.NewTime(testNow)
	failedTimedOut := appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded",
		Message: "old", LastUpdateTime: testTime, LastTransitionTime: testTime}
	newRSAvailable := appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable",
		Message: "old", LastUpdateTime: testTime, LastTransitionTime: testTime}
	replicaSetUpdated := appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "ReplicaSetUpdated",
		Message: "old", LastUpdateTime: testTime, LastTransitionTime: testTime}
	progressingCond := func(status corev1.ConditionStatus, reason, msg string, update, transition metav1.Time) *appsv1.DeploymentCondition {
		return &appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing, Status: status, Reason: reason, Message: msg, LastUpdateTime: update, LastTransitionTime: transition}
	}

	tests := []struct {
		name   string
		d      *appsv1.Deployment
		allRSs []*appsv1.ReplicaSet
		newRS  *appsv1.ReplicaSet
		want   *appsv1.DeploymentCondition // the Progressing condition after the sync; nil = none
	}{
		{
			name:   "no progress deadline removes Progressing",
			d:      progressDeployment(nil, 3, 2, 2, 2, []appsv1.DeploymentCondition{replicaSetUpdated}),
			allRSs: []*appsv1.ReplicaSet{rsWithAvailable("bar", 0, 1, 1)},
			newRS:  rsWithAvailable("foo", 3, 2, 2),
		},
		{
			name:   "complete rollout with a single active replica set is not re-estimated",
			d:      progressDeployment(pds, 3, 3, 3, 3, []appsv1.DeploymentCondition{newRSAvailable}),
			allRSs: []*appsv1.ReplicaSet{rsWithAvailable("bar", 3, 3, 3)},
			want:   &newRSAvailable,
		},
		{
			name:   "progress keeps lastTransitionTime of Progressing=True",
			d:      progressDeployment(pds, 3, 2, 2, 2, []appsv1.DeploymentCondition{replicaSetUpdated}),
			allRSs: []*appsv1.ReplicaSet{rsWithAvailable("bar", 0, 1, 1)},
			newRS:  rsWithAvailable("foo", 3, 2, 2),
			want:   progressingCond(corev1.ConditionTrue, "ReplicaSetUpdated", `ReplicaSet "foo" is progressing.`, now, testTime),
		},
		{
			name:   "progress after Progressing=False updates everything",
			d:      progressDeployment(pds, 3, 2, 2, 2, []appsv1.DeploymentCondition{failedTimedOut}),
			allRSs: []*appsv1.ReplicaSet{rsWithAvailable("bar", 0, 1, 1)},
			newRS:  rsWithAvailable("foo", 3, 2, 2),
			want:   progressingCond(corev1.ConditionTrue, "ReplicaSetUpdated", `ReplicaSet "foo" is progressing.`, now, now),
		},
		{
			name:   "progress creates the condition",
			d:      progressDeployment(pds, 3, 2, 2, 2, nil),
			allRSs: []*appsv1.ReplicaSet{rsWithAvailable("bar", 0, 1, 1)},
			newRS:  rsWithAvailable("foo", 3, 2, 2),
			want:   progressingCond(corev1.ConditionTrue, "ReplicaSetUpdated", `ReplicaSet "foo" is progressing.`, now, now),
		},
		{
			name:  "complete keeps lastTransitionTime of Progressing=True",
			d:     progressDeployment(pds, 3, 3, 3, 3, []appsv1.DeploymentCondition{replicaSetUpdated}),
			newRS: rsWithAvailable("foo", 3, 3, 3),
			want:  progressingCond(corev1.ConditionTrue, "NewReplicaSetAvailable", `ReplicaSet "foo" has successfully progressed.`, now, testTime),
		},
		{
			name:  "complete after Progressing=False updates everything",
			d:     progressDeployment(pds, 3, 3, 3, 3, []appsv1.DeploymentCondition{failedTimedOut}),
			newRS: rsWithAvailable("foo", 3, 3, 3),
			want:  progressingCond(corev1.ConditionTrue, "NewReplicaSetAvailable", `ReplicaSet "foo" has successfully progressed.`, now, now),
		},
		{
			name:  "complete creates the condition",
			d:     progressDeployment(pds, 3, 3, 3, 3, nil),
			newRS: rsWithAvailable("foo", 3, 3, 3),
			want:  progressingCond(corev1.ConditionTrue, "NewReplicaSetAvailable", `ReplicaSet "foo" has successfully progressed.`, now, now),
		},
		{
			name:   "complete without a new replica set names the deployment",
			d:      progressDeployment(pds, 0, 3, 3, 3, []appsv1.DeploymentCondition{replicaSetUpdated}),
			allRSs: []*appsv1.ReplicaSet{rsWithAvailable("foo", 0, 0, 0)},
			want:   progressingCond(corev1.ConditionTrue, "NewReplicaSetAvailable", `Deployment "progress-test" has successfully progressed.`, now, testTime),
		},
		{
			name:  "deadline exceeded",
			d:     progressDeployment(pds, 3, 2, 2, 2, []appsv1.DeploymentCondition{replicaSetUpdated}),
			newRS: rsWithAvailable("foo", 3, 2, 2),
			want:  progressingCond(corev1.ConditionFalse, "ProgressDeadlineExceeded", `ReplicaSet "foo" has timed out progressing.`, now, now),
		},
		{
			name:  "existing timeout is left alone",
			d:     progressDeployment(pds, 3, 2, 2, 2, []appsv1.DeploymentCondition{failedTimedOut}),
			newRS: rsWithAvailable("foo", 3, 2, 2),
			want:  &failedTimedOut,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.server(tc.d)
			allRSs := tc.allRSs
			if tc.newRS != nil {
				allRSs = append(allRSs, tc.newRS)
			}
			if err := f.dc.syncRolloutStatus(f.ctx, allRSs, tc.newRS, tc.d, false); err != nil {
				t.Fatalf("syncRolloutStatus: %v", err)
			}
			got := progressing(tc.d)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Progressing =\n%+v\nwant\n%+v", got, tc.want)
			}
		})
	}
}

func TestSyncRolloutStatusReplicaFailure(t *testing.T) {
	failedAt := metav1.NewTime(time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC))
	failure := func(msg string) []appsv1.ReplicaSetCondition {
		return []appsv1.ReplicaSetCondition{{Type: appsv1.ReplicaSetReplicaFailure, Status: corev1.ConditionTrue, Reason: "FailedCreate", Message: msg, LastTransitionTime: failedAt}}
	}
	tests := []struct {
		name        string
		newFailure  string
		oldFailure  string
		existing    bool
		wantMessage string // "" = no ReplicaFailure condition
	}{
		{name: "new replica set failure wins", newFailure: "quota new", oldFailure: "quota old", wantMessage: "quota new"},
		{name: "old replica set failure otherwise", oldFailure: "quota old", wantMessage: "quota old"},
		{name: "cleared when no replica set fails", existing: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			d := progressDeployment(nil, 3, 0, 0, 0, nil)
			if tc.existing {
				d.Status.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentReplicaFailure, Status: corev1.ConditionTrue, Reason: "FailedCreate"}}
			}
			f.server(d)
			old := rsWithAvailable("old", 1, 0, 0)
			cur := rsWithAvailable("new", 2, 0, 0)
			if tc.oldFailure != "" {
				old.Status.Conditions = failure(tc.oldFailure)
			}
			if tc.newFailure != "" {
				cur.Status.Conditions = failure(tc.newFailure)
			}
			if err := f.dc.syncRolloutStatus(f.ctx, []*appsv1.ReplicaSet{old, cur}, cur, d, false); err != nil {
				t.Fatalf("syncRolloutStatus: %v", err)
			}
			var got *appsv1.DeploymentCondition
			for i := range d.Status.Conditions {
				if d.Status.Conditions[i].Type == appsv1.DeploymentReplicaFailure {
					got = &d.Status.Conditions[i]
				}
			}
			if tc.wantMessage == "" {
				if got != nil {
					t.Errorf("ReplicaFailure = %+v, want none", got)
				}
				return
			}
			want := appsv1.DeploymentCondition{Type: appsv1.DeploymentReplicaFailure, Status: corev1.ConditionTrue, Reason: "FailedCreate",
				Message: tc.wantMessage, LastUpdateTime: failedAt, LastTransitionTime: failedAt}
			if got == nil || !reflect.DeepEqual(*got, want) {
				t.Errorf("ReplicaFailure = %+v, want %+v", got, want)
			}
		})
	}
}

// TestSyncRolloutStatusWaitsForReplicaSetController: a status whose only news is counts waits
// while a ReplicaSet's size is unobserved (the ReplicaSet controller's status write syncs the
// Deployment again); anything else is written at once, as upstream writes it.
func TestSyncRolloutStatusWaitsForReplicaSetController(t *testing.T) {
	tests := []struct {
		name        string
		resized     bool  // this sync changed a ReplicaSet's size
		unobserved  bool  // the ReplicaSet's status.observedGeneration is behind its generation
		specChanged bool  // the Deployment's generation moved
		available   int32 // the ReplicaSet's available replicas after the step (1 before, R=3)
		wantWrite   bool
	}{
		{name: "counts moved, every size observed", available: 2, wantWrite: true},
		{name: "counts moved in a sync that resized", resized: true, available: 2},
		{name: "counts moved while a size is unobserved", unobserved: true, available: 2},
		{name: "spec change in a sync that resized", resized: true, specChanged: true, available: 2, wantWrite: true},
		{name: "rollout completes in a sync that resized", resized: true, available: 3, wantWrite: true},
		{name: "nothing moved", resized: true, available: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			d := progressDeployment(ptr.To[int32](600), 3, 0, 0, 0, nil)
			f.server(d)
			rs := rsWithAvailable("foo", 3, 3, 1)
			if err := f.dc.syncRolloutStatus(f.ctx, []*appsv1.ReplicaSet{rs}, rs, d, false); err != nil {
				t.Fatalf("first syncRolloutStatus: %v", err)
			}
			before := *d.Status.DeepCopy()
			written := len(f.actions())

			rs.Status.AvailableReplicas = tc.available
			if tc.unobserved {
				rs.Generation, rs.Status.ObservedGeneration = 2, 1
			}
			if tc.specChanged {
				d.Generation++
			}
			if err := f.dc.syncRolloutStatus(f.ctx, []*appsv1.ReplicaSet{rs}, rs, d, tc.resized); err != nil {
				t.Fatalf("syncRolloutStatus: %v", err)
			}
			got := verbs(f.actions()[written:])
			if tc.wantWrite {
				if !reflect.DeepEqual(got, []string{"update deployments/status"}) {
					t.Errorf("writes = %v, want one status write", got)
				}
				return
			}
			if len(got) != 0 {
				t.Errorf("writes = %v, want none", got)
			}
			if !reflect.DeepEqual(d.Status, before) {
				t.Errorf("status changed without a write:\n%+v\nwas\n%+v", d.Status, before)
			}
		})
	}
}
