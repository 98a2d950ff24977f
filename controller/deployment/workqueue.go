package deployment

// The workers and the queue: Deployments are synced one key at a time, failures requeued with
// the rate limiter's backoff and dropped after maxRetries, as upstream does.

import (
	"context"
	"fmt"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/kubegray/kubectl-gray/controller/metrics"
)

// Run waits for the caches, starts workers, blocks until ctx is done and then shuts the queue
// down and waits for the workers to return.
func (dc *DeploymentController) Run(ctx context.Context, workers int) {
	defer utilruntime.HandleCrashWithContext(ctx)

	if dc.eventBroadcaster != nil {
		dc.eventBroadcaster.StartStructuredLogging(3)
		dc.eventBroadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: dc.client.CoreV1().Events("")})
		defer dc.eventBroadcaster.Shutdown()
	}

	logger := klog.FromContext(ctx)
	logger.Info("Starting controller", "controller", "deployment")

	var wg sync.WaitGroup
	defer func() {
		logger.Info("Shutting down controller", "controller", "deployment")
		dc.queue.ShutDown()
		wg.Wait()
	}()

	if !cache.WaitForNamedCacheSyncWithContext(ctx, dc.workloadsSynced, dc.gray.HasSynced) {
		return
	}
	for range workers {
		wg.Go(func() {
			wait.UntilWithContext(ctx, dc.worker, time.Second)
		})
	}
	<-ctx.Done()
}

// HasSynced reports whether every informer cache (Deployments, ReplicaSets, pods, and the gray
// hook's) has synced at least once.
func (dc *DeploymentController) HasSynced() bool {
	return dc.workloadsSynced() && dc.gray.HasSynced()
}

// EnqueueKey queues the Deployment of key (a measurement taken off the sync path wakes it).
func (dc *DeploymentController) EnqueueKey(key string) { dc.queue.Add(key) }

func (dc *DeploymentController) Enqueue(d *appsv1.Deployment) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(d)
	if err != nil {
		utilruntime.HandleError(fmt.Errorf("couldn't get key for object %#v: %w", d, err))
		return
	}
	dc.queue.Add(key)
}

func (dc *DeploymentController) enqueueRateLimited(d *appsv1.Deployment) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(d)
	if err != nil {
		utilruntime.HandleError(fmt.Errorf("couldn't get key for object %#v: %w", d, err))
		return
	}
	dc.queue.AddRateLimited(key)
}

// EnqueueAfter schedules a progress-deadline check of d.
func (dc *DeploymentController) EnqueueAfter(d *appsv1.Deployment, after time.Duration) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(d)
	if err != nil {
		utilruntime.HandleError(fmt.Errorf("couldn't get key for object %#v: %w", d, err))
		return
	}
	dc.queue.AddAfter(key, after)
}

func (dc *DeploymentController) worker(ctx context.Context) {
	for dc.processNextWorkItem(ctx) {
	}
}

// processNextWorkItem syncs one key; the workqueue guarantees no two workers hold the same key.
func (dc *DeploymentController) processNextWorkItem(ctx context.Context) bool {
	key, quit := dc.queue.Get()
	if quit {
		return false
	}
	defer dc.queue.Done(key)

	start := time.Now()
	err := dc.syncHandler(ctx, key)
	metrics.RecordSync(start, err)
	dc.handleErr(ctx, err, key)
	return true
}

// handleErr forgets a key on success or when its namespace is terminating (every later write
// would fail the same way), retries it with backoff up to maxRetries times, then drops it.
func (dc *DeploymentController) handleErr(ctx context.Context, err error, key string) {
	logger := klog.FromContext(ctx)
	if err == nil || apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
		dc.queue.Forget(key)
		return
	}
	ns, name, keyErr := cache.SplitMetaNamespaceKey(key)
	if keyErr != nil {
		logger.Error(keyErr, "Failed to split meta namespace cache key", "cacheKey", key)
	}
	if dc.queue.NumRequeues(key) < maxRetries {
		logger.V(2).Info("Error syncing deployment", "deployment", klog.KRef(ns, name), "err", err)
		dc.queue.AddRateLimited(key)
		return
	}
	utilruntime.HandleErrorWithContext(ctx, err, "Dropping deployment out of the queue", "deployment", klog.KRef(ns, name))
	dc.queue.Forget(key)
}
