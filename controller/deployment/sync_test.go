package deployment

import (
	"reflect"
	"sort"
	"strconv"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubegray/kubectl-gray/internal/testutil"
	"github.com/kubegray/kubectl-gray/pkg/deployutil"
)

var (
	newerTime = time.Date(2016, 5, 20, 2, 0, 0, 0, time.UTC)
	oldTime   = time.Date(2016, 5, 20, 1, 0, 0, 0, time.UTC)
	olderTime = time.Date(2016, 5, 20, 0, 0, 0, 0, time.UTC)
)

// TestScale covers upstream's TestScale table (scaling example E of docs/worked-numbers.md). Unless noted maxSurge is 0,
// and every ReplicaSet is annotated with the previous size (desired = max = previous R).
func TestScale(t *testing.T) {
	type rsCase struct {
		name         string
		size         int32
		created      time.Time
		desired, max int32
		available    int32
	}
	tests := []struct {
		name        string
		replicas    int32
		surge       int32
		unavailable int32
		newRS       *rsCase
		oldRSs      []rsCase
		want        map[string]int32
		wantWritten []string
	}{
		{
			name: "normal scaling event: 10 -> 12", replicas: 12,
			newRS:       &rsCase{name: "foo-v1", size: 10, created: newerTime, desired: 10, max: 10},
			want:        map[string]int32{"foo-v1": 12},
			wantWritten: []string{"foo-v1"},
		},
		{
			name: "normal scaling event: 10 -> 5", replicas: 5,
			newRS:       &rsCase{name: "foo-v1", size: 10, created: newerTime, desired: 10, max: 10},
			want:        map[string]int32{"foo-v1": 5},
			wantWritten: []string{"foo-v1"},
		},
		{
			name: "proportional scaling: 5 -> 10", replicas: 10,
			newRS:       &rsCase{name: "foo-v2", size: 2, created: newerTime, desired: 5, max: 5},
			oldRSs:      []rsCase{{name: "foo-v1", size: 3, created: oldTime, desired: 5, max: 5}},
			want:        map[string]int32{"foo-v2": 4, "foo-v1": 6},
			wantWritten: []string{"foo-v1", "foo-v2"},
		},
		{
			name: "proportional scaling: 5 -> 3", replicas: 3,
			newRS:       &rsCase{name: "foo-v2", size: 2, created: newerTime, desired: 5, max: 5},
			oldRSs:      []rsCase{{name: "foo-v1", size: 3, created: oldTime, desired: 5, max: 5}},
			want:        map[string]int32{"foo-v2": 1, "foo-v1": 2},
			wantWritten: []string{"foo-v1", "foo-v2"},
		},
		{
			name: "proportional scaling: 9 -> 4", replicas: 4,
			newRS:       &rsCase{name: "foo-v2", size: 8, created: newerTime, desired: 9, max: 9},
			oldRSs:      []rsCase{{name: "foo-v1", size: 1, created: oldTime, desired: 9, max: 9}},
			want:        map[string]int32{"foo-v2": 4, "foo-v1": 0},
			wantWritten: []string{"foo-v1", "foo-v2"},
		},
		{
			name: "proportional scaling: 7 -> 10", replicas: 10,
			newRS: &rsCase{name: "foo-v3", size: 2, created: newerTime, desired: 7, max: 7},
			oldRSs: []rsCase{
				{name: "foo-v2", size: 3, created: oldTime, desired: 7, max: 7},
				{name: "foo-v1", size: 2, created: olderTime, desired: 7, max: 7},
			},
			want:        map[string]int32{"foo-v3": 3, "foo-v2": 4, "foo-v1": 3},
			wantWritten: []string{"foo-v1", "foo-v2", "foo-v3"},
		},
		{
			name: "proportional scaling: 13 -> 8", replicas: 8,
			newRS: &rsCase{name: "foo-v3", size: 2, created: newerTime, desired: 13, max: 13},
			oldRSs: []rsCase{
				{name: "foo-v2", size: 8, created: oldTime, desired: 13, max: 13},
				{name: "foo-v1", size: 3, created: olderTime, desired: 13, max: 13},
			},
			want:        map[string]int32{"foo-v3": 1, "foo-v2": 5, "foo-v1": 2},
			wantWritten: []string{"foo-v1", "foo-v2", "foo-v3"},
		},
		{
			// Every fraction rounds to 0; the leftover goes to the newest of the equally large.
			name: "leftover distribution: 3 -> 4", replicas: 4,
			newRS: &rsCase{name: "foo-v3", size: 1, created: newerTime, desired: 3, max: 3},
			oldRSs: []rsCase{
				{name: "foo-v2", size: 1, created: oldTime, desired: 3, max: 3},
				{name: "foo-v1", size: 1, created: olderTime, desired: 3, max: 3},
			},
			want: map[string]int32{"foo-v3": 2, "foo-v2": 1, "foo-v1": 1},
			// The unchanged ones still get their stale annotations refreshed.
			wantWritten: []string{"foo-v1", "foo-v2", "foo-v3"},
		},
		{
			// Removing, the oldest of the equally large loses the leftover.
			name: "leftover distribution: 3 -> 2", replicas: 2,
			newRS: &rsCase{name: "foo-v3", size: 1, created: newerTime, desired: 3, max: 3},
			oldRSs: []rsCase{
				{name: "foo-v2", size: 1, created: oldTime, desired: 3, max: 3},
				{name: "foo-v1", size: 1, created: olderTime, desired: 3, max: 3},
			},
			want:        map[string]int32{"foo-v3": 1, "foo-v2": 1, "foo-v1": 0},
			wantWritten: []string{"foo-v1", "foo-v2", "foo-v3"},
		},
		{
			name: "proportional scaling (no new rs): 4 -> 5", replicas: 5,
			oldRSs: []rsCase{
				{name: "foo-v2", size: 2, created: oldTime, desired: 4, max: 4},
				{name: "foo-v1", size: 2, created: olderTime, desired: 4, max: 4},
			},
			want:        map[string]int32{"foo-v2": 3, "foo-v1": 2},
			wantWritten: []string{"foo-v1", "foo-v2"},
		},
		{
			name: "proportional scaling: 6 -> 0", replicas: 0,
			newRS: &rsCase{name: "foo-v3", size: 3, created: newerTime, desired: 6, max: 6},
			oldRSs: []rsCase{
				{name: "foo-v2", size: 2, created: oldTime, desired: 6, max: 6},
				{name: "foo-v1", size: 1, created: olderTime, desired: 6, max: 6},
			},
			want:        map[string]int32{"foo-v3": 0, "foo-v2": 0, "foo-v1": 0},
			wantWritten: []string{"foo-v1", "foo-v2", "foo-v3"},
		},
		{
			name: "proportional scaling: 0 -> 6", replicas: 6,
			newRS: &rsCase{name: "foo-v3", size: 0, created: newerTime, desired: 6, max: 6},
			oldRSs: []rsCase{
				{name: "foo-v2", size: 0, created: oldTime, desired: 6, max: 6},
				{name: "foo-v1", size: 0, created: olderTime, desired: 6, max: 6},
			},
			want:        map[string]int32{"foo-v3": 6, "foo-v2": 0, "foo-v1": 0},
			wantWritten: []string{"foo-v3"},
		},
		{
			// R was 3 with 1/1/1 and the write of foo-v2 failed after foo-v3 went to 2: only
			// foo-v2 still says 3, and round(1·5/3) = 2 gives it the missing replica.
			name: "failed rs update", replicas: 5,
			newRS: &rsCase{name: "foo-v3", size: 2, created: newerTime, desired: 5, max: 5},
			oldRSs: []rsCase{
				{name: "foo-v2", size: 1, created: oldTime, desired: 3, max: 3},
				{name: "foo-v1", size: 1, created: olderTime, desired: 5, max: 5},
			},
			want:        map[string]int32{"foo-v3": 2, "foo-v2": 2, "foo-v1": 1},
			wantWritten: []string{"foo-v2"},
		},
		{
			name: "deployment with surge pods", replicas: 20, surge: 2,
			newRS:       &rsCase{name: "foo-v2", size: 6, created: newerTime, desired: 10, max: 12},
			oldRSs:      []rsCase{{name: "foo-v1", size: 6, created: oldTime, desired: 10, max: 12}},
			want:        map[string]int32{"foo-v2": 11, "foo-v1": 11},
			wantWritten: []string{"foo-v1", "foo-v2"},
		},
		{
			name: "change both surge and size", replicas: 50, surge: 6,
			newRS:       &rsCase{name: "foo-v2", size: 5, created: newerTime, desired: 10, max: 13},
			oldRSs:      []rsCase{{name: "foo-v1", size: 8, created: oldTime, desired: 10, max: 13}},
			want:        map[string]int32{"foo-v2": 22, "foo-v1": 34},
			wantWritten: []string{"foo-v1", "foo-v2"},
		},
		{
			// The template changed too, so there is no new ReplicaSet yet.
			name: "change both size and template", replicas: 14,
			oldRSs: []rsCase{
				{name: "foo-v2", size: 7, created: newerTime, desired: 10, max: 10},
				{name: "foo-v1", size: 3, created: oldTime, desired: 10, max: 10},
			},
			want:        map[string]int32{"foo-v2": 10, "foo-v1": 4},
			wantWritten: []string{"foo-v1", "foo-v2"},
		},
		{
			// Not in upstream's table: stale max-replicas annotations (100 and 1) make foo-v2's
			// fraction round(5·1/100)−5 = −5 and foo-v1's round(4·1/1)−4 = 0, so the leftover −3
			// would take the largest below zero; it is clamped at 0.
			name: "leftover is clamped at zero", replicas: 1,
			oldRSs: []rsCase{
				{name: "foo-v2", size: 5, created: oldTime, desired: 100, max: 100},
				{name: "foo-v1", size: 4, created: olderTime, desired: 1, max: 1},
			},
			want:        map[string]int32{"foo-v2": 0, "foo-v1": 4},
			wantWritten: []string{"foo-v2"},
		},
		{
			name: "saturated but broken new replica set does not affect old pods", replicas: 2, surge: 1, unavailable: 1,
			newRS:  &rsCase{name: "foo-v2", size: 2, created: newerTime, desired: 2, max: 3, available: 0},
			oldRSs: []rsCase{{name: "foo-v1", size: 1, created: oldTime, desired: 2, max: 3}},
			want:   map[string]int32{"foo-v2": 2, "foo-v1": 1},
		},
	}

	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			d := newDeployment("foo", tc.replicas, testutil.WithRollingUpdate(intstr.FromInt32(tc.surge), intstr.FromInt32(tc.unavailable)))
			build := func(c rsCase) *appsv1.ReplicaSet {
				rs := testutil.ReplicaSet(c.name, c.size, testutil.RSCreatedAt(c.created), testutil.RSReplicasAnnotations(c.desired, c.max))
				rs.Status.AvailableReplicas = c.available
				f.server(rs)
				return rs
			}
			var newReplicaSet *appsv1.ReplicaSet
			if tc.newRS != nil {
				newReplicaSet = build(*tc.newRS)
			}
			var oldReplicaSets []*appsv1.ReplicaSet
			for _, c := range tc.oldRSs {
				oldReplicaSets = append(oldReplicaSets, build(c))
			}

			if err := f.dc.scale(f.ctx, d, newReplicaSet, oldReplicaSets); err != nil {
				t.Fatalf("scale: %v", err)
			}

			got := map[string]int32{}
			for _, rs := range deployutil.WithNewRS(oldReplicaSets, newReplicaSet) {
				got[rs.Name] = *rs.Spec.Replicas
			}
			written := []string{}
			for _, rs := range updatedReplicaSets(f.actions()) {
				got[rs.Name] = *rs.Spec.Replicas
				written = append(written, rs.Name)
				wantDesired, wantMax := itoa(tc.replicas), itoa(tc.replicas+tc.surge)
				if rs.Annotations["deployment.kubernetes.io/desired-replicas"] != wantDesired || rs.Annotations["deployment.kubernetes.io/max-replicas"] != wantMax {
					t.Errorf("%s written with desired/max %s/%s, want %s/%s", rs.Name,
						rs.Annotations["deployment.kubernetes.io/desired-replicas"], rs.Annotations["deployment.kubernetes.io/max-replicas"], wantDesired, wantMax)
				}
			}
			sort.Strings(written)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("sizes = %v, want %v", got, tc.want)
			}
			wantWritten := tc.wantWritten
			if wantWritten == nil {
				wantWritten = []string{}
			}
			if !reflect.DeepEqual(written, wantWritten) {
				t.Errorf("written = %v, want %v", written, wantWritten)
			}
		})
	}
}

// TestProportionalScalingThroughSync drives the worked examples of scaling examples A–D of docs/worked-numbers.md through
// syncDeployment (paused syncs and unpaused scaling events).
func TestProportionalScalingThroughSync(t *testing.T) {
	tests := []struct {
		name                   string
		paused                 bool
		replicas               int32
		surge, unavailable     intstr.IntOrString
		oldSize, newSize       int32
		oldAvailable           int32
		annDesired, annMax     int32
		wantOld, wantNew       int32
		wantDesired, wantMax   string
		wantActions            []string
		wantProgressingPaused  bool
		progressDeadline       bool
		startProgressingReason string
	}{
		{
			name: "A pause mid-rollout fills up to R+surge on the largest", paused: true, replicas: 10,
			surge: intstr.FromString("25%"), unavailable: intstr.FromString("25%"),
			oldSize: 8, newSize: 3, oldAvailable: 8, annDesired: 10, annMax: 13,
			wantOld: 10, wantNew: 3, wantDesired: "10", wantMax: "13",
			progressDeadline: true, startProgressingReason: "ReplicaSetUpdated", wantProgressingPaused: true,
			wantActions: []string{"update deployments/status", "update replicasets", "update deployments/status"},
		},
		{
			name: "A scale to 20 while paused", paused: true, replicas: 20,
			surge: intstr.FromString("25%"), unavailable: intstr.FromString("25%"),
			oldSize: 10, newSize: 3, oldAvailable: 10, annDesired: 10, annMax: 13,
			wantOld: 19, wantNew: 6, wantDesired: "20", wantMax: "25",
			wantActions: []string{"update replicasets", "update replicasets", "update deployments/status"},
		},
		{
			name: "A scale to 5 while paused", paused: true, replicas: 5,
			surge: intstr.FromString("25%"), unavailable: intstr.FromString("25%"),
			oldSize: 19, newSize: 6, oldAvailable: 19, annDesired: 20, annMax: 25,
			wantOld: 5, wantNew: 2, wantDesired: "5", wantMax: "7",
			wantActions: []string{"update replicasets", "update replicasets", "update deployments/status"},
		},
		{
			name: "B scale to 20 mid-rollout", replicas: 20,
			surge: intstr.FromString("25%"), unavailable: intstr.FromString("25%"),
			oldSize: 8, newSize: 5, oldAvailable: 8, annDesired: 10, annMax: 13,
			wantOld: 15, wantNew: 10, wantDesired: "20", wantMax: "25",
			wantActions: []string{"update replicasets", "update replicasets", "update deployments/status"},
		},
		{
			name: "B then scale to 5", replicas: 5,
			surge: intstr.FromString("25%"), unavailable: intstr.FromString("25%"),
			oldSize: 15, newSize: 10, oldAvailable: 15, annDesired: 20, annMax: 25,
			wantOld: 4, wantNew: 3, wantDesired: "5", wantMax: "7",
			wantActions: []string{"update replicasets", "update replicasets", "update deployments/status"},
		},
		{
			name: "C conformance proportional scaling to 30", replicas: 30,
			surge: intstr.FromInt32(3), unavailable: intstr.FromInt32(2),
			oldSize: 8, newSize: 5, oldAvailable: 8, annDesired: 10, annMax: 13,
			wantOld: 20, wantNew: 13, wantDesired: "30", wantMax: "33",
			wantActions: []string{"update replicasets", "update replicasets", "update deployments/status"},
		},
		{
			name: "D integration 100 to 120", replicas: 120,
			surge: intstr.FromInt32(20), unavailable: intstr.FromInt32(0),
			oldSize: 100, newSize: 20, oldAvailable: 100, annDesired: 100, annMax: 120,
			wantOld: 117, wantNew: 23, wantDesired: "120", wantMax: "140",
			wantActions: []string{"update replicasets", "update replicasets", "update deployments/status"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			d := newDeployment("foo", tc.replicas, testutil.WithRollingUpdate(tc.surge, tc.unavailable), testutil.WithImage("v2"))
			d.Spec.Paused = tc.paused
			d.Annotations["deployment.kubernetes.io/revision"] = "2"
			if tc.progressDeadline {
				testutil.WithProgressDeadline(600)(d)
				d.Status.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: tc.startProgressingReason}}
			}
			oldD := newDeployment("foo", tc.replicas, testutil.WithImage("v1"))
			oldRS := testutil.ReplicaSet("foo-old", tc.oldSize, testutil.RSOwnedBy(oldD), testutil.RSRevision(1), testutil.RSReplicasAnnotations(tc.annDesired, tc.annMax))
			oldRS.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(d, controllerKind)}
			oldRS.CreationTimestamp = metav1.NewTime(oldTime)
			oldRS.Status = appsv1.ReplicaSetStatus{Replicas: tc.oldSize, ReadyReplicas: tc.oldAvailable, AvailableReplicas: tc.oldAvailable}
			newReplicaSet := testutil.ReplicaSet("foo-new", tc.newSize, testutil.RSOwnedBy(d), testutil.RSRevision(2), testutil.RSReplicasAnnotations(tc.annDesired, tc.annMax))
			newReplicaSet.CreationTimestamp = metav1.NewTime(newerTime)
			newReplicaSet.Status = appsv1.ReplicaSetStatus{Replicas: tc.newSize}
			f.both(d, oldRS, newReplicaSet)

			if err := f.dc.syncDeployment(f.ctx, "default/foo"); err != nil {
				t.Fatalf("syncDeployment: %v", err)
			}
			actions := f.actions()
			if got := verbs(actions); !reflect.DeepEqual(got, tc.wantActions) {
				t.Fatalf("actions = %v, want %v", got, tc.wantActions)
			}
			got := map[string]int32{"foo-old": tc.oldSize, "foo-new": tc.newSize}
			for _, rs := range updatedReplicaSets(actions) {
				got[rs.Name] = *rs.Spec.Replicas
				if rs.Annotations["deployment.kubernetes.io/desired-replicas"] != tc.wantDesired || rs.Annotations["deployment.kubernetes.io/max-replicas"] != tc.wantMax {
					t.Errorf("%s annotated %s/%s, want %s/%s", rs.Name, rs.Annotations["deployment.kubernetes.io/desired-replicas"],
						rs.Annotations["deployment.kubernetes.io/max-replicas"], tc.wantDesired, tc.wantMax)
				}
			}
			if want := map[string]int32{"foo-old": tc.wantOld, "foo-new": tc.wantNew}; !reflect.DeepEqual(got, want) {
				t.Errorf("sizes = %v, want %v", got, want)
			}
			if tc.wantProgressingPaused {
				cond := progressing(lastStatusWrite(t, actions))
				if cond == nil || cond.Status != corev1.ConditionUnknown || cond.Reason != "DeploymentPaused" {
					t.Errorf("Progressing = %+v, want Unknown/DeploymentPaused", cond)
				}
			}
		})
	}
}

// TestStaleDesiredReplicasBlocksRollout pins the pitfall of docs/worked-numbers.md ("stale desired-replicas"): a single right-sized
// ReplicaSet with a stale desired-replicas annotation makes every sync a scaling event that
// writes nothing, so a template change never creates a new ReplicaSet.
func TestStaleDesiredReplicasBlocksRollout(t *testing.T) {
	f := newFixture(t)
	d := newDeployment("foo", 3, testutil.WithImage("v2"))
	oldD := newDeployment("foo", 3, testutil.WithImage("v1"))
	rs := testutil.ReplicaSet("foo-v1", 3, testutil.RSOwnedBy(oldD), testutil.RSRevision(1), testutil.RSReplicasAnnotations(5, 5))
	f.both(d, rs)

	if err := f.dc.syncDeployment(f.ctx, "default/foo"); err != nil {
		t.Fatalf("syncDeployment: %v", err)
	}
	if got, want := verbs(f.actions()), []string{"update deployments/status"}; !reflect.DeepEqual(got, want) {
		t.Errorf("actions = %v, want only %v (no create, no scale)", got, want)
	}
}

func deletedNames(actions []clienttesting.Action) []string {
	names := []string{}
	for _, a := range actions {
		if del, ok := a.(clienttesting.DeleteActionImpl); ok && del.GetResource().Resource == "replicasets" {
			names = append(names, del.GetName())
		}
	}
	sort.Strings(names)
	return names
}

func progressing(d *appsv1.Deployment) *appsv1.DeploymentCondition {
	for i := range d.Status.Conditions {
		if d.Status.Conditions[i].Type == appsv1.DeploymentProgressing {
			return &d.Status.Conditions[i]
		}
	}
	return nil
}

func itoa(i int32) string { return strconv.Itoa(int(i)) }
