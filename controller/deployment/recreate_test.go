package deployment

import (
	"reflect"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/kubegray/kubectl-gray/internal/testutil"
)

func TestScaleDownOldReplicaSets(t *testing.T) {
	f := newFixture(t)
	d := newDeployment("foo", 3, testutil.WithRecreate())
	old := testutil.ReplicaSet("foo-0", 3, testutil.RSOwnedBy(d))
	f.server(old)
	oldRSs := []*appsv1.ReplicaSet{old}

	scaled, err := f.dc.scaleDownOldReplicaSetsForRecreate(f.ctx, oldRSs, d)
	if err != nil {
		t.Fatalf("scaleDownOldReplicaSetsForRecreate: %v", err)
	}
	if !scaled {
		t.Error("scaled = false, want true")
	}
	if *oldRSs[0].Spec.Replicas != 0 {
		t.Errorf("old replica set in the slice has %d replicas, want the written 0", *oldRSs[0].Spec.Replicas)
	}
	written := updatedReplicaSets(f.actions())
	if len(written) != 1 || *written[0].Spec.Replicas != 0 {
		t.Fatalf("writes = %v, want foo-0 at 0", sizesOf(written))
	}
	// Recreate has no surge: both annotations are R.
	if a := written[0].Annotations; a["deployment.kubernetes.io/desired-replicas"] != "3" || a["deployment.kubernetes.io/max-replicas"] != "3" {
		t.Errorf("annotations = %v, want desired 3 and max 3", a)
	}
	if got, want := f.events(), []string{"Normal ScalingReplicaSet Scaled down replica set foo-0 from 3 to 0"}; !reflect.DeepEqual(got, want) {
		t.Errorf("events = %v, want %v", got, want)
	}
}

func TestOldPodsRunning(t *testing.T) {
	withStatus := func(name string, spec, status int32) *appsv1.ReplicaSet {
		rs := testutil.ReplicaSet(name, spec, testutil.RSCreatedAt(oldTime))
		rs.Status.Replicas = status
		return rs
	}
	pod := func(phase corev1.PodPhase) *corev1.Pod { return &corev1.Pod{Status: corev1.PodStatus{Phase: phase}} }
	tests := []struct {
		name   string
		newRS  *appsv1.ReplicaSet
		oldRSs []*appsv1.ReplicaSet
		podMap map[types.UID][]*corev1.Pod
		want   bool
	}{
		{name: "no old replica sets", want: false},
		{
			name:   "old replica sets with running pods",
			oldRSs: []*appsv1.ReplicaSet{withStatus("a", 0, 0), withStatus("b", 0, 0)},
			podMap: map[types.UID][]*corev1.Pod{"uid-a": {pod(corev1.PodRunning)}, "uid-b": {pod(corev1.PodRunning)}},
			want:   true,
		},
		{name: "no pods but non-zero status replicas", oldRSs: []*appsv1.ReplicaSet{withStatus("a", 0, 1)}, want: true},
		{name: "no pods and zero status replicas", oldRSs: []*appsv1.ReplicaSet{withStatus("a", 0, 0)}, want: false},
		{
			name:   "only terminal pods",
			oldRSs: []*appsv1.ReplicaSet{withStatus("a", 0, 0)},
			podMap: map[types.UID][]*corev1.Pod{"uid-a": {pod(corev1.PodFailed), pod(corev1.PodSucceeded)}},
			want:   false,
		},
		{
			name:   "pod in unknown phase",
			oldRSs: []*appsv1.ReplicaSet{withStatus("a", 0, 0)},
			podMap: map[types.UID][]*corev1.Pod{"uid-a": {pod(corev1.PodUnknown)}},
			want:   true,
		},
		{
			name:   "pending pod",
			oldRSs: []*appsv1.ReplicaSet{withStatus("a", 0, 0)},
			podMap: map[types.UID][]*corev1.Pod{"uid-a": {pod(corev1.PodPending)}},
			want:   true,
		},
		{
			name:   "running pod",
			oldRSs: []*appsv1.ReplicaSet{withStatus("a", 0, 0)},
			podMap: map[types.UID][]*corev1.Pod{"uid-a": {pod(corev1.PodRunning)}},
			want:   true,
		},
		{
			name:   "terminal pods and a pending one",
			oldRSs: []*appsv1.ReplicaSet{withStatus("a", 0, 0)},
			podMap: map[types.UID][]*corev1.Pod{
				"uid-a": {pod(corev1.PodFailed), pod(corev1.PodSucceeded)},
				"uid-b": {},
				"uid-c": {pod(corev1.PodPending)},
			},
			want: true,
		},
		{
			name:   "running pods of the new replica set do not count",
			newRS:  withStatus("new", 1, 0),
			oldRSs: []*appsv1.ReplicaSet{withStatus("a", 0, 0)},
			podMap: map[types.UID][]*corev1.Pod{"uid-new": {pod(corev1.PodRunning)}},
			want:   false,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := oldPodsRunning(tc.newRS, tc.oldRSs, tc.podMap); got != tc.want {
				t.Errorf("oldPodsRunning = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestRolloutRecreate walks one Recreate rollout through syncDeployment: old replicas go first,
// the new ReplicaSet only appears once no old pod runs (terminating pods still count).
func TestRolloutRecreate(t *testing.T) {
	tests := []struct {
		name        string
		oldSpec     int32
		oldStatus   int32
		pods        []corev1.PodPhase
		terminating bool
		wantActions []string
		wantCreate  bool
	}{
		{name: "scale old down first", oldSpec: 3, oldStatus: 3, wantActions: []string{"update replicasets", "update deployments/status"}},
		{name: "wait for old status replicas", oldStatus: 1, wantActions: []string{"update deployments/status"}},
		{name: "wait for a terminating pod", pods: []corev1.PodPhase{corev1.PodRunning}, terminating: true, wantActions: []string{"update deployments/status"}},
		{
			name: "terminal pods do not block", pods: []corev1.PodPhase{corev1.PodSucceeded, corev1.PodFailed},
			wantActions: []string{"create replicasets", "update deployments/status", "update deployments/status"}, wantCreate: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			d := newDeployment("foo", 3, testutil.WithRecreate(), testutil.WithImage("v2"))
			d.Annotations["deployment.kubernetes.io/revision"] = "1"
			old := testutil.ReplicaSet("foo-v1", tc.oldSpec, testutil.RSOwnedBy(newDeployment("foo", 3, testutil.WithImage("v1"))), testutil.RSRevision(1), testutil.RSReplicasAnnotations(3, 3))
			old.Status.Replicas = tc.oldStatus
			f.both(d, old)
			for i, phase := range tc.pods {
				p := podOf(old, "foo-v1-"+string(rune('a'+i)), phase)
				if tc.terminating {
					p.DeletionTimestamp = ptr.To(metav1.NewTime(testNow))
				}
				f.cache(p)
			}

			if err := f.dc.syncDeployment(f.ctx, "default/foo"); err != nil {
				t.Fatalf("syncDeployment: %v", err)
			}
			actions := f.actions()
			if got := verbs(actions); !reflect.DeepEqual(got, tc.wantActions) {
				t.Fatalf("actions = %v, want %v", got, tc.wantActions)
			}
			if !tc.wantCreate {
				return
			}
			created := actions[0].(clienttesting.CreateActionImpl).GetObject().(*appsv1.ReplicaSet)
			if *created.Spec.Replicas != 3 {
				t.Errorf("created with %d replicas, want R=3", *created.Spec.Replicas)
			}
			if a := created.Annotations; a["deployment.kubernetes.io/desired-replicas"] != "3" || a["deployment.kubernetes.io/max-replicas"] != "3" || a["deployment.kubernetes.io/revision"] != "2" {
				t.Errorf("created annotations = %v, want revision 2, desired 3, max 3", a)
			}
			if got, want := f.events(), []string{"Normal ScalingReplicaSet Scaled up replica set " + created.Name + " from 0 to 3"}; !reflect.DeepEqual(got, want) {
				t.Errorf("events = %v, want %v", got, want)
			}
		})
	}
}
