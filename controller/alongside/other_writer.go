package alongside

// The other writer of alongside mode. The built-in controller writes the same ReplicaSets as
// we do, though never their sizes (freeze.go): it copies every Deployment annotation onto the
// new one and records revisions, so one of our resizes can conflict with an annotation write
// of its own. Such a conflict is retried at once on the live object when the live ReplicaSet
// has the size and generation the write was planned from (UnresizedLive), instead of waiting
// for a rate-limited requeue.
//
// And a ReplicaSet the built-in controller created for a template it saw before the takeover
// may not be in our cache yet when we would create one: where kube-controller-manager is
// another minor version than ours, its pod-template-hash of the same template differs, our
// create does not collide with its ReplicaSet, and the Deployment would get two ReplicaSets
// of one template (upstream picks the oldest as the new one, and the rollout replaces the
// other's pods for nothing). So the sync that would create one first looks for it live
// (NewReplicaSetNotCached).

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/kubegray/kubectl-gray/pkg/deployutil"
)

// UnresizedLive reads rs live after one of our writes of it conflicted, and returns it when it
// has the size and generation the write was planned from: the same write on the live object
// is then as safe as the planned one. Otherwise it returns the conflict, and the next sync
// plans again.
func (v *View) UnresizedLive(ctx context.Context, rs *appsv1.ReplicaSet, conflict error) (*appsv1.ReplicaSet, error) {
	live, err := v.c.client.AppsV1().ReplicaSets(rs.Namespace).Get(ctx, rs.Name, metav1.GetOptions{})
	switch {
	case err != nil || live.UID != rs.UID:
		return nil, conflict
	case live.Generation != rs.Generation || *live.Spec.Replicas != *rs.Spec.Replicas:
		klog.FromContext(ctx).V(2).Info("Replica set resized by another writer since it was read", "replicaSet", klog.KObj(rs),
			"readReplicas", *rs.Spec.Replicas, "liveReplicas", *live.Spec.Replicas, "by", deployutil.FieldOwner(live.ManagedFields, "f:spec", "f:replicas"))
		return nil, conflict
	}
	klog.FromContext(ctx).V(4).Info("Retrying a ReplicaSet write after an annotation-only conflict", "replicaSet", klog.KObj(rs))
	return live, nil
}

// NewReplicaSetNotCached reports whether the server has a ReplicaSet of d's template, owned
// by d, that rsList (the cache) lacks: the sync then stops, and the informer's event for it
// syncs d again. It reads only when the cache has no such ReplicaSet, that is before a create.
func (v *View) NewReplicaSetNotCached(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) (bool, error) {
	if deployutil.FindNewReplicaSet(d, rsList) != nil {
		return false, nil
	}
	items, err := v.c.liveReplicaSets(ctx, d)
	if err != nil {
		return false, fmt.Errorf("deployment %s/%s: looking for its new replica set live: %w", d.Namespace, d.Name, err)
	}
	for i := range items {
		rs := &items[i]
		if ref := metav1.GetControllerOf(rs); ref != nil && ref.UID == d.UID && deployutil.EqualIgnoreHash(&rs.Spec.Template, &d.Spec.Template) {
			klog.FromContext(ctx).V(2).Info("New replica set is on the server but not yet in the cache, waiting for it", "deployment", klog.KObj(d),
				"replicaSet", klog.KObj(rs), "by", deployutil.FieldOwner(rs.ManagedFields, "f:spec", "f:replicas"))
			return true, nil
		}
	}
	return false, nil
}

// liveReplicaSets lists the ReplicaSets matching d's selector from the server, not the cache.
func (c *Controller) liveReplicaSets(ctx context.Context, d *appsv1.Deployment) ([]appsv1.ReplicaSet, error) {
	list, err := c.client.AppsV1().ReplicaSets(d.Namespace).List(ctx, metav1.ListOptions{
		LabelSelector: metav1.FormatLabelSelector(d.Spec.Selector),
	})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}
