package deployment

import (
	"context"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"

	"github.com/kubegray/kubectl-gray/internal/testutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// TestSomeNamespaces runs a controller's caches for two of three namespaces (--namespaces): it
// must see, and queue, the Deployments, ReplicaSets and pods of those two only, and the
// ConfigMaps (the gray hook's gate definitions) of those and of its own namespace.
func TestSomeNamespaces(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	var objs []runtime.Object
	for _, ns := range []string{"shop", "web", "other"} {
		d := newDeployment("app", 2)
		d.Namespace = ns
		rs := testutil.ReplicaSet("app-1", 2, testutil.RSOwnedBy(d))
		rs.Namespace, rs.UID = ns, types.UID("app-1-"+ns)
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "app-1-a", Namespace: ns, UID: types.UID(ns + "-pod"),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(rs, appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))}}}
		objs = append(objs, d, rs, pod)
	}
	for _, ns := range []string{"shop", "other", "gray-system"} {
		objs = append(objs, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "gates", Namespace: ns,
			Labels: map[string]string{grayapi.GatesLabel: grayapi.GatesLabelValue}}})
	}
	client := fake.NewClientset(objs...)
	caches := SomeNamespaces(client, 0, []string{"shop", "web"}, "gray-system")
	dc, err := NewDeploymentController(ctx, caches, client, Options{FieldManager: testFieldManager})
	if err != nil {
		t.Fatal(err)
	}
	configMaps, configMapsSynced, err := caches.ConfigMaps(func(_ string, factory informers.SharedInformerFactory) (cache.SharedIndexInformer, error) {
		return factory.Core().V1().ConfigMaps().Informer(), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(ctx)
	caches.Start(ctx)
	defer caches.Shutdown()
	defer cancel() // before Shutdown, which waits for the informers to stop
	if !cache.WaitForCacheSync(ctx.Done(), dc.workloadsSynced, configMapsSynced) {
		t.Fatal("caches did not sync")
	}

	ds, err := dc.dLister.List(labels.Everything())
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	for _, d := range ds {
		seen = append(seen, d.Namespace+"/"+d.Name)
	}
	slices.Sort(seen)
	if want := []string{"shop/app", "web/app"}; !slices.Equal(seen, want) {
		t.Errorf("Deployments cached: %q, want %q", seen, want)
	}
	if _, err := dc.dLister.Deployments("other").Get("app"); !apierrors.IsNotFound(err) {
		t.Errorf("Deployment other/app: %v, want NotFound (namespace not watched)", err)
	}
	if rss, err := dc.rsLister.ReplicaSets("web").List(labels.Everything()); err != nil || len(rss) != 1 {
		t.Errorf("ReplicaSets of web: %d, %v; want 1", len(rss), err)
	}
	if rss, err := dc.rsLister.ReplicaSets("other").List(labels.Everything()); err != nil || len(rss) != 0 {
		t.Errorf("ReplicaSets of other: %d, %v; want none", len(rss), err)
	}
	for ns, want := range map[string]int{"shop": 1, "other": 0} {
		if pods, err := dc.podIndexer.ByIndex(podControllerUIDIndex, "app-1-"+ns); err != nil || len(pods) != want {
			t.Errorf("pods of %s's ReplicaSet by controller: %d, %v; want %d", ns, len(pods), err, want)
		}
	}
	for ns, want := range map[string]int{"shop": 1, "gray-system": 1, "other": 0, "web": 0} {
		if cms, err := configMaps.ConfigMaps(ns).List(labels.Everything()); err != nil || len(cms) != want {
			t.Errorf("ConfigMaps of %s: %d, %v; want %d", ns, len(cms), err, want)
		}
	}

	// Every cached Deployment was queued by its add event, and no other.
	var queued []string
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return dc.queue.Len() == 2, nil
	}); err != nil {
		t.Fatalf("queue length %d, want 2", dc.queue.Len())
	}
	for dc.queue.Len() > 0 {
		key, _ := dc.queue.Get()
		queued = append(queued, key)
		dc.queue.Done(key)
	}
	slices.Sort(queued)
	if want := []string{"shop/app", "web/app"}; !slices.Equal(queued, want) {
		t.Errorf("queued %q, want %q", queued, want)
	}
}
