// Package deployment is a from-scratch Deployment controller that behaves like the upstream
// Kubernetes v1.37 one (k8s.io/kubernetes pkg/controller/deployment). The file split
// and the function names follow upstream's pkg/controller/deployment so that a reader who knows
// upstream finds their way: deployment_controller.go (informers, syncDeployment) with its
// event handlers in handlers.go and its queue and workers in workqueue.go, sync.go (scaling,
// status, cleanup) with the new ReplicaSet in new_replicaset.go, rolling.go, recreate.go,
// rollback.go, progress.go, and controller_ref_manager.go (adoption and release of
// ReplicaSets). It knows gray rollouts only through GrayHook (gray_hook.go), which syncDeployment
// hands a Deployment's sync to; controller/graysync is that hook (docs/design.md).
package deployment

import (
	"context"
	"fmt"
	"reflect"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	appslisters "k8s.io/client-go/listers/apps/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

const (
	// DefaultFieldManager is the field manager used for every write when Options.FieldManager is
	// empty, and the event source component of the default recorder.
	DefaultFieldManager = grayapi.ControllerFieldManager

	// maxRetries bounds how often a failing key is requeued with backoff before it is dropped.
	// With the default controller rate limiter (5ms·2^n) the 15th retry waits about 82s; after
	// that only a new watch event (or a resync) brings the Deployment back.
	maxRetries = 15
)

// controllerKind is the GroupVersionKind written into the ownerReferences of our ReplicaSets.
var controllerKind = appsv1.SchemeGroupVersion.WithKind("Deployment")

// Options configure a DeploymentController.
type Options struct {
	// FieldManager is passed on every Create/Update/Patch/UpdateStatus; empty means
	// DefaultFieldManager.
	FieldManager string
	// Recorder records events on Deployments. If nil, the controller builds its own broadcaster
	// that writes to the API with source component DefaultFieldManager and starts it in Run.
	Recorder record.EventRecorder
	// Now is the clock of condition timestamps and progress-deadline maths; nil means time.Now.
	Now func() time.Time
	// Gray, when set, builds the hook syncDeployment hands gray Deployments to (GrayHook), from
	// this controller once its caches are registered; nil: every Deployment is synced as upstream
	// syncs it.
	Gray func(ctx context.Context, dc *DeploymentController) (GrayHook, error)
}

// DeploymentController reconciles Deployments into ReplicaSets exactly like the upstream
// controller does.
type DeploymentController struct {
	client       kubernetes.Interface
	fieldManager string

	// eventBroadcaster is nil when the caller supplied its own recorder.
	eventBroadcaster record.EventBroadcaster
	eventRecorder    record.EventRecorder

	// syncHandler is a field so tests can observe processNextWorkItem without a full sync.
	syncHandler func(ctx context.Context, key string) error

	// The caches of the watched namespaces (namespaces.go). podIndexer holds cachedPods (see
	// StripPod), indexed by podControllerUIDIndex; rsIndexer the ReplicaSets, indexed by
	// replicaSetControllerUIDIndex.
	dLister         deploymentLister
	rsLister        replicaSetLister
	rsIndexer       uidIndex
	podIndexer      uidIndex
	workloadsSynced cache.InformerSynced

	queue workqueue.TypedRateLimitingInterface[string]

	// now is the clock for condition timestamps and progress-deadline maths; tests freeze it.
	now func() time.Time

	// deploymentWrites holds the resourceVersions our Deployment Updates replaced
	// (deployment_writes.go) until the cache moves past them.
	deploymentWrites *supersededVersions
	// gray is Options.Gray's hook, or noGray.
	gray GrayHook
}

// NewDeploymentController registers informers on the caches' factories (Deployments,
// ReplicaSets, Pods of each watched namespace) and the event handlers. It must be called before
// the factories are started, because it installs the cache transforms (cache_transforms.go): any
// other user of the same factories' informers sees Deployments and ReplicaSets without managed
// fields, and cachedPods instead of pods, which a factory's pod lister cannot return.
func NewDeploymentController(ctx context.Context, caches Informers, client kubernetes.Interface, opts Options) (*DeploymentController, error) {
	logger := klog.FromContext(ctx)

	fieldManager := opts.FieldManager
	if fieldManager == "" {
		fieldManager = DefaultFieldManager
	}
	dc := &DeploymentController{
		client:        client,
		fieldManager:  fieldManager,
		eventRecorder: opts.Recorder,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "deployment"},
		),
		now:  time.Now,
		gray: noGray{},
	}
	if opts.Now != nil {
		dc.now = opts.Now
	}
	dc.deploymentWrites = newSupersededVersions(func() time.Time { return dc.now() })
	dc.client = recordingClient{Interface: client, versions: dc.deploymentWrites}
	if dc.eventRecorder == nil {
		dc.eventBroadcaster = record.NewBroadcaster(record.WithContext(ctx))
		dc.eventRecorder = dc.eventBroadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: DefaultFieldManager})
	}

	var synced []cache.InformerSynced
	dIndexers, rsIndexers := map[string]cache.Indexer{}, map[string]cache.Indexer{}
	for _, w := range caches.workloads() {
		if err := dc.addWorkloadHandlers(logger, w); err != nil {
			return nil, err
		}
		dIndexers[w.namespace], rsIndexers[w.namespace] = w.deployments.GetIndexer(), w.replicaSets.GetIndexer()
		dc.rsIndexer = append(dc.rsIndexer, w.replicaSets.GetIndexer())
		dc.podIndexer = append(dc.podIndexer, w.pods.GetIndexer())
		synced = append(synced, w.deployments.HasSynced, w.replicaSets.HasSynced, w.pods.HasSynced)
	}
	dc.dLister = deploymentLister{routeByNamespace(dIndexers, appslisters.NewDeploymentLister)}
	dc.rsLister = replicaSetLister{routeByNamespace(rsIndexers, appslisters.NewReplicaSetLister)}
	dc.workloadsSynced = allSynced(synced)

	if opts.Gray != nil {
		gray, err := opts.Gray(ctx, dc)
		if err != nil {
			return nil, err
		}
		dc.gray = gray
	}
	dc.syncHandler = dc.syncDeployment
	return dc, nil
}

// Client is the controller's client: Deployment Updates recorded (deployment_writes.go), and
// ReplicaSet writes made after a sync's live check (freshness.go: liveCheck).
func (dc *DeploymentController) Client() kubernetes.Interface { return dc.client }

// FieldManager is the field manager of every write.
func (dc *DeploymentController) FieldManager() string { return dc.fieldManager }

// EventRecorder records events on Deployments.
func (dc *DeploymentController) EventRecorder() record.EventRecorder { return dc.eventRecorder }

// Now is the controller's clock (Options.Now).
func (dc *DeploymentController) Now() time.Time { return dc.now() }

// DeploymentLister reads the cached Deployments of the watched namespaces.
func (dc *DeploymentController) DeploymentLister() appslisters.DeploymentLister { return dc.dLister }

// ReplicaSets reads the cached ReplicaSets of a watched namespace.
func (dc *DeploymentController) ReplicaSets(namespace string) appslisters.ReplicaSetNamespaceLister {
	return dc.rsLister.ReplicaSets(namespace)
}

// Sync syncs the Deployment of key once, as a worker does, without the queue: the gray hook's
// tests drive the whole controller through it.
func (dc *DeploymentController) Sync(ctx context.Context, key string) error {
	return dc.syncDeployment(ctx, key)
}

// getReplicaSetsForDeployment claims the ReplicaSets of d's namespace: adopts matching orphans
// and releases owned ones whose labels no longer match. It returns the ReplicaSets d manages.
func (dc *DeploymentController) getReplicaSetsForDeployment(ctx context.Context, d *appsv1.Deployment) ([]*appsv1.ReplicaSet, error) {
	// List all of them, not just the matching ones: owned ReplicaSets that stopped matching
	// must be seen to be released.
	rsList, err := dc.rsLister.ReplicaSets(d.Namespace).List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("deployment %s/%s: listing replica sets: %w", d.Namespace, d.Name, err)
	}
	selector, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return nil, fmt.Errorf("deployment %s/%s has invalid label selector: %w", d.Namespace, d.Name, err)
	}
	return dc.claimReplicaSets(ctx, d, selector, rsList)
}

// syncDeployment reconciles the Deployment with the given key, in upstream's exact order:
// empty selector, claim ReplicaSets, deleting, paused conditions, paused, rollback, scaling
// event, then the strategy; the gray hook may leave the Deployment alone once the cache is
// fresh, and after the deleting check it is offered the sync (GrayHook). It must not run
// concurrently for the same key.
func (dc *DeploymentController) syncDeployment(ctx context.Context, key string) error {
	logger := klog.FromContext(ctx)
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		logger.Error(err, "Failed to split meta namespace cache key", "cacheKey", key)
		return err
	}

	startTime := time.Now()
	logger.V(4).Info("Started syncing deployment", "deployment", klog.KRef(namespace, name), "startTime", startTime)
	defer func() {
		logger.V(4).Info("Finished syncing deployment", "deployment", klog.KRef(namespace, name), "duration", time.Since(startTime))
	}()

	cached, err := dc.dLister.Deployments(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		logger.V(2).Info("Deployment has been deleted", "deployment", klog.KRef(namespace, name))
		dc.gray.DeploymentGone(key)
		dc.deploymentWrites.forget(key)
		return nil
	}
	if err != nil {
		return err
	}
	if _, fresh, err := dc.CacheFresh(ctx, key, cached, nil, CacheChecks{}); !fresh {
		return err
	}
	// A Deployment the hook leaves alone (alongside mode: the built-in controller's) is not even
	// claimed.
	if dc.gray.LeavesAlone(key, cached) {
		return nil
	}
	// Everything below may modify d; the cache must stay untouched.
	d := cached.DeepCopy()
	if d.Spec.Replicas == nil {
		// The API server always defaults replicas; refuse rather than guess for a hand-made object.
		return fmt.Errorf("deployment %s/%s: spec.replicas is not set", d.Namespace, d.Name)
	}

	everything := metav1.LabelSelector{}
	if reflect.DeepEqual(d.Spec.Selector, &everything) {
		dc.eventRecorder.Eventf(d, corev1.EventTypeWarning, "SelectingAll", "This deployment is selecting all pods. A non-empty selector is required.")
		if d.Status.ObservedGeneration < d.Generation {
			d.Status.ObservedGeneration = d.Generation
			// Best effort, as upstream: the only goal is to show the spec was observed.
			_, _ = dc.client.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, d, metav1.UpdateOptions{FieldManager: dc.fieldManager})
		}
		return nil
	}

	rsList, err := dc.getReplicaSetsForDeployment(ctx, d)
	if err != nil {
		return err
	}

	if d.DeletionTimestamp != nil {
		return dc.syncStatusOnly(ctx, d, rsList)
	}

	if taken, err := dc.gray.SyncDeployment(ctx, key, d, rsList); taken || err != nil {
		return err
	}

	// Pausing and resuming reset the Progressing condition so that the time spent paused never
	// counts against progressDeadlineSeconds.
	if err := dc.checkPausedConditions(ctx, d); err != nil {
		return err
	}

	if d.Spec.Paused {
		return dc.sync(ctx, d, rsList)
	}

	// Rollback is not re-entrant: the annotation must be cleared before any ReplicaSet is touched
	// for this Deployment again.
	if GetRollbackTo(d) != nil {
		return dc.Rollback(ctx, d, rsList)
	}

	scalingEvent, err := dc.isScalingEvent(ctx, d, rsList)
	if err != nil {
		return err
	}
	if scalingEvent {
		return dc.sync(ctx, d, rsList)
	}

	switch d.Spec.Strategy.Type {
	case appsv1.RecreateDeploymentStrategyType:
		podMap, err := dc.GetPodMapForDeployment(d, rsList)
		if err != nil {
			return err
		}
		return dc.rolloutRecreate(ctx, d, rsList, podMap)
	case appsv1.RollingUpdateDeploymentStrategyType:
		return dc.rolloutRolling(ctx, d, rsList)
	}
	return fmt.Errorf("unexpected deployment strategy type: %s", d.Spec.Strategy.Type)
}
