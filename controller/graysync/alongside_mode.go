package graysync

// Alongside mode (controller/alongside) inside this controller: alongsideHost is what it uses
// of us, alongsideMode the grayMode through which a gray sync of a taken-over Deployment sees
// it (the alongside.View) and writes what it decided.

import (
	"context"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubegray/kubectl-gray/controller/alongside"
	"github.com/kubegray/kubectl-gray/controller/deployment"
	"github.com/kubegray/kubectl-gray/controller/gray"
	"github.com/kubegray/kubectl-gray/pkg/deployutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// alongsideHost is alongside.Host: the deployment controller as alongside mode uses it.
type alongsideHost struct{ gs *Controller }

func (h alongsideHost) RunGray(ctx context.Context, key string, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet, view *alongside.View) (*alongside.Outcome, error) {
	g, err := h.gs.runGray(ctx, key, d, rsList, alongsideMode{view: view})
	if err != nil || g == nil {
		return nil, err
	}
	return &alongside.Outcome{Status: g.st, Server: g.cur.server, ReplicaSets: deployutil.WithNewRS(g.cur.oldRSs, g.cur.newRS)}, nil
}

func (h alongsideHost) LiveFresh(ctx context.Context, key string, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) (bool, error) {
	_, fresh, err := h.gs.port.CacheFresh(ctx, key, d, rsList, deployment.CacheChecks{Live: true})
	return fresh, err
}

func (h alongsideHost) MarkStable(ctx context.Context, d *appsv1.Deployment, stable *appsv1.ReplicaSet, rsList []*appsv1.ReplicaSet) error {
	_, err := h.gs.markStable(ctx, d, stable, rsList)
	return err
}

func (h alongsideHost) MirrorRecord(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) error {
	return h.gs.mirrorRecord(ctx, d, rsList)
}

func (h alongsideHost) PatchReplicaSetMeta(ctx context.Context, rs *appsv1.ReplicaSet, field string, values map[string]any) (*appsv1.ReplicaSet, error) {
	return h.gs.patchReplicaSetMeta(ctx, rs, field, values)
}

func (h alongsideHost) ReplicaSets(namespace string, selector labels.Selector) ([]*appsv1.ReplicaSet, error) {
	return h.gs.port.ReplicaSets(namespace).List(selector)
}

func (h alongsideHost) Now() time.Time { return h.gs.port.Now() }

// alongsideMode is grayMode next to the built-in controller: the sync sees a taken-over
// Deployment through view, with the saved strategy and our hold as spec.paused, while the
// server keeps paused=true and Recreate; only our part of the status is written.
type alongsideMode struct{ view *alongside.View }

// cacheChecks are a live read before the sync acts, and a ReplicaSet the
// built-in controller may have created for d's template that the cache still lacks.
func (m alongsideMode) cacheChecks() deployment.CacheChecks {
	return deployment.CacheChecks{Live: true, NewReplicaSetNotCached: m.view.NewReplicaSetNotCached}
}

func (m alongsideMode) begin(d *appsv1.Deployment) { m.view.Begin(d) }

func (m alongsideMode) stamp(st *grayapi.Status) { m.view.Stamp(st) }

func (m alongsideMode) writeHold(ctx context.Context, d, updated *appsv1.Deployment, paused, removeResume bool) (*appsv1.Deployment, error) {
	return m.view.WriteHold(ctx, d, updated, paused, removeResume)
}

func (m alongsideMode) persistStatus(ctx context.Context, server, updated *appsv1.Deployment) (*appsv1.Deployment, error) {
	return m.view.PersistStatus(ctx, server, updated)
}

// skipsReport: a Complete rollout released at once has its release patch carry the Complete
// status.
func (m alongsideMode) skipsReport(st grayapi.Status) bool {
	return m.view.ReleasesOnComplete() && st.Phase == grayapi.PhaseComplete
}

func (m alongsideMode) adopted(d *appsv1.Deployment) { m.view.Adopted(d) }

func (m alongsideMode) pausedByItsUser() bool { return m.view.PausedByItsUser() }

// unpauseReaches: the server's spec.paused is the takeover's; an unpause ends only the user's
// own pause (the takeover policy turns it into removing kubegray.io/paused).
func (alongsideMode) unpauseReaches() gray.Unpause { return gray.UnpauseReachesUserPause }

// mirrorProgressing: the Progressing condition is the built-in controller's.
func (alongsideMode) mirrorProgressing(*appsv1.DeploymentStatus, appsv1.DeploymentCondition) {}

// rollbackTo: never; the sync sees a view, which rollback's Update would write to the server.
func (alongsideMode) rollbackTo(context.Context, *appsv1.Deployment, *appsv1.ReplicaSet, []*appsv1.ReplicaSet) (bool, error) {
	return false, nil
}

// newReplicaSetLabels freezes a created ReplicaSet at creation: the built-in controller must
// never size a ReplicaSet of ours.
func (alongsideMode) newReplicaSetLabels(labels map[string]string) map[string]string {
	return alongside.WithFrozenLabel(labels)
}

// liveForResize answers a resize that conflicted only because the built-in controller rewrote
// the ReplicaSet's annotations with the live ReplicaSet (alongside.View.UnresizedLive).
func (m alongsideMode) liveForResize(ctx context.Context, rs *appsv1.ReplicaSet, conflict error) (*appsv1.ReplicaSet, error) {
	return m.view.UnresizedLive(ctx, rs, conflict)
}

// rollbackPaused: spec.paused is the takeover's, whatever the hold does.
func (alongsideMode) rollbackPaused(paused bool) bool { return paused }
