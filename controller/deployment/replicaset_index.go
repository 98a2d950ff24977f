package deployment

// The ReplicaSet cache's index by controller: the per-rollout series find a Deployment's
// ReplicaSets by its UID at each scrape, at a cost of its own ReplicaSets rather than its
// namespace's (BENCHMARKS.md, "A scrape of the per-rollout series").

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
)

// replicaSetControllerUIDIndex indexes ReplicaSets by the UID of their controller ownerReference
// (orphans are not indexed).
const replicaSetControllerUIDIndex = "kubegray.io/replicaset-controller-uid"

// addReplicaSetControllerUIDIndexer indexes ReplicaSets by their controller's UID (idempotent per
// informer).
func addReplicaSetControllerUIDIndexer(informer cache.SharedIndexInformer) error {
	if _, exists := informer.GetIndexer().GetIndexers()[replicaSetControllerUIDIndex]; exists {
		return nil
	}
	return informer.AddIndexers(cache.Indexers{replicaSetControllerUIDIndex: controllerUID})
}

// ReplicaSetsControlledBy are the cached ReplicaSets whose controller ownerReference names uid,
// whatever their labels. They are the cache's and must not be modified.
func (dc *DeploymentController) ReplicaSetsControlledBy(uid types.UID) ([]*appsv1.ReplicaSet, error) {
	objs, err := dc.rsIndexer.ByIndex(replicaSetControllerUIDIndex, string(uid))
	if err != nil {
		return nil, fmt.Errorf("listing replica sets controlled by %s: %w", uid, err)
	}
	rss := make([]*appsv1.ReplicaSet, 0, len(objs))
	for _, obj := range objs {
		if rs, ok := obj.(*appsv1.ReplicaSet); ok {
			rss = append(rss, rs)
		}
	}
	return rss, nil
}
