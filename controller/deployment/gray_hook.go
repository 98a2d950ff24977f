package deployment

// The one place where this controller meets gray rollouts: syncDeployment offers each
// Deployment's sync to a GrayHook (controller/graysync, wired in controller/run.go), and the
// informer handlers and the workers tell it what they see. Without a hook (Options.Gray nil)
// nothing here changes upstream's behaviour.

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/types"
)

// GrayHook is where this controller hands a Deployment's sync over to the gray side, and what it
// learns from it. syncDeployment asks it in upstream's order of checks: LeavesAlone once the
// cache is known fresh, SyncDeployment once the ReplicaSets are claimed and the Deployment is
// not being deleted.
type GrayHook interface {
	// LeavesAlone reports whether this controller does not sync d at all (alongside mode: a
	// Deployment the built-in controller alone manages).
	LeavesAlone(key string, d *appsv1.Deployment) bool
	// SyncDeployment is offered d (this sync's copy) and its claimed ReplicaSets before
	// upstream's paused, rollback, scaling-event and strategy steps. taken: it synced d, and
	// those steps are skipped; otherwise they run on d as the hook left it.
	SyncDeployment(ctx context.Context, key string, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) (taken bool, err error)
	// DeploymentGone is told that a sync found no Deployment of key in the cache.
	DeploymentGone(key string)
	// DeploymentDeleted and ReplicaSetDeleted are told of the informers' delete events, so that
	// the hook forgets what it remembers of the object (deploymentKey names the ReplicaSet's
	// owner).
	DeploymentDeleted(key string, uid types.UID)
	ReplicaSetDeleted(deploymentKey, name string)
	// HasSynced reports whether the hook's own caches have synced: workers start after them.
	HasSynced() bool
}

// noGray is the GrayHook of a controller without Options.Gray: upstream's behaviour.
type noGray struct{}

func (noGray) LeavesAlone(string, *appsv1.Deployment) bool { return false }

func (noGray) SyncDeployment(context.Context, string, *appsv1.Deployment, []*appsv1.ReplicaSet) (bool, error) {
	return false, nil
}

func (noGray) DeploymentGone(string)               {}
func (noGray) DeploymentDeleted(string, types.UID) {}
func (noGray) ReplicaSetDeleted(string, string)    {}
func (noGray) HasSynced() bool                     { return true }
