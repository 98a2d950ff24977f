package deployment

import (
	"context"
	"encoding/json"
	"errors"
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
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
)

func TestSyncDeploymentCreatesReplicaSet(t *testing.T) {
	f := newFixture(t)
	// The template of the spec's hash example (§3.2): labels app=x, one container c/nginx,
	// which hashes to 8479cb96c7 with k8s.io/api v0.37.2.
	d := newDeployment("foo", 1, withSelector(map[string]string{"app": "x"}), withImage("nginx"))
	d.Generation = 1
	f.both(d)

	if err := f.dc.syncDeployment(f.ctx, "default/foo"); err != nil {
		t.Fatalf("syncDeployment: %v", err)
	}

	actions := f.actions()
	if got, want := verbs(actions), []string{"create replicasets", "update deployments/status", "update deployments/status"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("actions = %v, want %v", got, want)
	}
	rs := actions[0].(clienttesting.CreateActionImpl).GetObject().(*appsv1.ReplicaSet)
	if rs.Name != "foo-8479cb96c7" {
		t.Errorf("created replica set name = %q, want foo-8479cb96c7", rs.Name)
	}
	wantLabels := map[string]string{"app": "x", "pod-template-hash": "8479cb96c7"}
	if !reflect.DeepEqual(rs.Labels, wantLabels) || !reflect.DeepEqual(rs.Spec.Template.Labels, wantLabels) || !reflect.DeepEqual(rs.Spec.Selector.MatchLabels, wantLabels) {
		t.Errorf("labels/template labels/selector = %v / %v / %v, want all %v", rs.Labels, rs.Spec.Template.Labels, rs.Spec.Selector.MatchLabels, wantLabels)
	}
	if *rs.Spec.Replicas != 1 {
		t.Errorf("created replicas = %d, want 1", *rs.Spec.Replicas)
	}
	wantAnnotations := map[string]string{
		"deployment.kubernetes.io/revision":         "1",
		"deployment.kubernetes.io/desired-replicas": "1",
		"deployment.kubernetes.io/max-replicas":     "1",
	}
	if !reflect.DeepEqual(rs.Annotations, wantAnnotations) {
		t.Errorf("annotations = %v, want %v", rs.Annotations, wantAnnotations)
	}
	wantRef := []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "foo", UID: "uid-foo", Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}
	if !reflect.DeepEqual(rs.OwnerReferences, wantRef) {
		t.Errorf("ownerReferences = %+v, want %+v", rs.OwnerReferences, wantRef)
	}

	first := actions[1].(clienttesting.UpdateActionImpl).GetObject().(*appsv1.Deployment)
	if got := first.Annotations["deployment.kubernetes.io/revision"]; got != "1" {
		t.Errorf("first status write revision annotation = %q, want 1", got)
	}
	final := actions[2].(clienttesting.UpdateActionImpl).GetObject().(*appsv1.Deployment)
	if final.Status.ObservedGeneration != 1 {
		t.Errorf("observedGeneration = %d, want 1", final.Status.ObservedGeneration)
	}
	// R=1 with 0/0 fenceposts resolves maxUnavailable to 1, so 0 available is enough.
	wantAvailable := appsv1.DeploymentCondition{
		Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable",
		Message: "Deployment has minimum availability.", LastUpdateTime: metav1.NewTime(testNow), LastTransitionTime: metav1.NewTime(testNow),
	}
	if !reflect.DeepEqual(final.Status.Conditions, []appsv1.DeploymentCondition{wantAvailable}) {
		t.Errorf("conditions = %+v, want only %+v", final.Status.Conditions, wantAvailable)
	}
	if got, want := f.events(), []string{"Normal ScalingReplicaSet Scaled up replica set foo-8479cb96c7 from 0 to 1"}; !reflect.DeepEqual(got, want) {
		t.Errorf("events = %v, want %v", got, want)
	}
}

func TestSyncDeploymentDontDoAnythingDuringDeletion(t *testing.T) {
	f := newFixture(t)
	d := newDeployment("foo", 1)
	d.DeletionTimestamp = ptr.To(metav1.NewTime(testNow))
	f.both(d)

	if err := f.dc.syncDeployment(f.ctx, "default/foo"); err != nil {
		t.Fatalf("syncDeployment: %v", err)
	}
	if got, want := verbs(f.actions()), []string{"update deployments/status"}; !reflect.DeepEqual(got, want) {
		t.Errorf("actions = %v, want %v", got, want)
	}
}

func TestSyncDeploymentDeletionRace(t *testing.T) {
	f := newFixture(t)
	d := newDeployment("foo", 1)
	// The cache says live, the server says deleting; the server is more recent.
	f.cache(d)
	deleting := d.DeepCopy()
	deleting.DeletionTimestamp = ptr.To(metav1.NewTime(testNow))
	deleting.Finalizers = []string{"test/hold"}
	f.server(deleting)
	// The recheck only happens when there is an orphan to adopt.
	orphan := ownedRS(d, "rs1", 1)
	orphan.OwnerReferences = nil
	f.both(orphan)

	if err := f.dc.syncDeployment(f.ctx, "default/foo"); err == nil {
		t.Fatal("syncDeployment succeeded, want an error so the key is retried once the cache catches up")
	}
	actions := f.actions()
	if got, want := verbs(actions), []string{"get deployments"}; !reflect.DeepEqual(got, want) {
		t.Errorf("actions = %v, want only the uncached recheck %v", got, want)
	}
}

func TestDontSyncDeploymentsWithEmptyPodSelector(t *testing.T) {
	tests := []struct {
		name               string
		generation         int64
		observedGeneration int64
		wantActions        []string
	}{
		{name: "generation already observed", wantActions: []string{}},
		{name: "new generation is recorded", generation: 2, observedGeneration: 1, wantActions: []string{"update deployments/status"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			d := newDeployment("foo", 1)
			d.Spec.Selector = &metav1.LabelSelector{}
			d.Generation = tc.generation
			d.Status.ObservedGeneration = tc.observedGeneration
			f.both(d)

			if err := f.dc.syncDeployment(f.ctx, "default/foo"); err != nil {
				t.Fatalf("syncDeployment: %v", err)
			}
			actions := f.actions()
			if got := verbs(actions); !reflect.DeepEqual(got, tc.wantActions) {
				t.Errorf("actions = %v, want %v", got, tc.wantActions)
			}
			if len(tc.wantActions) > 0 {
				if got := lastStatusWrite(t, actions).Status.ObservedGeneration; got != tc.generation {
					t.Errorf("observedGeneration = %d, want %d", got, tc.generation)
				}
			}
			want := []string{"Warning SelectingAll This deployment is selecting all pods. A non-empty selector is required."}
			if got := f.events(); !reflect.DeepEqual(got, want) {
				t.Errorf("events = %v, want %v", got, want)
			}
		})
	}
}

func TestReentrantRollback(t *testing.T) {
	tests := []struct {
		name          string
		rollbackTo    string
		oldTemplate   bool // whether revision 1 runs a different template
		wantEvents    []string
		wantGrace     *int64
		wantRevision  string
		wantTemplated bool
	}{
		{
			name:        "last revision with another template",
			rollbackTo:  "0",
			oldTemplate: true,
			wantEvents:  []string{`Normal DeploymentRollback Rolled back deployment "foo" to revision 1`},
			wantGrace:   ptr.To[int64](1),
		},
		{
			name:       "revision with the same template",
			rollbackTo: "2",
			wantEvents: []string{`Warning DeploymentRollbackTemplateUnchanged The rollback revision contains the same template as current deployment "foo"`},
		},
		{
			name:        "unknown revision",
			rollbackTo:  "5",
			oldTemplate: true,
			wantEvents:  []string{"Warning DeploymentRollbackRevisionNotFound Unable to find the revision to rollback to."},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			d := newDeployment("foo", 1)
			d.Annotations = map[string]string{
				"deployment.kubernetes.io/revision": "2",
				"deprecated.deployment.rollback.to": tc.rollbackTo,
			}
			rs1 := withRevision(ownedRS(d, "foo-old", 0), 1)
			if tc.oldTemplate {
				rs1.Spec.Template.Spec.TerminationGracePeriodSeconds = ptr.To[int64](1)
			}
			rs1.Spec.Template.Labels["pod-template-hash"] = "old"
			rs2 := withRevision(ownedRS(d, "foo-new", 1), 2)
			rs2.Spec.Template.Labels["pod-template-hash"] = "new"
			f.both(d, rs1, rs2)

			if err := f.dc.syncDeployment(f.ctx, "default/foo"); err != nil {
				t.Fatalf("syncDeployment: %v", err)
			}
			actions := f.actions()
			if got, want := verbs(actions), []string{"update deployments"}; !reflect.DeepEqual(got, want) {
				t.Fatalf("actions = %v, want %v (no replica set writes)", got, want)
			}
			updated := actions[0].(clienttesting.UpdateActionImpl).GetObject().(*appsv1.Deployment)
			if got, want := updated.Annotations, map[string]string{"deployment.kubernetes.io/revision": "2"}; !reflect.DeepEqual(got, want) {
				t.Errorf("annotations = %v, want %v (rollback annotation cleared)", got, want)
			}
			if got := updated.Spec.Template.Spec.TerminationGracePeriodSeconds; !reflect.DeepEqual(got, tc.wantGrace) {
				t.Errorf("template terminationGracePeriodSeconds = %v, want %v", got, tc.wantGrace)
			}
			if _, ok := updated.Spec.Template.Labels["pod-template-hash"]; ok {
				t.Errorf("template labels %v carry the pod-template-hash", updated.Spec.Template.Labels)
			}
			if got := f.events(); !reflect.DeepEqual(got, tc.wantEvents) {
				t.Errorf("events = %v, want %v", got, tc.wantEvents)
			}
		})
	}
}

func TestRollbackWithoutLastRevision(t *testing.T) {
	f := newFixture(t)
	d := newDeployment("foo", 1)
	d.Annotations = map[string]string{"deployment.kubernetes.io/revision": "1", "deprecated.deployment.rollback.to": "0"}
	f.both(d, withRevision(ownedRS(d, "foo-only", 1), 1))

	if err := f.dc.syncDeployment(f.ctx, "default/foo"); err != nil {
		t.Fatalf("syncDeployment: %v", err)
	}
	if got, want := verbs(f.actions()), []string{"update deployments"}; !reflect.DeepEqual(got, want) {
		t.Errorf("actions = %v, want %v", got, want)
	}
	if got, want := f.events(), []string{"Warning DeploymentRollbackRevisionNotFound Unable to find last revision."}; !reflect.DeepEqual(got, want) {
		t.Errorf("events = %v, want %v", got, want)
	}
}

func TestPodDeletionEnqueuesRecreateDeployment(t *testing.T) {
	tests := []struct {
		name         string
		strategy     appsv1.DeploymentStrategyType
		siblings     bool
		orphanRS     bool
		wrongRSUID   bool
		tombstone    bool
		wantEnqueued []string
	}{
		{name: "last pod deleted", strategy: appsv1.RecreateDeploymentStrategyType, wantEnqueued: []string{"default/foo"}},
		{name: "pod with siblings deleted", strategy: appsv1.RecreateDeploymentStrategyType, siblings: true, wantEnqueued: []string{"default/foo"}},
		{name: "partial replica set ownership", strategy: appsv1.RecreateDeploymentStrategyType, orphanRS: true, wantEnqueued: []string{"default/foo"}},
		{name: "tombstone", strategy: appsv1.RecreateDeploymentStrategyType, tombstone: true, wantEnqueued: []string{"default/foo"}},
		{name: "rolling update is not enqueued", strategy: appsv1.RollingUpdateDeploymentStrategyType},
		{name: "replica set recreated under the same name", strategy: appsv1.RecreateDeploymentStrategyType, wrongRSUID: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			foo := newDeployment("foo", 1)
			if tc.strategy == appsv1.RecreateDeploymentStrategyType {
				withRecreate()(foo)
			}
			rs := ownedRS(foo, "foo-1", 1)
			pod := podOf(rs, "foo-1-pod", corev1.PodRunning)
			if tc.wrongRSUID {
				pod.OwnerReferences[0].UID = "uid-gone"
			}
			f.cache(foo, rs, pod)
			if tc.siblings {
				f.cache(podOf(rs, "foo-1-sibling", corev1.PodRunning))
			}
			if tc.orphanRS {
				other := ownedRS(foo, "foo-2", 2)
				other.OwnerReferences = nil
				f.cache(other)
			}

			var obj any = pod
			if tc.tombstone {
				obj = cache.DeletedFinalStateUnknown{Key: "default/foo-1-pod", Obj: pod}
			}
			f.dc.deletePod(klog.FromContext(f.ctx), obj)

			if got := queued(f.dc); !reflect.DeepEqual(got, tc.wantEnqueued) {
				t.Errorf("enqueued = %v, want %v", got, tc.wantEnqueued)
			}
		})
	}
}

func TestGetReplicaSetsForDeployment(t *testing.T) {
	f := newFixture(t)
	// Same labels; controller refs decide.
	d1 := newDeployment("foo", 1)
	d2 := newDeployment("bar", 1)
	rs1 := ownedRS(d1, "rs1", 1)
	rs2 := ownedRS(d2, "rs2", 1)
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
	rsAdopt := ownedRS(d, "rsAdopt", 1)
	rsAdopt.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "other", UID: "uid-other"}}
	// A second orphan: the uncached recheck still happens only once per sync.
	rsAdopt2 := ownedRS(d, "rsAdopt2", 1)
	rsAdopt2.OwnerReferences = nil
	// Owned but no longer matching: released.
	rsRelease := ownedRS(d, "rsRelease", 1)
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
			rsRelease := ownedRS(d, "rsRelease", 1)
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
	rs1 := ownedRS(d, "rs1", 1)
	rs2 := ownedRS(d, "rs2", 1)
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

	podMap, err := f.dc.getPodMapForDeployment(d, []*appsv1.ReplicaSet{rs1, rs2})
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

func TestAddReplicaSet(t *testing.T) {
	f := newFixture(t)
	d1 := newDeployment("d1", 1)
	d2 := newDeployment("d2", 1)
	f.cache(d1, d2)
	logger := klog.FromContext(f.ctx)

	f.dc.addReplicaSet(logger, ownedRS(d1, "rs1", 1))
	if got := queued(f.dc); !reflect.DeepEqual(got, []string{"default/d1"}) {
		t.Errorf("after rs1: enqueued %v, want [default/d1]", got)
	}
	f.dc.addReplicaSet(logger, ownedRS(d2, "rs2", 1))
	if got := queued(f.dc); !reflect.DeepEqual(got, []string{"default/d2"}) {
		t.Errorf("after rs2: enqueued %v, want [default/d2]", got)
	}
}

func TestAddReplicaSetOrphan(t *testing.T) {
	f := newFixture(t)
	// d1 and d2 match, d3 does not.
	d1 := newDeployment("d1", 1)
	d2 := newDeployment("d2", 1)
	d3 := newDeployment("d3", 1, withSelector(map[string]string{"foo": "notbar"}))
	f.cache(d1, d2, d3)
	rs := ownedRS(d1, "rs1", 1)
	rs.OwnerReferences = nil

	f.dc.addReplicaSet(klog.FromContext(f.ctx), rs)
	got := queued(f.dc)
	sort.Strings(got)
	if want := []string{"default/d1", "default/d2"}; !reflect.DeepEqual(got, want) {
		t.Errorf("enqueued %v, want %v", got, want)
	}
}

func TestAddReplicaSetBeingDeleted(t *testing.T) {
	f := newFixture(t)
	d1 := newDeployment("d1", 1)
	d2 := newDeployment("d2", 1)
	f.cache(d1, d2)
	// Treated as a delete: the owner is woken, a deleting orphan wakes nobody.
	owned := ownedRS(d1, "rs1", 1)
	owned.DeletionTimestamp = ptr.To(metav1.NewTime(testNow))
	orphan := ownedRS(d1, "rs2", 1)
	orphan.OwnerReferences = nil
	orphan.DeletionTimestamp = ptr.To(metav1.NewTime(testNow))

	logger := klog.FromContext(f.ctx)
	f.dc.addReplicaSet(logger, owned)
	f.dc.addReplicaSet(logger, orphan)
	if got := queued(f.dc); !reflect.DeepEqual(got, []string{"default/d1"}) {
		t.Errorf("enqueued %v, want [default/d1]", got)
	}
}

func TestUpdateReplicaSet(t *testing.T) {
	f := newFixture(t)
	d1 := newDeployment("d1", 1)
	d2 := newDeployment("d2", 1)
	rs1 := ownedRS(d1, "rs1", 1)
	rs2 := ownedRS(d2, "rs2", 1)
	f.cache(d1, d2, rs1, rs2)
	logger := klog.FromContext(f.ctx)

	for _, tc := range []struct {
		rs   *appsv1.ReplicaSet
		want string
	}{{rs1, "default/d1"}, {rs2, "default/d2"}} {
		next := tc.rs.DeepCopy()
		next.ResourceVersion = "2"
		f.dc.updateReplicaSet(logger, tc.rs, next)
		if got := queued(f.dc); !reflect.DeepEqual(got, []string{tc.want}) {
			t.Errorf("update of %s enqueued %v, want [%s]", tc.rs.Name, got, tc.want)
		}
	}

	// A resync (same resourceVersion) is ignored.
	f.dc.updateReplicaSet(logger, rs1, rs1.DeepCopy())
	if got := queued(f.dc); len(got) != 0 {
		t.Errorf("resync enqueued %v, want nothing", got)
	}
}

func TestUpdateReplicaSetOrphanWithNewLabels(t *testing.T) {
	f := newFixture(t)
	d1 := newDeployment("d1", 1)
	d2 := newDeployment("d2", 1)
	rs := ownedRS(d1, "rs1", 1)
	rs.OwnerReferences = nil
	f.cache(d1, d2, rs)

	prev := rs.DeepCopy()
	prev.Labels = map[string]string{"foo": "notbar"}
	next := rs.DeepCopy()
	next.ResourceVersion = "2"
	f.dc.updateReplicaSet(klog.FromContext(f.ctx), prev, next)
	got := queued(f.dc)
	sort.Strings(got)
	if want := []string{"default/d1", "default/d2"}; !reflect.DeepEqual(got, want) {
		t.Errorf("enqueued %v, want %v", got, want)
	}

	// Unchanged labels on an orphan wake nobody.
	again := next.DeepCopy()
	again.ResourceVersion = "3"
	f.dc.updateReplicaSet(klog.FromContext(f.ctx), next, again)
	if got := queued(f.dc); len(got) != 0 {
		t.Errorf("orphan update without label change enqueued %v, want nothing", got)
	}
}

func TestUpdateReplicaSetChangeControllerRef(t *testing.T) {
	f := newFixture(t)
	d1 := newDeployment("d1", 1)
	d2 := newDeployment("d2", 1)
	rs := ownedRS(d1, "rs1", 1)
	f.cache(d1, d2, rs)

	prev := rs.DeepCopy()
	prev.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(d2, controllerKind)}
	next := rs.DeepCopy()
	next.ResourceVersion = "2"
	f.dc.updateReplicaSet(klog.FromContext(f.ctx), prev, next)
	got := queued(f.dc)
	sort.Strings(got)
	if want := []string{"default/d1", "default/d2"}; !reflect.DeepEqual(got, want) {
		t.Errorf("enqueued %v, want old and new owner %v", got, want)
	}
}

func TestUpdateReplicaSetRelease(t *testing.T) {
	f := newFixture(t)
	d1 := newDeployment("d1", 1)
	d2 := newDeployment("d2", 1)
	rs := ownedRS(d1, "rs1", 1)
	f.cache(d1, d2, rs)

	next := rs.DeepCopy()
	next.OwnerReferences = nil
	next.ResourceVersion = "2"
	f.dc.updateReplicaSet(klog.FromContext(f.ctx), rs, next)
	got := queued(f.dc)
	sort.Strings(got)
	if want := []string{"default/d1", "default/d2"}; !reflect.DeepEqual(got, want) {
		t.Errorf("enqueued %v, want every matching deployment %v", got, want)
	}
}

func TestDeleteReplicaSet(t *testing.T) {
	f := newFixture(t)
	d1 := newDeployment("d1", 1)
	d2 := newDeployment("d2", 1)
	rs1 := ownedRS(d1, "rs1", 1)
	rs2 := ownedRS(d2, "rs2", 1)
	f.cache(d1, d2, rs1, rs2)
	logger := klog.FromContext(f.ctx)

	f.dc.deleteReplicaSet(logger, rs1)
	if got := queued(f.dc); !reflect.DeepEqual(got, []string{"default/d1"}) {
		t.Errorf("delete of rs1 enqueued %v, want [default/d1]", got)
	}
	f.dc.deleteReplicaSet(logger, cache.DeletedFinalStateUnknown{Key: "default/rs2", Obj: rs2})
	if got := queued(f.dc); !reflect.DeepEqual(got, []string{"default/d2"}) {
		t.Errorf("tombstone of rs2 enqueued %v, want [default/d2]", got)
	}
}

func TestDeleteReplicaSetOrphan(t *testing.T) {
	f := newFixture(t)
	d1 := newDeployment("d1", 1)
	d2 := newDeployment("d2", 1)
	rs := ownedRS(d1, "rs1", 1)
	rs.OwnerReferences = nil
	f.cache(d1, d2, rs)

	f.dc.deleteReplicaSet(klog.FromContext(f.ctx), rs)
	if got := queued(f.dc); len(got) != 0 {
		t.Errorf("enqueued %v, want nothing", got)
	}
}

func TestDeploymentHandlers(t *testing.T) {
	f := newFixture(t)
	d := newDeployment("foo", 1)
	logger := klog.FromContext(f.ctx)

	f.dc.addDeployment(logger, d)
	if got := queued(f.dc); !reflect.DeepEqual(got, []string{"default/foo"}) {
		t.Errorf("add enqueued %v", got)
	}
	// No resourceVersion check: resyncs re-sync every Deployment.
	f.dc.updateDeployment(logger, d, d.DeepCopy())
	if got := queued(f.dc); !reflect.DeepEqual(got, []string{"default/foo"}) {
		t.Errorf("update enqueued %v", got)
	}
	f.dc.deleteDeployment(logger, cache.DeletedFinalStateUnknown{Key: "default/foo", Obj: d})
	if got := queued(f.dc); !reflect.DeepEqual(got, []string{"default/foo"}) {
		t.Errorf("delete tombstone enqueued %v", got)
	}
}

func TestHandleErr(t *testing.T) {
	terminating := &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: 403, Reason: metav1.StatusReasonForbidden,
		Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause}}},
	}}
	tests := []struct {
		name          string
		err           error
		priorRequeues int
		wantRequeues  int
	}{
		{name: "success forgets", err: nil, priorRequeues: 3, wantRequeues: 0},
		{name: "terminating namespace forgets", err: terminating, priorRequeues: 3, wantRequeues: 0},
		{name: "wrapped terminating namespace forgets", err: errorsJoin(terminating), priorRequeues: 3, wantRequeues: 0},
		{name: "transient error is retried", err: errors.New("boom"), priorRequeues: 0, wantRequeues: 1},
		{name: "14th retry still retried", err: errors.New("boom"), priorRequeues: 14, wantRequeues: 15},
		{name: "dropped after 15 retries", err: errors.New("boom"), priorRequeues: 15, wantRequeues: 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			const key = "default/foo"
			for range tc.priorRequeues {
				f.dc.queue.AddRateLimited(key)
			}
			f.dc.handleErr(f.ctx, tc.err, key)
			if got := f.dc.queue.NumRequeues(key); got != tc.wantRequeues {
				t.Errorf("NumRequeues = %d, want %d", got, tc.wantRequeues)
			}
			f.dc.queue.ShutDown()
		})
	}
}

func TestProcessNextWorkItem(t *testing.T) {
	f := newFixture(t)
	var synced []string
	f.dc.syncHandler = func(_ context.Context, key string) error {
		synced = append(synced, key)
		return errors.New("boom")
	}
	f.dc.queue.Add("default/foo")
	if !f.dc.processNextWorkItem(f.ctx) {
		t.Fatal("processNextWorkItem returned false with an item queued")
	}
	if !reflect.DeepEqual(synced, []string{"default/foo"}) {
		t.Errorf("synced %v, want [default/foo]", synced)
	}
	if got := f.dc.queue.NumRequeues("default/foo"); got != 1 {
		t.Errorf("NumRequeues = %d, want 1 after a failed sync", got)
	}
	f.dc.queue.ShutDown()
	if f.dc.processNextWorkItem(f.ctx) {
		t.Error("processNextWorkItem returned true after shutdown")
	}
}

func TestStripPod(t *testing.T) {
	deleted := metav1.NewTime(testNow)
	full := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "p", Namespace: "ns", UID: "uid-p", ResourceVersion: "7",
			Labels:            map[string]string{"a": "b"},
			Annotations:       map[string]string{"big": "value"},
			OwnerReferences:   []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "rs", UID: "uid-rs", Controller: ptr.To(true)}},
			DeletionTimestamp: &deleted,
			ManagedFields:     []metav1.ManagedFieldsEntry{{Manager: "kubelet"}},
		},
		Spec:   corev1.PodSpec{NodeName: "node", Containers: []corev1.Container{{Name: "c", Image: "i"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1"},
	}
	want := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "p", Namespace: "ns", UID: "uid-p", ResourceVersion: "7",
			OwnerReferences:   []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "rs", UID: "uid-rs", Controller: ptr.To(true)}},
			DeletionTimestamp: &deleted,
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	got, err := stripPod(full)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("stripPod = %+v, want %+v", got, want)
	}
	again, err := stripPod(got)
	if err != nil || !reflect.DeepEqual(again, want) {
		t.Errorf("stripPod is not idempotent: %+v, %v", again, err)
	}
	tombstone := cache.DeletedFinalStateUnknown{Key: "ns/p", Obj: full}
	if passed, err := stripPod(tombstone); err != nil || !reflect.DeepEqual(passed, tombstone) {
		t.Errorf("stripPod changed a non-pod: %+v, %v", passed, err)
	}
}

func TestNewDeploymentControllerRegistersPodIndexAndTransform(t *testing.T) {
	f := newFixture(t)
	informer := f.factory.Core().V1().Pods().Informer()
	if _, ok := informer.GetIndexer().GetIndexers()[podControllerUIDIndex]; !ok {
		t.Errorf("pod informer has no %q index", podControllerUIDIndex)
	}
	if f.dc.HasSynced() {
		t.Error("HasSynced = true before the informers ran")
	}
	// A second controller on the same factory must not fail on the existing index.
	if _, err := NewDeploymentController(f.ctx, f.factory, f.client, Options{}); err != nil {
		t.Errorf("second NewDeploymentController on the same factory: %v", err)
	}
}

func TestSyncDeploymentMissingIsNoop(t *testing.T) {
	f := newFixture(t)
	if err := f.dc.syncDeployment(f.ctx, "default/gone"); err != nil {
		t.Errorf("syncDeployment of a missing deployment = %v, want nil", err)
	}
	if got := verbs(f.actions()); len(got) != 0 {
		t.Errorf("actions = %v, want none", got)
	}
}

func TestSyncDeploymentUnknownStrategy(t *testing.T) {
	f := newFixture(t)
	d := newDeployment("foo", 1)
	d.Spec.Strategy = appsv1.DeploymentStrategy{Type: "Canary"}
	f.both(d)
	err := f.dc.syncDeployment(f.ctx, "default/foo")
	if err == nil || err.Error() != "unexpected deployment strategy type: Canary" {
		t.Errorf("syncDeployment = %v, want unexpected deployment strategy type: Canary", err)
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

func errorsJoin(err error) error { return errors.Join(errors.New("context"), err) }
