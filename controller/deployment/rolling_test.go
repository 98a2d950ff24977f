package deployment

import (
	"reflect"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubegray/kubectl-gray/internal/testutil"
)

func TestDeploymentController_reconcileNewReplicaSet(t *testing.T) {
	tests := []struct {
		name        string
		surge       int32
		oldReplicas int32
		newReplicas int32
		wantScaled  bool
		wantNew     int32
	}{
		{name: "no surge and old at R: nothing", surge: 0, oldReplicas: 10, newReplicas: 0},
		{name: "surge 2 over a full old RS", surge: 2, oldReplicas: 10, newReplicas: 0, wantScaled: true, wantNew: 2},
		{name: "old half gone", surge: 2, oldReplicas: 5, newReplicas: 0, wantScaled: true, wantNew: 7},
		{name: "already at R+surge", surge: 2, oldReplicas: 10, newReplicas: 2},
		{name: "above R scales down", surge: 2, oldReplicas: 2, newReplicas: 11, wantScaled: true, wantNew: 10},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			newReplicaSet := testutil.ReplicaSet("foo-new", tc.newReplicas, testutil.RSCreatedAt(newerTime))
			oldReplicaSet := testutil.ReplicaSet("foo-old", tc.oldReplicas, testutil.RSCreatedAt(oldTime))
			f.server(newReplicaSet, oldReplicaSet)
			d := newDeployment("foo", 10, testutil.WithRollingUpdate(intstr.FromInt32(tc.surge), intstr.FromInt32(0)))

			scaled, err := f.dc.reconcileNewReplicaSet(f.ctx, []*appsv1.ReplicaSet{newReplicaSet, oldReplicaSet}, newReplicaSet, d)
			if err != nil {
				t.Fatalf("reconcileNewReplicaSet: %v", err)
			}
			written := updatedReplicaSets(f.actions())
			if scaled != tc.wantScaled {
				t.Errorf("scaled = %v, want %v", scaled, tc.wantScaled)
			}
			if !tc.wantScaled {
				if len(written) != 0 {
					t.Errorf("wrote %d replica sets, want none", len(written))
				}
				return
			}
			if len(written) != 1 || written[0].Name != "foo-new" || *written[0].Spec.Replicas != tc.wantNew {
				t.Errorf("writes = %v, want foo-new at %d", sizesOf(written), tc.wantNew)
			}
		})
	}
}

func TestDeploymentController_reconcileOldReplicaSets(t *testing.T) {
	tests := []struct {
		name          string
		unavailable   int32
		oldReplicas   int32
		newReplicas   int32
		oldAvailable  int32
		newAvailable  int32
		wantScaled    bool
		wantOldWrites []int32
	}{
		// maxUnavailable 0 with maxSurge 0 resolves to 1.
		{name: "fencepost unavailable 1", unavailable: 0, oldReplicas: 10, oldAvailable: 10, wantScaled: true, wantOldWrites: []int32{9}},
		{name: "unavailable 2", unavailable: 2, oldReplicas: 10, oldAvailable: 10, wantScaled: true, wantOldWrites: []int32{8}},
		{name: "two unhealthy old replicas are cleaned up", unavailable: 2, oldReplicas: 10, oldAvailable: 8, wantScaled: true, wantOldWrites: []int32{8}},
		{name: "one unhealthy cleaned up and one healthy scaled down", unavailable: 2, oldReplicas: 10, oldAvailable: 9, wantScaled: true, wantOldWrites: []int32{9, 8}},
		{name: "unavailable new pods block scale down", unavailable: 2, oldReplicas: 8, newReplicas: 2, oldAvailable: 8, newAvailable: 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			newReplicaSet := testutil.ReplicaSet("foo-new", tc.newReplicas, testutil.RSCreatedAt(newerTime))
			newReplicaSet.Status.AvailableReplicas = tc.newAvailable
			oldReplicaSet := testutil.ReplicaSet("foo-old", tc.oldReplicas, testutil.RSCreatedAt(oldTime))
			oldReplicaSet.Status.AvailableReplicas = tc.oldAvailable
			f.server(newReplicaSet, oldReplicaSet)
			d := newDeployment("foo", 10, testutil.WithRollingUpdate(intstr.FromInt32(0), intstr.FromInt32(tc.unavailable)))

			scaled, err := f.dc.reconcileOldReplicaSets(f.ctx, []*appsv1.ReplicaSet{oldReplicaSet, newReplicaSet}, []*appsv1.ReplicaSet{oldReplicaSet}, newReplicaSet, d)
			if err != nil {
				t.Fatalf("reconcileOldReplicaSets: %v", err)
			}
			if scaled != tc.wantScaled {
				t.Errorf("scaled = %v, want %v", scaled, tc.wantScaled)
			}
			var got []int32
			for _, rs := range updatedReplicaSets(f.actions()) {
				if rs.Name != "foo-old" {
					t.Errorf("wrote %s, only foo-old may be scaled", rs.Name)
				}
				got = append(got, *rs.Spec.Replicas)
			}
			if !reflect.DeepEqual(got, tc.wantOldWrites) {
				t.Errorf("old replica set writes = %v, want %v", got, tc.wantOldWrites)
			}
		})
	}
}

func TestDeploymentController_cleanupUnhealthyReplicas(t *testing.T) {
	tests := []struct {
		name            string
		oldReplicas     int32
		available       int32
		maxCleanupCount int32
		wantCleanup     int32
	}{
		{name: "bounded by max", oldReplicas: 10, available: 8, maxCleanupCount: 1, wantCleanup: 1},
		{name: "bounded by unhealthy", oldReplicas: 10, available: 8, maxCleanupCount: 3, wantCleanup: 2},
		{name: "max 0", oldReplicas: 10, available: 8, maxCleanupCount: 0, wantCleanup: 0},
		{name: "all healthy", oldReplicas: 10, available: 10, maxCleanupCount: 3, wantCleanup: 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			oldReplicaSet := testutil.ReplicaSet("foo-v2", tc.oldReplicas, testutil.RSCreatedAt(oldTime))
			oldReplicaSet.Status.AvailableReplicas = tc.available
			f.server(oldReplicaSet)
			d := newDeployment("foo", 10, testutil.WithRollingUpdate(intstr.FromInt32(2), intstr.FromInt32(2)))

			rss, cleaned, err := f.dc.cleanupUnhealthyReplicas(f.ctx, []*appsv1.ReplicaSet{oldReplicaSet}, d, tc.maxCleanupCount)
			if err != nil {
				t.Fatalf("cleanupUnhealthyReplicas: %v", err)
			}
			if cleaned != tc.wantCleanup {
				t.Errorf("cleaned up %d, want %d", cleaned, tc.wantCleanup)
			}
			if got, want := *rss[0].Spec.Replicas, tc.oldReplicas-tc.wantCleanup; got != want {
				t.Errorf("returned replica set has %d replicas, want %d", got, want)
			}
		})
	}
}

func TestDeploymentController_scaleDownOldReplicaSetsForRollingUpdate(t *testing.T) {
	tests := []struct {
		name        string
		unavailable int32
		available   int32
		oldReplicas int32
		wantScaled  int32
		wantOld     int32
	}{
		{name: "fencepost unavailable 1", unavailable: 0, available: 10, oldReplicas: 10, wantScaled: 1, wantOld: 9},
		{name: "unavailable 2", unavailable: 2, available: 10, oldReplicas: 10, wantScaled: 2, wantOld: 8},
		{name: "availability at the minimum", unavailable: 2, available: 8, oldReplicas: 10},
		{name: "no old replicas", unavailable: 2, available: 10, oldReplicas: 0},
		{name: "availability below the minimum", unavailable: 2, available: 1, oldReplicas: 10},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			oldReplicaSet := testutil.ReplicaSet("foo-v2", tc.oldReplicas, testutil.RSCreatedAt(oldTime))
			oldReplicaSet.Status.AvailableReplicas = tc.available
			f.server(oldReplicaSet)
			d := newDeployment("foo", 10, testutil.WithRollingUpdate(intstr.FromInt32(0), intstr.FromInt32(tc.unavailable)))

			scaled, err := f.dc.scaleDownOldReplicaSetsForRollingUpdate(f.ctx, []*appsv1.ReplicaSet{oldReplicaSet}, []*appsv1.ReplicaSet{oldReplicaSet}, d)
			if err != nil {
				t.Fatalf("scaleDownOldReplicaSetsForRollingUpdate: %v", err)
			}
			if scaled != tc.wantScaled {
				t.Errorf("scaled down %d, want %d", scaled, tc.wantScaled)
			}
			written := updatedReplicaSets(f.actions())
			if tc.wantScaled == 0 {
				if len(written) != 0 {
					t.Errorf("writes = %v, want none", sizesOf(written))
				}
				return
			}
			if len(written) != 1 || *written[0].Spec.Replicas != tc.wantOld {
				t.Errorf("writes = %v, want foo-v2 at %d", sizesOf(written), tc.wantOld)
			}
		})
	}
}

// TestRolloutRollingFirstStep is sync 1 of the rolling sequence of docs/worked-numbers.md: R=10, 25%/25%
// (surge 3, unavailable 2), v1 at 10 available, template changed to v2.
func TestRolloutRollingFirstStep(t *testing.T) {
	f := newFixture(t)
	d := newDeployment("foo", 10, testutil.WithRollingUpdate(intstr.FromString("25%"), intstr.FromString("25%")), testutil.WithImage("v2"), testutil.WithProgressDeadline(600))
	d.Annotations["deployment.kubernetes.io/revision"] = "1"
	d.Status = appsv1.DeploymentStatus{Replicas: 10, UpdatedReplicas: 10, ReadyReplicas: 10, AvailableReplicas: 10}
	v1 := testutil.ReplicaSet("foo-v1", 10, testutil.RSOwnedBy(newDeployment("foo", 10, testutil.WithImage("v1"))), testutil.RSRevision(1), testutil.RSReplicasAnnotations(10, 13))
	v1.Status = appsv1.ReplicaSetStatus{Replicas: 10, ReadyReplicas: 10, AvailableReplicas: 10}
	f.both(d, v1)

	if err := f.dc.syncDeployment(f.ctx, "default/foo"); err != nil {
		t.Fatalf("syncDeployment: %v", err)
	}
	actions := f.actions()
	if got, want := verbs(actions), []string{"create replicasets", "update deployments/status", "update replicasets", "update deployments/status"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("actions = %v, want %v", got, want)
	}
	created := actions[0].(clienttesting.CreateActionImpl).GetObject().(*appsv1.ReplicaSet)
	if *created.Spec.Replicas != 3 {
		t.Errorf("new replica set created with %d, want 3", *created.Spec.Replicas)
	}
	if got, want := created.Annotations, map[string]string{
		"deployment.kubernetes.io/revision":         "2",
		"deployment.kubernetes.io/desired-replicas": "10",
		"deployment.kubernetes.io/max-replicas":     "13",
	}; !reflect.DeepEqual(got, want) {
		t.Errorf("created annotations = %v, want %v", got, want)
	}
	first := actions[1].(clienttesting.UpdateActionImpl).GetObject().(*appsv1.Deployment)
	wantCond := appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetCreated",
		Message: `Created new replica set "` + created.Name + `"`, LastUpdateTime: metav1.NewTime(testNow), LastTransitionTime: metav1.NewTime(testNow)}
	if c := progressing(first); c == nil || !reflect.DeepEqual(*c, wantCond) || first.Annotations["deployment.kubernetes.io/revision"] != "2" {
		t.Errorf("first status write: revision %q, Progressing %+v; want 2 and %+v", first.Annotations["deployment.kubernetes.io/revision"], c, wantCond)
	}
	if written := updatedReplicaSets(actions); written[0].Name != "foo-v1" || *written[0].Spec.Replicas != 8 {
		t.Errorf("scaled %s to %d, want foo-v1 to 8", written[0].Name, *written[0].Spec.Replicas)
	}
	events := f.events()
	want := []string{
		"Normal ScalingReplicaSet Scaled up replica set " + created.Name + " from 0 to 3",
		"Normal ScalingReplicaSet Scaled down replica set foo-v1 from 10 to 8",
	}
	if !reflect.DeepEqual(events, want) {
		t.Errorf("events = %v, want %v", events, want)
	}
	if !strings.HasPrefix(created.Name, "foo-") {
		t.Errorf("created name %q does not start with the deployment name", created.Name)
	}
}

// TestRolloutRollingCleansUpWhenComplete checks that history is trimmed once the status read at
// the start of the sync says the rollout is complete.
func TestRolloutRollingCleansUpWhenComplete(t *testing.T) {
	f := newFixture(t)
	d := newDeployment("foo", 2, testutil.WithRevisionHistoryLimit(0), testutil.WithImage("v2"))
	d.Annotations["deployment.kubernetes.io/revision"] = "2"
	d.Status = appsv1.DeploymentStatus{Replicas: 2, UpdatedReplicas: 2, ReadyReplicas: 2, AvailableReplicas: 2}
	cur := testutil.ReplicaSet("foo-v2", 2, testutil.RSOwnedBy(d), testutil.RSRevision(2), testutil.RSReplicasAnnotations(2, 2))
	cur.Status = appsv1.ReplicaSetStatus{Replicas: 2, ReadyReplicas: 2, AvailableReplicas: 2}
	old := testutil.ReplicaSet("foo-v1", 0, testutil.RSOwnedBy(newDeployment("foo", 2, testutil.WithImage("v1"))), testutil.RSRevision(1), testutil.RSReplicasAnnotations(2, 2))
	f.both(d, cur, old)

	if err := f.dc.syncDeployment(f.ctx, "default/foo"); err != nil {
		t.Fatalf("syncDeployment: %v", err)
	}
	if got := deletedNames(f.actions()); !reflect.DeepEqual(got, []string{"foo-v1"}) {
		t.Errorf("deleted %v, want [foo-v1]", got)
	}
}

func sizesOf(rss []*appsv1.ReplicaSet) map[string]int32 {
	out := map[string]int32{}
	for _, rs := range rss {
		out[rs.Name] = *rs.Spec.Replicas
	}
	return out
}
