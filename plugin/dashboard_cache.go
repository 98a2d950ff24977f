package plugin

// The dashboard's view of the cluster: one shared informer per resource for the whole server,
// however many pages are open, and a broadcast of "something changed" to the pages' streams.

import (
	"context"
	"fmt"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	"k8s.io/client-go/tools/cache"
)

// ownerIndex indexes ReplicaSets and pods by the UID of their controller, eventIndex events
// by the UID of the object they are about.
const (
	ownerIndex = "owner"
	eventIndex = "involvedObject"
)

// syncTimeout bounds the first list of every resource: a user who may not list one of them
// gets an error naming it instead of a page that never fills.
const syncTimeout = 30 * time.Second

// clusterCache holds the Deployments, ReplicaSets, pods and events of the dashboard's scope.
type clusterCache struct {
	factory     informers.SharedInformerFactory
	deployments appslisters.DeploymentLister
	replicaSets cache.Indexer
	pods        cache.Indexer
	events      cache.Indexer
	// changes signals a change of any of them to the subscribers of the Deployment it is
	// about (deploymentOf), rowChanges one of a Deployment or ReplicaSet, all the list page's
	// rows are built from: pods and events, which change most, do not wake it.
	changes, rowChanges *broadcaster
	synced              []namedSynced
}

type namedSynced struct {
	resource string
	synced   cache.InformerSynced
}

// newClusterCache sets up the informers of namespace ("" for all namespaces).
func newClusterCache(client kubernetes.Interface, namespace string) (*clusterCache, error) {
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(namespace))
	c := &clusterCache{factory: factory, changes: newBroadcaster(), rowChanges: newBroadcaster()}
	deployments := factory.Apps().V1().Deployments()
	replicaSets := factory.Apps().V1().ReplicaSets().Informer()
	pods := factory.Core().V1().Pods().Informer()
	events := factory.Core().V1().Events().Informer()
	if err := replicaSets.AddIndexers(cache.Indexers{ownerIndex: byController}); err != nil {
		return nil, err
	}
	if err := pods.AddIndexers(cache.Indexers{ownerIndex: byController}); err != nil {
		return nil, err
	}
	if err := events.AddIndexers(cache.Indexers{eventIndex: byInvolvedObject}); err != nil {
		return nil, err
	}
	c.deployments = deployments.Lister()
	c.replicaSets, c.pods, c.events = replicaSets.GetIndexer(), pods.GetIndexer(), events.GetIndexer()
	for _, r := range []struct {
		name     string
		informer cache.SharedIndexInformer
		inRows   bool
	}{{"deployments", deployments.Informer(), true}, {"replicasets", replicaSets, true}, {"pods", pods, false}, {"events", events, false}} {
		// The page never shows managedFields; dropping them roughly halves what the cache holds.
		if err := r.informer.SetTransform(dropManagedFields); err != nil {
			return nil, err
		}
		inRows := r.inRows
		if _, err := r.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { c.changed(inRows, obj) },
			DeleteFunc: func(obj any) { c.changed(inRows, obj) },
			// An object that changed owner is news for the page of each.
			UpdateFunc: func(old, obj any) { c.changed(inRows, old, obj) },
		}); err != nil {
			return nil, err
		}
		c.synced = append(c.synced, namedSynced{r.name, r.informer.HasSynced})
	}
	return c, nil
}

// start runs the informers until ctx ends and waits for their first list.
func (c *clusterCache) start(ctx context.Context) error {
	c.factory.Start(ctx.Done())
	syncCtx, cancel := context.WithTimeout(ctx, syncTimeout)
	defer cancel()
	for _, s := range c.synced {
		if !cache.WaitForCacheSync(syncCtx.Done(), s.synced) {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("could not list %s within %s: check that you may list and watch them ('kubectl auth can-i watch %s')", s.resource, syncTimeout, s.resource)
		}
	}
	return nil
}

// changed wakes the pages of the Deployments objs are about, and the list when objs are of
// what its rows are built from.
func (c *clusterCache) changed(inRows bool, objs ...any) {
	for _, obj := range objs {
		if key := c.deploymentOf(obj); key != "" {
			c.changes.notify(key)
		}
	}
	if inRows {
		c.rowChanges.notify(anyDeployment)
	}
}

// deploymentOf is the namespace/name of the Deployment obj is about, "" for none: the
// Deployment itself, a ReplicaSet it controls, a pod of one, an event about it. A rollout page
// shows nothing else (related).
func (c *clusterCache) deploymentOf(obj any) string {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	switch o := obj.(type) {
	case *appsv1.Deployment:
		return o.Namespace + "/" + o.Name
	case *appsv1.ReplicaSet:
		if ref := metav1.GetControllerOf(o); ref != nil && ref.Kind == "Deployment" {
			return o.Namespace + "/" + ref.Name
		}
	case *corev1.Pod:
		if ref := metav1.GetControllerOf(o); ref != nil && ref.Kind == "ReplicaSet" {
			if rs, ok, _ := c.replicaSets.GetByKey(o.Namespace + "/" + ref.Name); ok {
				return c.deploymentOf(rs)
			}
		}
	case *corev1.Event:
		if o.InvolvedObject.Kind == "Deployment" {
			return o.Namespace + "/" + o.InvolvedObject.Name
		}
	}
	return ""
}

// grayDeployments are the Deployments carrying kubegray.io/percent, not to be modified.
func (c *clusterCache) grayDeployments() ([]*appsv1.Deployment, error) {
	all, err := c.deployments.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	gray := all[:0:0]
	for _, d := range all {
		if isGray(d) {
			gray = append(gray, d)
		}
	}
	return gray, nil
}

// ownedReplicaSets are the ReplicaSets d controls.
func (c *clusterCache) ownedReplicaSets(d *appsv1.Deployment) []*appsv1.ReplicaSet {
	objs, _ := c.replicaSets.ByIndex(ownerIndex, string(d.UID))
	rss := make([]*appsv1.ReplicaSet, 0, len(objs))
	for _, o := range objs {
		rss = append(rss, o.(*appsv1.ReplicaSet))
	}
	return rss
}

// related are the ReplicaSets of d, their pods and the events about d.
func (c *clusterCache) related(d *appsv1.Deployment) *related {
	rel := &related{replicaSets: c.ownedReplicaSets(d)}
	for _, rs := range rel.replicaSets {
		objs, _ := c.pods.ByIndex(ownerIndex, string(rs.UID))
		for _, o := range objs {
			rel.pods = append(rel.pods, o.(*corev1.Pod))
		}
	}
	objs, _ := c.events.ByIndex(eventIndex, string(d.UID))
	for _, o := range objs {
		rel.events = append(rel.events, *o.(*corev1.Event))
	}
	return rel
}

func byController(obj any) ([]string, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	if ref := metav1.GetControllerOf(m); ref != nil {
		return []string{string(ref.UID)}, nil
	}
	return nil, nil
}

func byInvolvedObject(obj any) ([]string, error) {
	e, ok := obj.(*corev1.Event)
	if !ok || e.InvolvedObject.UID == "" {
		return nil, nil
	}
	return []string{string(e.InvolvedObject.UID)}, nil
}

func dropManagedFields(obj any) (any, error) {
	if m, err := meta.Accessor(obj); err == nil {
		m.SetManagedFields(nil)
	}
	return obj, nil
}

// broadcaster wakes the subscribers of a Deployment (namespace/name) when something about it
// changed, and those of anyDeployment at every change. A subscriber's channel holds one
// signal, so a burst of changes while it is busy makes one wake-up.
type broadcaster struct {
	mu   sync.Mutex
	subs map[chan struct{}]string
}

// anyDeployment is the key of every change.
const anyDeployment = ""

func newBroadcaster() *broadcaster {
	return &broadcaster{subs: map[chan struct{}]string{}}
}

// subscribe follows the changes of key: a Deployment's namespace/name, or anyDeployment.
func (b *broadcaster) subscribe(key string) chan struct{} {
	ch := make(chan struct{}, 1)
	b.mu.Lock()
	b.subs[ch] = key
	b.mu.Unlock()
	return ch
}

func (b *broadcaster) unsubscribe(ch chan struct{}) {
	b.mu.Lock()
	delete(b.subs, ch)
	b.mu.Unlock()
}

// notify signals a change of key.
func (b *broadcaster) notify(key string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for ch, follows := range b.subs {
		if follows != anyDeployment && follows != key {
			continue
		}
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}
