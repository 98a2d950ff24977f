package deployment

// Which ReplicaSets and pods a Deployment claims: controller refs decide, orphans are adopted
// and ReplicaSets that no longer match released, and the pod map is keyed by ReplicaSet UID.

import (
	"encoding/json"
	"reflect"
	"sort"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubegray/kubectl-gray/internal/testutil"
)

func TestGetReplicaSetsForDeployment(t *testing.T) {
	f := newFixture(t)
	// Same labels; controller refs decide.
	d1 := newDeployment("foo", 1)
	d2 := newDeployment("bar", 1)
	rs1 := testutil.ReplicaSet("rs1", 1, testutil.RSOwnedBy(d1))
	rs2 := testutil.ReplicaSet("rs2", 1, testutil.RSOwnedBy(d2))
	f.both(d1, d2, rs1, rs2)

	for _, tc := range []struct {
		d    *appsv1.Deployment
		want string
	}{{d1, "rs1"}, {d2, "rs2"}} {
		got, err := f.dc.getReplicaSetsForDeployment(f.ctx, tc.d)
		if err != nil {
			t.Fatalf("getReplicaSetsForDeployment(%s): %v", tc.d.Name, err)
		}
		if len(got) != 1 || got[0].Name != tc.want {
			t.Errorf("getReplicaSetsForDeployment(%s) = %v, want [%s]", tc.d.Name, rsNames(got), tc.want)
		}
	}
	if got := verbs(f.actions()); len(got) != 0 {
		t.Errorf("actions = %v, want none", got)
	}
}

func TestGetReplicaSetsForDeploymentAdoptRelease(t *testing.T) {
	f := newFixture(t)
	d := newDeployment("foo", 1)
	// Matching orphan: adopted. Another owner's non-controller reference is kept.
	rsAdopt := testutil.ReplicaSet("rsAdopt", 1, testutil.RSOwnedBy(d))
	rsAdopt.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "other", UID: "uid-other"}}
	// A second orphan: the uncached recheck still happens only once per sync.
	rsAdopt2 := testutil.ReplicaSet("rsAdopt2", 1, testutil.RSOwnedBy(d))
	rsAdopt2.OwnerReferences = nil
	// Owned but no longer matching: released.
	rsRelease := testutil.ReplicaSet("rsRelease", 1, testutil.RSOwnedBy(d))
	rsRelease.Labels = map[string]string{"foo": "notbar"}
	f.both(d, rsAdopt, rsAdopt2, rsRelease)

	got, err := f.dc.getReplicaSetsForDeployment(f.ctx, d)
	if err != nil {
		t.Fatalf("getReplicaSetsForDeployment: %v", err)
	}
	names := rsNames(got)
	sort.Strings(names)
	if !reflect.DeepEqual(names, []string{"rsAdopt", "rsAdopt2"}) {
		t.Errorf("claimed = %v, want [rsAdopt rsAdopt2]", names)
	}

	actions := f.actions()
	if len(actions) != 4 {
		t.Fatalf("actions = %v, want one get and three patches", verbs(actions))
	}
	patches := map[string]string{}
	getSeen := false
	for _, a := range actions {
		switch a := a.(type) {
		case clienttesting.GetActionImpl:
			if _, adopted := patches["rsAdopt"]; adopted {
				t.Error("the uncached recheck happened after the adoption patch")
			}
			if getSeen {
				t.Error("more than one uncached GET in one claim")
			}
			getSeen = true
		case clienttesting.PatchActionImpl:
			if a.GetPatchType() != types.StrategicMergePatchType {
				t.Errorf("patch type = %s, want strategic merge", a.GetPatchType())
			}
			patches[a.GetName()] = string(a.GetPatch())
		}
	}
	if !getSeen {
		t.Error("no uncached GET of the deployment before adoption")
	}
	assertJSONEqual(t, "adoption patch", patches["rsAdopt"],
		`{"metadata":{"ownerReferences":[{"apiVersion":"apps/v1","kind":"Deployment","name":"foo","uid":"uid-foo","controller":true,"blockOwnerDeletion":true}],"uid":"uid-rsAdopt"}}`)
	assertJSONEqual(t, "release patch", patches["rsRelease"],
		`{"metadata":{"ownerReferences":[{"$patch":"delete","uid":"uid-foo"}],"uid":"uid-rsRelease"}}`)

	// The fake server applied the patches: both owners on the adopted one, none on the released one.
	adopted, err := f.client.AppsV1().ReplicaSets("default").Get(f.ctx, "rsAdopt", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(adopted.OwnerReferences) != 2 || metav1.GetControllerOf(adopted) == nil || metav1.GetControllerOf(adopted).UID != "uid-foo" {
		t.Errorf("adopted ownerReferences = %+v, want the StatefulSet ref plus a controller ref to foo", adopted.OwnerReferences)
	}
	released, err := f.client.AppsV1().ReplicaSets("default").Get(f.ctx, "rsRelease", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(released.OwnerReferences) != 0 {
		t.Errorf("released ownerReferences = %+v, want none", released.OwnerReferences)
	}
}

func TestReleaseIgnoresNotFoundAndInvalid(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
	}{
		{name: "not found", err: apierrors.NewNotFound(schema.GroupResource{Group: "apps", Resource: "replicasets"}, "rsRelease")},
		{name: "invalid", err: apierrors.NewInvalid(schema.GroupKind{Group: "apps", Kind: "ReplicaSet"}, "rsRelease", nil)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			d := newDeployment("foo", 1)
			rsRelease := testutil.ReplicaSet("rsRelease", 1, testutil.RSOwnedBy(d))
			rsRelease.Labels = map[string]string{"foo": "notbar"}
			f.both(d, rsRelease)
			f.client.PrependReactor("patch", "replicasets", func(clienttesting.Action) (bool, runtime.Object, error) {
				return true, nil, tc.err
			})
			got, err := f.dc.getReplicaSetsForDeployment(f.ctx, d)
			if err != nil || len(got) != 0 {
				t.Errorf("getReplicaSetsForDeployment = %v, %v; want nothing claimed and no error", rsNames(got), err)
			}
		})
	}
}

func TestGetPodMapForReplicaSets(t *testing.T) {
	f := newFixture(t)
	d := newDeployment("foo", 1)
	rs1 := testutil.ReplicaSet("rs1", 1, testutil.RSOwnedBy(d))
	rs2 := testutil.ReplicaSet("rs2", 1, testutil.RSOwnedBy(d))
	pod1 := podOf(rs1, "rs1-pod", corev1.PodRunning)
	pod2 := podOf(rs2, "rs2-pod", corev1.PodRunning)
	// Matching labels but no controller ref: not in the map.
	pod3 := podOf(rs1, "pod3", corev1.PodRunning)
	pod3.OwnerReferences = nil
	// Terminal pods are included.
	pod4 := podOf(rs1, "pod4", corev1.PodFailed)
	// A controller ref with rs1's UID but another name is not rs1's (upstream keys the index by
	// namespace/Kind/Name/UID).
	pod5 := podOf(rs1, "pod5", corev1.PodRunning)
	pod5.OwnerReferences[0].Name = "impostor"
	f.cache(d, rs1, rs2, pod1, pod2, pod3, pod4, pod5)

	podMap, err := f.dc.GetPodMapForDeployment(d, []*appsv1.ReplicaSet{rs1, rs2})
	if err != nil {
		t.Fatalf("getPodMapForDeployment: %v", err)
	}
	got := map[types.UID][]string{}
	for uid, pods := range podMap {
		var names []string
		for _, p := range pods {
			names = append(names, p.Name)
		}
		sort.Strings(names)
		got[uid] = names
	}
	want := map[types.UID][]string{"uid-rs1": {"pod4", "rs1-pod"}, "uid-rs2": {"rs2-pod"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("pod map = %v, want %v", got, want)
	}
}

func rsNames(rss []*appsv1.ReplicaSet) []string {
	names := []string{}
	for _, rs := range rss {
		names = append(names, rs.Name)
	}
	return names
}

func assertJSONEqual(t *testing.T, what, got, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		t.Errorf("%s: %q is not JSON: %v", what, got, err)
		return
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("%s: bad expectation: %v", what, err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("%s = %s, want %s", what, got, want)
	}
}
