package graysync

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"

	"github.com/kubegray/kubectl-gray/controller/deployment"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// TestProvidersListedInOwnNamespaceOnly: whether every namespace is watched or some, the only
// ConfigMaps labelled kubegray.io/gates=providers the controller's caches receive are those of
// its own namespace (a tenant's never reaches it, not even without its data), while the gate
// definitions of the watched namespaces and of its own are all there, each cached once.
func TestProvidersListedInOwnNamespaceOnly(t *testing.T) {
	labelled := func(ns, name, value string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: types.UID(ns + "-" + name),
			Labels: map[string]string{grayapi.GatesLabel: value}}, Data: map[string]string{"k": "v"}}
	}
	own := "gray-system"
	for name, newCaches := range map[string]func(client *fake.Clientset) deployment.Informers{
		"every namespace": func(client *fake.Clientset) deployment.Informers {
			return deployment.AllNamespaces(informers.NewSharedInformerFactory(client, 0),
				informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(own)), own)
		},
		"some namespaces": func(client *fake.Clientset) deployment.Informers {
			return deployment.SomeNamespaces(client, 0, []string{"shop", own}, own)
		},
	} {
		t.Run(name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			client := fake.NewClientset(labelled("shop", "gates", grayapi.GatesLabelValue), labelled("shop", "mine", grayapi.ProvidersLabelValue),
				labelled(own, "defaults", grayapi.GatesLabelValue), labelled(own, "providers", grayapi.ProvidersLabelValue))
			caches := newCaches(client)
			var gs *Controller
			if _, err := deployment.NewDeploymentController(ctx, caches, client, deployment.Options{FieldManager: testFieldManager,
				Gray: func(ctx context.Context, port *deployment.DeploymentController) (deployment.GrayHook, error) {
					var err error
					gs, err = New(ctx, port, caches, Options{})
					return gs, err
				}}); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(ctx)
			caches.Start(ctx)
			defer caches.Shutdown()
			defer cancel() // before Shutdown, which waits for the informers to stop
			if !cache.WaitForCacheSync(ctx.Done(), gs.gates.synced) {
				t.Fatal("caches did not sync")
			}

			// Everything cached of each namespace: with every namespace watched, shop's ConfigMaps
			// are read from the informer of every namespace, which would hold a tenant's providers.
			var cached []string
			for _, ns := range []string{"shop", own} {
				cms, err := gs.gates.definitions.ConfigMaps(ns).List(labels.Everything())
				if err != nil {
					t.Fatal(err)
				}
				for _, cm := range cms {
					cached = append(cached, "definitions "+cm.Namespace+"/"+cm.Name)
				}
			}
			providers, err := gs.gates.providers.List(labels.SelectorFromSet(labels.Set{grayapi.GatesLabel: grayapi.ProvidersLabelValue}))
			if err != nil {
				t.Fatal(err)
			}
			for _, cm := range providers {
				cached = append(cached, "providers "+cm.Namespace+"/"+cm.Name)
			}
			slices.Sort(cached)
			want := []string{"definitions gray-system/defaults", "definitions shop/gates", "providers gray-system/providers"}
			if name == "some namespaces" {
				// gray-system's own informer lists both kinds, and is where its definitions are read.
				want = []string{"definitions gray-system/defaults", "definitions gray-system/providers", "definitions shop/gates", "providers gray-system/providers"}
			}
			if !slices.Equal(cached, want) {
				t.Errorf("ConfigMaps cached: %q, want %q", cached, want)
			}
		})
	}
}
