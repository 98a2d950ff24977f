package deployment

import (
	"context"
	"reflect"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
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

func TestDropManagedFields(t *testing.T) {
	managed := []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply}}
	d := newDeployment("web", 3)
	d.Annotations = map[string]string{"kubectl.kubernetes.io/last-applied-configuration": "{}"}
	d.ManagedFields = managed
	want := d.DeepCopy()
	want.ManagedFields = nil

	got, err := dropManagedFields(d.DeepCopy())
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("dropManagedFields(deployment) = %+v, %v; want everything but the managed fields, %+v", got, err, want)
	}
	if again, err := dropManagedFields(got); err != nil || !reflect.DeepEqual(again, want) {
		t.Errorf("dropManagedFields is not idempotent: %+v, %v", again, err)
	}
	rs := testutil.ReplicaSet("web-1", 3, testutil.RSOwnedBy(d))
	rs.ManagedFields = managed
	if got, err := dropManagedFields(rs); err != nil || got.(*appsv1.ReplicaSet).ManagedFields != nil || got.(*appsv1.ReplicaSet).Spec.Replicas == nil {
		t.Errorf("dropManagedFields(replica set) = %+v, %v; want it without managed fields", got, err)
	}
	tombstone := cache.DeletedFinalStateUnknown{Key: "default/web", Obj: d}
	if passed, err := dropManagedFields(tombstone); err != nil || !reflect.DeepEqual(passed, tombstone) {
		t.Errorf("dropManagedFields changed a tombstone: %+v, %v", passed, err)
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
	if _, err := NewDeploymentController(ctx, factory, client, Options{FieldManager: testFieldManager}); err != nil {
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
		t.Errorf("cached deployment = %+v, %v; want it with its spec and without managed fields", cachedD, err)
	}
	cachedRS, err := factory.Apps().V1().ReplicaSets().Lister().ReplicaSets(rs.Namespace).Get(rs.Name)
	if err != nil || cachedRS.ManagedFields != nil || *cachedRS.Spec.Replicas != 2 {
		t.Errorf("cached replica set = %+v, %v; want it with its spec and without managed fields", cachedRS, err)
	}
	pods, err := factory.Core().V1().Pods().Lister().List(labels.Everything())
	if err != nil || len(pods) != 1 || pods[0].Spec.Containers != nil || pods[0].Status.Phase != corev1.PodRunning ||
		len(pods[0].OwnerReferences) != 1 {
		t.Errorf("cached pods = %+v, %v; want one with its owner and phase only", pods, err)
	}
}
