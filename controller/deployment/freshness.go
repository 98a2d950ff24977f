package deployment

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/kubegray/kubectl-gray/controller/metrics"
)

// cacheChecks says what a sync needs to be recent before it acts. The cached Deployment is
// always checked against the versions our own Updates replaced (cheap, no request).
type cacheChecks struct {
	// replicaSetWrites: every ReplicaSet create or resize of ours is in the ReplicaSet cache.
	replicaSetWrites bool
	// live: a live read of the Deployment has the cached version (one GET; the live object also
	// keeps the managed fields the cache drops).
	live bool
	// newReplicaSet: the server has no ReplicaSet of the Deployment's template that the cache
	// lacks (one LIST, only when the cache has none: alongside mode, before a create).
	newReplicaSet bool
}

// cacheFresh is the one check a sync passes before it acts on the informers' caches: it says
// whether they are recent enough, and otherwise counts the deferral by reason
// (gray_controller_sync_deferred_total) and returns fresh false. A deferred sync does nothing:
// the informer event that brings the newer object syncs the Deployment again. live is the live
// Deployment when checks.live asked for it.
func (dc *DeploymentController) cacheFresh(ctx context.Context, key string, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet, checks cacheChecks) (live *appsv1.Deployment, fresh bool, err error) {
	logger := klog.FromContext(ctx).V(4)
	if dc.deploymentWrites.superseded(key, d.ResourceVersion) {
		logger.Info("Cached deployment is one our own write replaced, waiting for the newer one",
			"deployment", klog.KObj(d), "resourceVersion", d.ResourceVersion)
		return deferred(metrics.DeferredOwnWrite)
	}
	if checks.replicaSetWrites {
		if caughtUp, missing := dc.rsExpectations.caughtUp(key, rsList); !caughtUp {
			logger.Info("ReplicaSet cache is behind our write, waiting for it", "deployment", klog.KObj(d), "replicaSet", missing)
			return deferred(metrics.DeferredReplicaSetWrite)
		}
	}
	if checks.live {
		live, err = dc.client.AppsV1().Deployments(d.Namespace).Get(ctx, d.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			// Deleted: the delete event forgets it.
			return nil, false, nil
		case err != nil:
			return nil, false, fmt.Errorf("deployment %s/%s: reading it live: %w", d.Namespace, d.Name, err)
		case live.UID != d.UID || live.ResourceVersion != d.ResourceVersion:
			logger.Info("Cached deployment is behind, waiting for its update", "deployment", klog.KObj(d),
				"cachedResourceVersion", d.ResourceVersion, "liveResourceVersion", live.ResourceVersion)
			return deferred(metrics.DeferredDeployment)
		}
	}
	if checks.newReplicaSet {
		behind, err := dc.newReplicaSetNotCached(ctx, d, rsList)
		if err != nil {
			return nil, false, err
		}
		if behind {
			return deferred(metrics.DeferredNewReplicaSet)
		}
	}
	return live, true, nil
}

// deferred counts a sync deferred for reason: not fresh, and no error (nothing failed).
func deferred(reason string) (*appsv1.Deployment, bool, error) {
	metrics.RecordSyncDeferred(reason)
	return nil, false, nil
}
