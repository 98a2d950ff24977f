package deployment

import (
	"context"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	appsv1client "k8s.io/client-go/kubernetes/typed/apps/v1"
	"k8s.io/client-go/tools/cache"
)

// Our own Deployment writes reach the Deployment cache a moment after the ReplicaSet and pod
// events they cause. Upstream's controller syncs on those events with the older Deployment
// and sends a status write against the resourceVersion it has itself just replaced: a 409
// Conflict by design, a requeue, and the same sync again. This controller remembers the
// resourceVersions its Updates replaced and skips a sync whose cached Deployment is one of
// them: the informer event of the newer version, which carries everything the skipped one did
// and our write on top, syncs the Deployment again, later only by the time the event takes.

// supersededTimeout bounds how long a replaced resourceVersion keeps a Deployment from
// syncing: the newer version reaches a healthy informer in milliseconds, and a watch that
// fell behind lists again, but a sync is never held off for longer than this.
const supersededTimeout = 30 * time.Second

// supersededVersions remembers, per Deployment key, the resourceVersions our writes replaced.
type supersededVersions struct {
	mu    sync.Mutex
	byKey map[string]supersededSet
	now   func() time.Time
}

// supersededSet is the versions replaced for one Deployment, and when the last was.
type supersededSet struct {
	versions map[string]bool
	at       time.Time
}

func newSupersededVersions(now func() time.Time) *supersededVersions {
	return &supersededVersions{byKey: map[string]supersededSet{}, now: now}
}

// wrote records a successful Update of sent that the server answered with written. An
// Update that changed nothing keeps its resourceVersion, and no event will follow it, so it
// replaces nothing.
func (s *supersededVersions) wrote(sent, written *appsv1.Deployment) {
	if sent.ResourceVersion == "" || written.ResourceVersion == sent.ResourceVersion {
		return
	}
	key := cache.MetaObjectToName(sent).String()
	s.mu.Lock()
	defer s.mu.Unlock()
	set, ok := s.byKey[key]
	if !ok {
		set.versions = map[string]bool{}
	}
	set.versions[sent.ResourceVersion] = true
	set.at = s.now()
	s.byKey[key] = set
}

// superseded reports whether the cached Deployment of key, at resourceVersion, is one our
// own writes replaced. A cache that holds any other version has caught up with them (or
// moved past them), and they are forgotten.
func (s *supersededVersions) superseded(key, resourceVersion string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	set, ok := s.byKey[key]
	if ok && set.versions[resourceVersion] && s.now().Sub(set.at) < supersededTimeout {
		return true
	}
	delete(s.byKey, key)
	return false
}

// forget drops what was remembered of a deleted Deployment.
func (s *supersededVersions) forget(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.byKey, key)
}

// recordingClient is the controller's client with Deployment Updates recorded in versions and
// sent without the managed fields the cache keeps (cache_transforms.go), and ReplicaSet writes
// made only once a gray sync's live check passed (liveCheck). Patches of Deployments are not
// recorded: the ones this controller sends (alongside mode, releases) carry no resourceVersion
// to record, and alongside mode compares its cache with a live read before it acts.
type recordingClient struct {
	kubernetes.Interface
	versions *supersededVersions
}

func (c recordingClient) AppsV1() appsv1client.AppsV1Interface {
	return recordingApps{AppsV1Interface: c.Interface.AppsV1(), versions: c.versions}
}

type recordingApps struct {
	appsv1client.AppsV1Interface
	versions *supersededVersions
}

func (a recordingApps) Deployments(namespace string) appsv1client.DeploymentInterface {
	return recordingDeployments{DeploymentInterface: a.AppsV1Interface.Deployments(namespace), versions: a.versions}
}

func (a recordingApps) ReplicaSets(namespace string) appsv1client.ReplicaSetInterface {
	return guardedReplicaSets{ReplicaSetInterface: a.AppsV1Interface.ReplicaSets(namespace)}
}

type recordingDeployments struct {
	appsv1client.DeploymentInterface
	versions *supersededVersions
}

func (d recordingDeployments) Update(ctx context.Context, deployment *appsv1.Deployment, opts metav1.UpdateOptions) (*appsv1.Deployment, error) {
	written, err := d.DeploymentInterface.Update(ctx, withoutManagedFields(deployment), opts)
	return written, d.written(ctx, deployment, written, err)
}

func (d recordingDeployments) UpdateStatus(ctx context.Context, deployment *appsv1.Deployment, opts metav1.UpdateOptions) (*appsv1.Deployment, error) {
	written, err := d.DeploymentInterface.UpdateStatus(ctx, withoutManagedFields(deployment), opts)
	return written, d.written(ctx, deployment, written, err)
}

// written records a successful Update (the version it replaced; the sync's live check passed,
// as the server took the resourceVersion the sync read) and returns err, or errCacheBehind for
// a conflict that answered the sync's first look at the server (liveCheck: deploymentRefused).
func (d recordingDeployments) written(ctx context.Context, sent, written *appsv1.Deployment, err error) error {
	switch {
	case err == nil:
		d.versions.wrote(sent, written)
		deploymentWritten(ctx)
	case apierrors.IsConflict(err):
		return deploymentRefused(ctx, err)
	}
	return err
}

// withoutManagedFields is d to send in an Update: an Update with managed fields replaces the
// server's with them, and the cache keeps only the owners of kubegray.io/status; without any,
// the server keeps its own. A shallow copy: the client only reads it.
func withoutManagedFields(d *appsv1.Deployment) *appsv1.Deployment {
	if d.ManagedFields == nil {
		return d
	}
	sent := *d
	sent.ManagedFields = nil
	return &sent
}

// guardedReplicaSets makes a gray sync's live check (ConfirmLive) before each ReplicaSet write:
// a resize, create, patch or delete planned from a Deployment older than the server's would
// be taken, as the server checks only the ReplicaSet's own resourceVersion.
type guardedReplicaSets struct {
	appsv1client.ReplicaSetInterface
}

func (r guardedReplicaSets) Create(ctx context.Context, rs *appsv1.ReplicaSet, opts metav1.CreateOptions) (*appsv1.ReplicaSet, error) {
	if err := ConfirmLive(ctx); err != nil {
		return nil, err
	}
	return r.ReplicaSetInterface.Create(ctx, rs, opts)
}

func (r guardedReplicaSets) Update(ctx context.Context, rs *appsv1.ReplicaSet, opts metav1.UpdateOptions) (*appsv1.ReplicaSet, error) {
	if err := ConfirmLive(ctx); err != nil {
		return nil, err
	}
	return r.ReplicaSetInterface.Update(ctx, rs, opts)
}

func (r guardedReplicaSets) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (*appsv1.ReplicaSet, error) {
	if err := ConfirmLive(ctx); err != nil {
		return nil, err
	}
	return r.ReplicaSetInterface.Patch(ctx, name, pt, data, opts, subresources...)
}

func (r guardedReplicaSets) Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	if err := ConfirmLive(ctx); err != nil {
		return err
	}
	return r.ReplicaSetInterface.Delete(ctx, name, opts)
}
