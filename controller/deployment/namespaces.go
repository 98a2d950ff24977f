package deployment

import (
	"context"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// Informers are the controller's caches: one informer factory for every namespace, or, with
// alongside mode's --namespaces, one factory per watched namespace (a namespaced list and watch
// is what a RoleBinding allows); and in both, one for the controller's own namespace, whose
// ConfigMaps hold the gate providers and the cluster-wide gate definitions.
type Informers struct {
	// factories by namespace: metav1.NamespaceAll's when every namespace is watched, else each
	// watched namespace's; and own's.
	factories map[string]informers.SharedInformerFactory
	// watched are the namespaces whose Deployments, ReplicaSets and pods are cached; own is the
	// controller's namespace, which has a factory for its ConfigMaps even when it is not watched.
	watched []string
	own     string
}

// AllNamespaces are the caches of every namespace (factory) and of the controller's own, own
// (ownFactory, made with informers.WithNamespace(own)).
func AllNamespaces(factory, ownFactory informers.SharedInformerFactory, own string) Informers {
	return Informers{factories: map[string]informers.SharedInformerFactory{metav1.NamespaceAll: factory, own: ownFactory},
		watched: []string{metav1.NamespaceAll}, own: own}
}

// SomeNamespaces are the caches of the given namespaces and of the controller's own.
func SomeNamespaces(client kubernetes.Interface, resync time.Duration, namespaces []string, own string) Informers {
	i := Informers{factories: map[string]informers.SharedInformerFactory{}, watched: namespaces, own: own}
	for _, ns := range append(slices.Clone(namespaces), own) {
		if i.factories[ns] == nil {
			i.factories[ns] = informers.NewSharedInformerFactoryWithOptions(client, resync, informers.WithNamespace(ns))
		}
	}
	return i
}

// Own is the controller's namespace.
func (i Informers) Own() string { return i.own }

// WatchesAll reports whether one factory watches every namespace.
func (i Informers) WatchesAll() bool {
	_, all := i.factories[metav1.NamespaceAll]
	return all
}

// Start starts every factory's informers.
func (i Informers) Start(ctx context.Context) {
	for _, f := range i.factories {
		f.StartWithContext(ctx)
	}
}

// Shutdown waits for the informers of every factory to stop.
func (i Informers) Shutdown() {
	for _, f := range i.factories {
		f.Shutdown()
	}
}

// workloadInformers are the Deployment, ReplicaSet and pod informers of one watched namespace.
type workloadInformers struct {
	namespace                string
	deployments, replicaSets cache.SharedIndexInformer
	pods                     cache.SharedIndexInformer
}

// workloads returns the informers of each watched namespace, registering them with its factory.
func (i Informers) workloads() []workloadInformers {
	var out []workloadInformers
	for _, ns := range i.watched {
		f := i.factories[ns]
		out = append(out, workloadInformers{namespace: ns, deployments: f.Apps().V1().Deployments().Informer(),
			replicaSets: f.Apps().V1().ReplicaSets().Informer(), pods: f.Core().V1().Pods().Informer()})
	}
	return out
}

// byNamespace routes a namespace's reads to the cache that holds it: the one of every namespace,
// the namespace's own, or none (a namespace not watched has no objects).
type byNamespace[L any] struct {
	listers map[string]L
	none    L
}

func (b byNamespace[L]) of(namespace string) L {
	if l, ok := b.listers[metav1.NamespaceAll]; ok {
		return l
	}
	if l, ok := b.listers[namespace]; ok {
		return l
	}
	return b.none
}

// routeByNamespace makes a lister of each cache, and one of an empty cache for the namespaces
// none holds.
func routeByNamespace[L any](indexers map[string]cache.Indexer, newLister func(cache.Indexer) L) byNamespace[L] {
	b := byNamespace[L]{listers: map[string]L{},
		none: newLister(cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}))}
	for ns, idx := range indexers {
		b.listers[ns] = newLister(idx)
	}
	return b
}

// deploymentLister reads the Deployments of the watched namespaces.
type deploymentLister struct {
	byNamespace[appslisters.DeploymentLister]
}

func (l deploymentLister) List(selector labels.Selector) ([]*appsv1.Deployment, error) {
	var all []*appsv1.Deployment
	for _, one := range l.listers {
		ds, err := one.List(selector)
		if err != nil {
			return nil, err
		}
		all = append(all, ds...)
	}
	return all, nil
}

func (l deploymentLister) Deployments(namespace string) appslisters.DeploymentNamespaceLister {
	return l.of(namespace).Deployments(namespace)
}

// replicaSetLister reads the ReplicaSets of the watched namespaces, a namespace at a time.
type replicaSetLister struct {
	byNamespace[appslisters.ReplicaSetLister]
}

func (l replicaSetLister) ReplicaSets(namespace string) appslisters.ReplicaSetNamespaceLister {
	return l.of(namespace).ReplicaSets(namespace)
}

// ConfigMapLister reads the ConfigMaps of the watched namespaces and the controller's own, each
// from the informer Informers.ConfigMaps registered for it (the one of every namespace first).
type ConfigMapLister struct {
	byNamespace[corelisters.ConfigMapLister]
	own corelisters.ConfigMapNamespaceLister
}

// Own reads the controller's namespace's ConfigMaps as its own factory's informer has them
// (which may list what the informer of every namespace does not).
func (l ConfigMapLister) Own() corelisters.ConfigMapNamespaceLister { return l.own }

func (l ConfigMapLister) ConfigMaps(namespace string) corelisters.ConfigMapNamespaceLister {
	return l.of(namespace).ConfigMaps(namespace)
}

// ConfigMaps registers on each factory (every namespace's, or each watched one's and the
// controller's own) the ConfigMap informer newInformer makes for its namespace, and returns the
// lister that reads them and whether all have synced. The gray hook's gate definitions and
// providers are these ConfigMaps (controller/graysync: gateBook).
func (i Informers) ConfigMaps(newInformer func(namespace string, factory informers.SharedInformerFactory) (cache.SharedIndexInformer, error)) (ConfigMapLister, cache.InformerSynced, error) {
	var synced []cache.InformerSynced
	indexers := map[string]cache.Indexer{}
	for ns, factory := range i.factories {
		informer, err := newInformer(ns, factory)
		if err != nil {
			return ConfigMapLister{}, nil, err
		}
		indexers[ns] = informer.GetIndexer()
		synced = append(synced, informer.HasSynced)
	}
	return ConfigMapLister{routeByNamespace(indexers, corelisters.NewConfigMapLister), corelisters.NewConfigMapLister(indexers[i.own]).ConfigMaps(i.own)},
		allSynced(synced), nil
}

// uidIndex finds objects by a controller-UID index (podControllerUIDIndex,
// replicaSetControllerUIDIndex) in every watched namespace's cache (a UID is unique in the
// cluster).
type uidIndex []cache.Indexer

func (p uidIndex) ByIndex(index, value string) ([]any, error) {
	if len(p) == 1 {
		// Every namespace in one cache: no copy on the sync's path.
		return p[0].ByIndex(index, value)
	}
	var all []any
	for _, idx := range p {
		objs, err := idx.ByIndex(index, value)
		if err != nil {
			return nil, err
		}
		all = append(all, objs...)
	}
	return all, nil
}

// allSynced reports whether every one of the caches has synced.
func allSynced(synced []cache.InformerSynced) cache.InformerSynced {
	return func() bool {
		for _, s := range synced {
			if !s() {
				return false
			}
		}
		return true
	}
}
