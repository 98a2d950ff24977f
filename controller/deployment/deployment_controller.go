// Package deployment is a from-scratch Deployment controller that behaves like the upstream
// Kubernetes v1.37 one (k8s.io/kubernetes pkg/controller/deployment). The file split
// and the function names follow upstream's pkg/controller/deployment so that a reader who knows
// upstream finds their way: deployment_controller.go (informers, syncDeployment) with its
// event handlers in handlers.go and its queue and workers in workqueue.go, sync.go (scaling,
// status, cleanup) with the new ReplicaSet in new_replicaset.go, rolling.go, recreate.go,
// rollback.go, progress.go, and controller_ref_manager.go (adoption and release of
// ReplicaSets). Gray rollouts are gray*.go, carrying out what controller/gray decides; alongside
// mode is controller/alongside, which this controller hosts (alongside_mode.go; docs/design.md).
package deployment

import (
	"context"
	"fmt"
	"net/http"
	"reflect"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	appslisters "k8s.io/client-go/listers/apps/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/kubegray/kubectl-gray/controller/alongside"
	"github.com/kubegray/kubectl-gray/controller/gray"
	"github.com/kubegray/kubectl-gray/controller/measure"
	"github.com/kubegray/kubectl-gray/controller/metrics"
	"github.com/kubegray/kubectl-gray/pkg/gates"
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
	// Mode is grayapi.ModeInstead (every Deployment, upstream-equivalent; the zero value means
	// instead) or grayapi.ModeAlongside (only gray Deployments, next to the built-in
	// controller; see controller/alongside). The caller has validated it (controller/options.go).
	Mode grayapi.Mode
	// Takeover is how alongside mode takes Deployments over: grayapi.TakeoverAdmission (the zero
	// value: the admission policy or the plugin does it with the template change) or
	// grayapi.TakeoverEager.
	Takeover grayapi.Takeover
	// Namespace is gray-controller's own: the gate definitions of its labelled ConfigMaps apply
	// to every namespace, and the providers of metric gates are read there (gray_gates.go).
	Namespace string
	// Providers are the metric gates' providers given by flags (--prometheus-url).
	Providers []*gates.Provider
	// Self is the pod this process runs in (empty outside a pod), and HandOver, when set, steps
	// this leader down: a leader of its own Deployment's stable revision calls it to hand the
	// lease to a canary its gates judge (gray_handover.go). Instead mode only.
	Self     types.NamespacedName
	HandOver func(reason string)
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
	// stripPod), indexed by podControllerUIDIndex.
	dLister         deploymentLister
	rsLister        replicaSetLister
	podIndexer      podIndex
	workloadsSynced cache.InformerSynced

	queue workqueue.TypedRateLimitingInterface[string]

	// now is the clock for condition timestamps and progress-deadline maths; tests freeze it.
	now func() time.Time

	// mode is as Options gives it.
	mode grayapi.Mode

	// rsExpectations holds the ReplicaSet writes of gray syncs until the cache shows them.
	rsExpectations *replicaSetExpectations
	// gates finds the gate definitions a gray Deployment names.
	gates *gateBook
	// measurer takes metric and webhook gates' measurements off the sync path, over httpClient
	// or a provider's own client (gray_measure.go).
	measurer          *measure.Pool
	httpClient        *http.Client
	providerClientsMu sync.Mutex
	providerClients   map[string]versionedClient
	// secrets are the providers' Secrets in gray-controller's namespace, read by name at most
	// once per measure.SecretTTL.
	secrets *measure.SecretCache
	// deploymentWrites holds the resourceVersions our Deployment Updates replaced
	// (deployment_writes.go) until the cache moves past them.
	deploymentWrites *supersededVersions
	// alongside is alongside mode, and in instead mode the release of a Deployment left taken
	// over for it.
	alongside *alongside.Controller
	// self and handOver are Options'.
	self     types.NamespacedName
	handOver func(reason string)
}

// NewDeploymentController registers informers on the caches' factories (Deployments,
// ReplicaSets, Pods of each watched namespace) and the event handlers. It must be called before
// the factories are started, because it installs the cache transforms (cache_transforms.go): any
// other user of the same factories' informers sees Deployments and ReplicaSets without managed
// fields, and cachedPods instead of pods, which a factory's pod lister cannot return; their
// ConfigMap informers are ours too, and list only gate definitions (gray_gates.go).
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
		now:      time.Now,
		mode:     opts.Mode,
		self:     opts.Self,
		handOver: opts.HandOver,
	}
	dc.rsExpectations = newReplicaSetExpectations(func() time.Time { return dc.now() })
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
		dc.podIndexer = append(dc.podIndexer, w.pods.GetIndexer())
		synced = append(synced, w.deployments.HasSynced, w.replicaSets.HasSynced, w.pods.HasSynced)
	}
	dc.dLister = deploymentLister{routeByNamespace(dIndexers, appslisters.NewDeploymentLister)}
	dc.rsLister = replicaSetLister{routeByNamespace(rsIndexers, appslisters.NewReplicaSetLister)}
	dc.workloadsSynced = allSynced(synced)

	gates, err := newGateBook(caches, opts.Namespace, opts.Providers, func(ns string) { dc.enqueueGated(logger, ns) })
	if err != nil {
		return nil, err
	}
	dc.gates = gates
	dc.measurer = measure.NewPool(ctx, time.Now, func(key string) { dc.queue.Add(key) })
	dc.httpClient = &http.Client{}
	dc.providerClients = map[string]versionedClient{}
	dc.secrets = measure.NewSecretCache(func(ctx context.Context, name string) (*corev1.Secret, error) {
		return client.CoreV1().Secrets(gates.namespace).Get(ctx, name, metav1.GetOptions{})
	}, func() time.Time { return dc.now() })
	takeover := opts.Takeover
	if takeover == "" {
		takeover = grayapi.TakeoverAdmission
	}
	dc.alongside = alongside.New(alongside.Config{
		Client: dc.client, FieldManager: dc.fieldManager, Recorder: dc.eventRecorder, Takeover: takeover, Host: alongsideHost{dc},
	})
	dc.syncHandler = dc.syncDeployment
	return dc, nil
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
// event, then the strategy; after the deleting check a Deployment taken over for alongside
// mode is released (alongside.Controller.ReleaseTakenOver) and gray Deployments branch off to
// syncGray. It must not run concurrently for the same key.
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
		metrics.ForgetGray(key)
		dc.deploymentWrites.forget(key)
		return nil
	}
	if err != nil {
		return err
	}
	if _, fresh, err := dc.cacheFresh(ctx, key, cached, nil, cacheChecks{}); !fresh {
		return err
	}
	// In alongside mode every other Deployment belongs to the built-in controller alone: not
	// even its ReplicaSets are claimed.
	if dc.mode.Alongside() && !dc.alongside.Manages(cached) {
		metrics.ForgetGray(key)
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

	if dc.mode.Alongside() {
		return dc.alongside.Sync(ctx, key, d, rsList)
	}
	// Taken over for alongside mode, it would stay paused on Recreate: released first, and
	// synced again on the event of the release.
	if _, taken := d.Annotations[grayapi.StrategyAnnotation]; taken {
		return dc.alongside.ReleaseTakenOver(ctx, d, rsList)
	}

	// A gray Deployment replaces everything below with the gray path (gray.go); one that stopped
	// being gray is released first and then follows upstream.
	if isGray(d) {
		return dc.syncGray(ctx, key, d, rsList)
	}
	metrics.ForgetGray(key)
	if gray.HasLeftovers(d) {
		if err := dc.clearGray(ctx, d); err != nil {
			return err
		}
	}
	// No longer gray: a rollback must not bring the opt-in back (gray_record.go). Plain
	// Deployments never carry it, so upstream's behaviour is untouched.
	if err := dc.mirrorRecord(ctx, d, rsList); err != nil {
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
	if getRollbackTo(d) != nil {
		return dc.rollback(ctx, d, rsList)
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
		podMap, err := dc.getPodMapForDeployment(d, rsList)
		if err != nil {
			return err
		}
		return dc.rolloutRecreate(ctx, d, rsList, podMap)
	case appsv1.RollingUpdateDeploymentStrategyType:
		return dc.rolloutRolling(ctx, d, rsList)
	}
	return fmt.Errorf("unexpected deployment strategy type: %s", d.Spec.Strategy.Type)
}
