package deployment

import (
	"context"
	"fmt"
	"reflect"
	"runtime"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	"github.com/kubegray/kubectl-gray/internal/testutil"
)

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
	want := &cachedPod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "p", Namespace: "ns", UID: "uid-p", ResourceVersion: "7",
			OwnerReferences:   []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "rs", UID: "uid-rs", Controller: ptr.To(true)}},
			DeletionTimestamp: &deleted,
		},
		Phase: corev1.PodRunning,
	}
	got, err := StripPod(full)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("StripPod = %+v, want %+v", got, want)
	}
	again, err := StripPod(got)
	if err != nil || !reflect.DeepEqual(again, want) {
		t.Errorf("StripPod is not idempotent: %+v, %v", again, err)
	}
	tombstone := cache.DeletedFinalStateUnknown{Key: "ns/p", Obj: full}
	if passed, err := StripPod(tombstone); err != nil || !reflect.DeepEqual(passed, tombstone) {
		t.Errorf("StripPod changed a non-pod: %+v, %v", passed, err)
	}
}

func TestDropManagedFields(t *testing.T) {
	managed := []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply}}
	rs := testutil.ReplicaSet("web-1", 3, testutil.RSOwnedBy(newDeployment("web", 3)))
	rs.Annotations = map[string]string{"deployment.kubernetes.io/revision": "1"}
	rs.ManagedFields = managed
	want := rs.DeepCopy()
	want.ManagedFields = nil

	got, err := dropManagedFields(rs.DeepCopy())
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("dropManagedFields(replica set) = %+v, %v; want everything but the managed fields, %+v", got, err, want)
	}
	if again, err := dropManagedFields(got); err != nil || !reflect.DeepEqual(again, want) {
		t.Errorf("dropManagedFields is not idempotent: %+v, %v", again, err)
	}
	tombstone := cache.DeletedFinalStateUnknown{Key: "default/web-1", Obj: rs}
	if passed, err := dropManagedFields(tombstone); err != nil || !reflect.DeepEqual(passed, tombstone) {
		t.Errorf("dropManagedFields changed a tombstone: %+v, %v", passed, err)
	}
}

// The Deployment cache keeps who owns kubegray.io/status (a forged status is told by its writer:
// controller/graysync/gray_forged.go) and nothing else of the managed fields.
func TestKeepStatusOwners(t *testing.T) {
	entry := func(manager string, op metav1.ManagedFieldsOperationType, fields string) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: manager, Operation: op, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(fields),
			Time: &metav1.Time{}}
	}
	statusAndPercent := `{"f:metadata":{"f:annotations":{"f:kubegray.io/percent":{},"f:kubegray.io/status":{}}},"f:spec":{"f:replicas":{}}}`
	d := newDeployment("web", 3)
	d.ManagedFields = []metav1.ManagedFieldsEntry{
		entry("kubectl-client-side-apply", metav1.ManagedFieldsOperationUpdate, `{"f:spec":{"f:replicas":{}}}`),
		entry("gray-controller", metav1.ManagedFieldsOperationUpdate, statusAndPercent),
		entry("kubectl-annotate", metav1.ManagedFieldsOperationUpdate, `{"f:metadata":{"f:annotations":{"f:kubegray.io/status":{}}}}`),
		{Manager: "no-fields", Operation: metav1.ManagedFieldsOperationApply},
	}
	only := `{"f:metadata":{"f:annotations":{"f:kubegray.io/status":{}}}}`
	want := d.DeepCopy()
	want.ManagedFields = []metav1.ManagedFieldsEntry{
		{Manager: "gray-controller", Operation: metav1.ManagedFieldsOperationUpdate, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(only)},
		{Manager: "kubectl-annotate", Operation: metav1.ManagedFieldsOperationUpdate, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(only)},
	}

	got, err := keepStatusOwners(d.DeepCopy())
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("keepStatusOwners(deployment) = %+v, %v; want only the owners of kubegray.io/status, %+v", got, err, want)
	}
	if again, err := keepStatusOwners(got); err != nil || !reflect.DeepEqual(again, want) {
		t.Errorf("keepStatusOwners is not idempotent: %+v, %v", again, err)
	}
	tombstone := cache.DeletedFinalStateUnknown{Key: "default/web", Obj: d}
	if passed, err := keepStatusOwners(tombstone); err != nil || !reflect.DeepEqual(passed, tombstone) {
		t.Errorf("keepStatusOwners changed a tombstone: %+v, %v", passed, err)
	}
}

// TestCachesKeepWhatTheControllerReads runs the informers of a controller against a clientset
// whose objects carry managed fields and full pods: the listers must return them trimmed.
func TestCachesKeepWhatTheControllerReads(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	managed := []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate}}
	d := newDeployment("web", 2)
	d.ManagedFields = managed
	rs := testutil.ReplicaSet("web-1", 2, testutil.RSOwnedBy(d))
	rs.ManagedFields = managed
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-1-a", Namespace: d.Namespace, Labels: map[string]string{"app": "web"},
			OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID, Controller: ptr.To(true)}}},
		Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	client := fake.NewClientset(d, rs, pod)
	factory := informers.NewSharedInformerFactory(client, 0)
	if _, err := NewDeploymentController(ctx, AllNamespaces(factory, informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace("gray-system")), "gray-system"), client, Options{FieldManager: testFieldManager}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(ctx)
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	defer cancel() // before Shutdown, which waits for the informers to stop
	for typ, synced := range factory.WaitForCacheSync(ctx.Done()) {
		if !synced {
			t.Fatalf("%v cache did not sync", typ)
		}
	}

	cachedD, err := factory.Apps().V1().Deployments().Lister().Deployments(d.Namespace).Get(d.Name)
	if err != nil || cachedD.ManagedFields != nil || *cachedD.Spec.Replicas != 2 {
		t.Errorf("cached deployment = %+v, %v; want it with its spec and without managed fields but the status's", cachedD, err)
	}
	cachedRS, err := factory.Apps().V1().ReplicaSets().Lister().ReplicaSets(rs.Namespace).Get(rs.Name)
	if err != nil || cachedRS.ManagedFields != nil || *cachedRS.Spec.Replicas != 2 {
		t.Errorf("cached replica set = %+v, %v; want it with its spec and without managed fields", cachedRS, err)
	}
	pods := factory.Core().V1().Pods().Informer().GetIndexer().List()
	if len(pods) != 1 || !reflect.DeepEqual(pods[0], cached(pod)) {
		t.Errorf("cached pods = %+v; want one with its owner and phase only, %+v", pods, cached(pod))
	}
}

func TestCachedPodCopies(t *testing.T) {
	p := cached(&corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns",
			OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "rs", UID: "uid-rs"}}},
		Status: corev1.PodStatus{Phase: corev1.PodFailed},
	})
	c := p.DeepCopyObject().(*cachedPod)
	if !reflect.DeepEqual(c, p) {
		t.Fatalf("DeepCopyObject = %+v, want %+v", c, p)
	}
	c.OwnerReferences[0].Name = "changed"
	if p.OwnerReferences[0].Name != "rs" {
		t.Error("DeepCopyObject shares the owner references with the original")
	}
	if pod := p.pod(); pod.Name != "p" || pod.Namespace != "ns" || pod.Status.Phase != corev1.PodFailed || len(pod.OwnerReferences) != 1 {
		t.Errorf("pod() = %+v, want the name, namespace, owner and phase of %+v", pod, p)
	}
}

// BenchmarkPodCache measures what the pod cache holds per pod (the heap after a collection,
// over 10,000 pods in an indexer with the controller-UID index), by what the transform keeps:
//
//	go test -run '^$' -bench BenchmarkPodCache -benchtime 3x ./controller/deployment/
func BenchmarkPodCache(b *testing.B) {
	const pods = 10000
	owner := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-5d8f9c7b6d", UID: "0b6c1f1e-4d6a-4a63-9e43-0f8b3c2f8a11",
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
	full := func(i int) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("web-5d8f9c7b6d-%05d", i), Namespace: "default",
				UID: types.UID(fmt.Sprintf("7c1e2a94-2f1d-4c55-8a1b-%012d", i)), ResourceVersion: fmt.Sprint(100000 + i),
				Labels:          map[string]string{"app": "web", "pod-template-hash": "5d8f9c7b6d"},
				OwnerReferences: []metav1.OwnerReference{owner}},
			Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27"}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1",
				Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
		}
	}
	for _, v := range []struct {
		name      string
		transform func(*corev1.Pod) any
	}{
		{"whole pod", func(p *corev1.Pod) any { return p }},
		{"stripped *corev1.Pod", func(p *corev1.Pod) any { return cached(p).pod() }},
		{"cachedPod", func(p *corev1.Pod) any { return cached(p) }},
	} {
		b.Run(v.name, func(b *testing.B) {
			var perPod float64
			for b.Loop() {
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{podControllerUIDIndex: controllerUID})
				for i := range pods {
					if err := indexer.Add(v.transform(full(i))); err != nil {
						b.Fatal(err)
					}
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
				perPod = float64(after.HeapAlloc-before.HeapAlloc) / pods
				runtime.KeepAlive(indexer)
			}
			b.ReportMetric(perPod, "B/pod")
		})
	}
}
