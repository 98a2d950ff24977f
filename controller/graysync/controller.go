// Package graysync carries out gray rollouts: it is the deployment controller's GrayHook
// (controller/deployment), which hands it the sync of each gray Deployment, and does what the
// pure core (controller/gray) decides, in instead mode (gray_mode.go) or alongside the built-in
// controller (alongside_mode.go, hosting controller/alongside). gray.go is the entry of a sync;
// docs/design.md ("One gray sync, step by step") walks through the files in order.
package graysync

import (
	"context"
	"net/http"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/kubegray/kubectl-gray/controller/alongside"
	"github.com/kubegray/kubectl-gray/controller/deployment"
	"github.com/kubegray/kubectl-gray/controller/gray"
	"github.com/kubegray/kubectl-gray/controller/measure"
	"github.com/kubegray/kubectl-gray/controller/metrics"
	"github.com/kubegray/kubectl-gray/pkg/gates"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// Options configure a Controller.
type Options struct {
	// Mode is grayapi.ModeInstead (every Deployment, upstream-equivalent; the zero value means
	// instead) or grayapi.ModeAlongside (only gray Deployments, next to the built-in
	// controller; see controller/alongside). The caller has validated it (controller/options.go).
	Mode grayapi.Mode
	// Takeover is how alongside mode takes Deployments over: grayapi.TakeoverAdmission (the zero
	// value: the admission policy or the plugin does it with the template change) or
	// grayapi.TakeoverEager.
	Takeover grayapi.Takeover
	// Providers are the metric gates' providers given by flags (--prometheus-url).
	Providers []*gates.Provider
	// Self is the pod this process runs in (empty outside a pod), and HandOver, when set, steps
	// this leader down: a leader of its own Deployment's stable revision calls it to hand the
	// lease to a canary its gates judge (gray_handover.go). Instead mode only.
	Self     types.NamespacedName
	HandOver func(reason string)
}

// Controller is the gray side of the deployment controller: deployment.GrayHook.
type Controller struct {
	port          Port
	client        kubernetes.Interface
	fieldManager  string
	eventRecorder record.EventRecorder

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
	// alongside is alongside mode, and in instead mode the release of a Deployment left taken
	// over for it.
	alongside *alongside.Controller
	// self and handOver are Options'.
	self     types.NamespacedName
	handOver func(reason string)
}

var _ deployment.GrayHook = (*Controller)(nil)

// New builds the gray side of port, registering the gate ConfigMap informers on caches (the
// factories port's caches come from); it must be called before they are started, as
// deployment.Options.Gray is.
func New(ctx context.Context, port Port, caches deployment.Informers, opts Options) (*Controller, error) {
	logger := klog.FromContext(ctx)
	gs := &Controller{
		port:            port,
		client:          port.Client(),
		fieldManager:    port.FieldManager(),
		eventRecorder:   port.EventRecorder(),
		mode:            opts.Mode,
		rsExpectations:  newReplicaSetExpectations(port.Now),
		httpClient:      &http.Client{},
		providerClients: map[string]versionedClient{},
		self:            opts.Self,
		handOver:        opts.HandOver,
	}
	book, err := newGateBook(caches, opts.Providers, func(ns string) { gs.enqueueGated(logger, ns) })
	if err != nil {
		return nil, err
	}
	gs.gates = book
	gs.measurer = measure.NewPool(ctx, time.Now, port.EnqueueKey)
	gs.secrets = measure.NewSecretCache(func(ctx context.Context, name string) (*corev1.Secret, error) {
		return gs.client.CoreV1().Secrets(book.namespace).Get(ctx, name, metav1.GetOptions{})
	}, port.Now)
	takeover := opts.Takeover
	if takeover == "" {
		takeover = grayapi.TakeoverAdmission
	}
	gs.alongside = alongside.New(alongside.Config{
		Client: gs.client, FieldManager: gs.fieldManager, Recorder: gs.eventRecorder, Takeover: takeover, Host: alongsideHost{gs},
	})
	return gs, nil
}

// LeavesAlone reports the Deployments of the built-in controller alone: in alongside mode, every
// one that is not annotated, taken over or frozen.
func (gs *Controller) LeavesAlone(key string, d *appsv1.Deployment) bool {
	if gs.mode.Alongside() && !gs.alongside.Manages(d) {
		metrics.ForgetGray(key)
		return true
	}
	return false
}

// SyncDeployment takes every sync in alongside mode (controller/alongside: Controller.Sync), and
// in instead mode the sync of a Deployment left taken over for alongside mode (released first,
// and synced again on the event of the release: it would stay paused on Recreate) and of a gray
// one (syncGray). A Deployment that stopped being gray is released (clearGray) and follows
// upstream. The result of a gray sync (alongside mode's, or syncGray) is recorded for the
// Deployment's series of failing syncs.
func (gs *Controller) SyncDeployment(ctx context.Context, key string, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) (bool, error) {
	if gs.mode.Alongside() {
		err := gs.alongside.Sync(ctx, key, d, rsList)
		metrics.RecordGraySync(key, err)
		return true, err
	}
	if _, taken := d.Annotations[grayapi.StrategyAnnotation]; taken {
		return true, gs.alongside.ReleaseTakenOver(ctx, d, rsList)
	}
	if isGray(d) {
		err := gs.syncGray(ctx, key, d, rsList)
		metrics.RecordGraySync(key, err)
		return true, err
	}
	metrics.ForgetGray(key)
	if gray.HasLeftovers(d) {
		if err := gs.clearGray(ctx, d); err != nil {
			return false, err
		}
	}
	// No longer gray: a rollback must not bring the opt-in back (gray_record.go). Plain
	// Deployments never carry it, so upstream's behaviour is untouched.
	return false, gs.mirrorRecord(ctx, d, rsList)
}

// DeploymentGone forgets the per-rollout metrics of a Deployment no longer cached.
func (gs *Controller) DeploymentGone(key string) { metrics.ForgetGray(key) }

// DeploymentDeleted forgets the ReplicaSet writes waited for and the measurements taken.
func (gs *Controller) DeploymentDeleted(key string, uid types.UID) {
	gs.rsExpectations.forget(key)
	gs.measurer.Forget(uid)
}

// ReplicaSetDeleted forgets the write of a deleted ReplicaSet waited for.
func (gs *Controller) ReplicaSetDeleted(deploymentKey, name string) {
	gs.rsExpectations.forgetReplicaSet(deploymentKey, name)
}

// HasSynced reports whether the gate ConfigMaps' caches have synced.
func (gs *Controller) HasSynced() bool { return gs.gates.synced() }
