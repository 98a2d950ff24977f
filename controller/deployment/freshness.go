package deployment

import (
	"context"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/kubegray/kubectl-gray/controller/metrics"
)

// CacheChecks says what a sync needs to be recent before it acts. The cached Deployment is
// always checked against the versions our own Updates replaced (cheap, no request); upstream's
// syncs ask for nothing more, a gray sync for the rest (controller/graysync).
type CacheChecks struct {
	// ReplicaSetWrites, when set, reports whether every ReplicaSet write the sync's side
	// remembers for key is in the ReplicaSet cache, and otherwise the name of one missing.
	ReplicaSetWrites func(key string, rsList []*appsv1.ReplicaSet) (caughtUp bool, missing string)
	// Live: a live read of the Deployment has the cached version (one GET, before the sync
	// acts).
	Live bool
	// LiveBeforeUnguardedWrite: the same read, made only before the sync's first write that the
	// server would not refuse by itself when the cache was behind (liveCheck).
	LiveBeforeUnguardedWrite bool
	// NewReplicaSetNotCached, when set, reports whether the server has a ReplicaSet of the
	// Deployment's template that the cache lacks (alongside mode: one LIST, only when the cache
	// has none, before a create).
	NewReplicaSetNotCached func(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) (bool, error)
}

// CacheFresh is the one check a sync passes before it acts on the informers' caches: it says
// whether they are recent enough, and otherwise counts the deferral by reason
// (gray_controller_sync_deferred_total) and returns fresh false. A deferred sync does nothing:
// the informer event that brings the newer object syncs the Deployment again. With
// checks.LiveBeforeUnguardedWrite, the returned ctx carries the live check for the sync's writes.
func (dc *DeploymentController) CacheFresh(ctx context.Context, key string, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet, checks CacheChecks) (_ context.Context, fresh bool, err error) {
	logger := klog.FromContext(ctx).V(4)
	if dc.deploymentWrites.superseded(key, d.ResourceVersion) {
		logger.Info("Cached deployment is one our own write replaced, waiting for the newer one",
			"deployment", klog.KObj(d), "resourceVersion", d.ResourceVersion)
		return deferred(metrics.DeferredOwnWrite)
	}
	if checks.ReplicaSetWrites != nil {
		if caughtUp, missing := checks.ReplicaSetWrites(key, rsList); !caughtUp {
			logger.Info("ReplicaSet cache is behind our write, waiting for it", "deployment", klog.KObj(d), "replicaSet", missing)
			return deferred(metrics.DeferredReplicaSetWrite)
		}
	}
	if checks.Live {
		if err := dc.liveIs(ctx, d); err != nil {
			return nil, false, IgnoreBehind(err)
		}
	}
	if checks.NewReplicaSetNotCached != nil {
		behind, err := checks.NewReplicaSetNotCached(ctx, d, rsList)
		if err != nil {
			return nil, false, err
		}
		if behind {
			return deferred(metrics.DeferredNewReplicaSet)
		}
	}
	if checks.LiveBeforeUnguardedWrite {
		ctx = context.WithValue(ctx, liveCheckKey{}, &liveCheck{dc: dc, d: d})
	}
	return ctx, true, nil
}

// deferred counts a sync deferred for reason: not fresh, and no error (nothing failed).
func deferred(reason string) (context.Context, bool, error) {
	metrics.RecordSyncDeferred(reason)
	return nil, false, nil
}

// errCacheBehind ends a sync that found its cached Deployment older than the server's (or
// deleted) before a write: the informer event that brings the newer object syncs it again.
var errCacheBehind = errors.New("the cached deployment is behind the server")

// IgnoreBehind is err, unless it only says the sync was deferred (errCacheBehind).
func IgnoreBehind(err error) error {
	if errors.Is(err, errCacheBehind) {
		return nil
	}
	return err
}

// liveIs reads d live and returns errCacheBehind, counted, when the server has a newer version
// or another object by its name, and errCacheBehind uncounted when it is gone (the delete
// event forgets it).
func (dc *DeploymentController) liveIs(ctx context.Context, d *appsv1.Deployment) error {
	live, err := dc.client.AppsV1().Deployments(d.Namespace).Get(ctx, d.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return errCacheBehind
	case err != nil:
		return fmt.Errorf("deployment %s/%s: reading it live: %w", d.Namespace, d.Name, err)
	case live.UID != d.UID || live.ResourceVersion != d.ResourceVersion:
		klog.FromContext(ctx).V(4).Info("Cached deployment is behind, waiting for its update", "deployment", klog.KObj(d),
			"cachedResourceVersion", d.ResourceVersion, "liveResourceVersion", live.ResourceVersion)
		metrics.RecordSyncDeferred(metrics.DeferredDeployment)
		return errCacheBehind
	}
	return nil
}

// liveCheck is instead mode's live read of the Deployment a gray sync acts on, made once and
// only when the sync is about to do something the server would not refuse by itself if the
// cache were behind: a ReplicaSet write (guardedReplicaSets), or an event decided before any
// Deployment write. A Deployment Update or UpdateStatus carries the cached resourceVersion, so
// the server answers 409 to one based on a stale cache, and once one succeeded the cache was
// the server's version and no read is needed. A held rollout's sync that records a gate's
// measurement or nothing at all then makes no read (BENCHMARKS.md: Gates).
type liveCheck struct {
	dc *DeploymentController
	// d is the Deployment as cached when the sync began.
	d *appsv1.Deployment
	// confirmed: the cached version was the server's (read live, or written over).
	confirmed bool
}

type liveCheckKey struct{}

// ConfirmLive makes the sync's live check if ctx carries one not yet confirmed: errCacheBehind
// when the cache is behind. Without a check in ctx (upstream's syncs, alongside mode, which
// reads live before it acts) it does nothing.
func ConfirmLive(ctx context.Context) error {
	c, ok := ctx.Value(liveCheckKey{}).(*liveCheck)
	if !ok || c.confirmed {
		return nil
	}
	if err := c.dc.liveIs(ctx, c.d); err != nil {
		return err
	}
	c.confirmed = true
	return nil
}

// deploymentWritten confirms ctx's live check, if any: an Update of the Deployment succeeded
// against the resourceVersion the sync read.
func deploymentWritten(ctx context.Context) {
	if c, ok := ctx.Value(liveCheckKey{}).(*liveCheck); ok {
		c.confirmed = true
	}
}

// deploymentRefused answers a conflicting Update of the Deployment: for a sync whose live check
// is still to be made, it is that check failing (the server has another version than the cache
// the sync read), so the sync is deferred like one that read it live; otherwise conflict.
func deploymentRefused(ctx context.Context, conflict error) error {
	c, ok := ctx.Value(liveCheckKey{}).(*liveCheck)
	if !ok || c.confirmed {
		return conflict
	}
	klog.FromContext(ctx).V(4).Info("Cached deployment is behind, the server refused a write of it", "deployment", klog.KObj(c.d),
		"cachedResourceVersion", c.d.ResourceVersion)
	metrics.RecordSyncDeferred(metrics.DeferredDeployment)
	return errCacheBehind
}
