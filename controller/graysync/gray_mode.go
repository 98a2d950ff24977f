package graysync

// The seam between the two modes in a gray sync. The sync itself (gray.go) is the same in both;
// what differs is how its decisions reach the server. Instead mode owns the whole Deployment:
// the hold is spec.paused and the status is written whole. Alongside mode (controller/alongside)
// runs next to the built-in controller on a taken-over Deployment: the hold lives in
// kubegray.io/status only and only our part of the status is written. The ReplicaSet writes are
// the same in both: in alongside mode their sizes are frozen to everyone else.
//
// Every other choice that differs between the modes is a method of grayMode too, so that the
// sync reads the same in both: the user's own pause, the Progressing condition, the deprecated
// Rollback annotation, the labels of a created ReplicaSet, conflicts with the other writer, the
// pause a rollback leaves and the Complete status the release patch carries. insteadMode is
// here, alongsideMode in alongside_mode.go.

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegray/kubectl-gray/controller/deployment"
	"github.com/kubegray/kubectl-gray/pkg/deployutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// grayMode is how one mode writes what a gray sync decided.
type grayMode interface {
	// cacheChecks is what the mode needs recent in the caches before a sync acts
	// (deployment.CacheFresh), beside our ReplicaSet writes, which every gray sync checks.
	cacheChecks() deployment.CacheChecks
	// begin sets the mode's view on d before the sync reads it.
	begin(d *appsv1.Deployment)
	// stamp records the mode in the status about to be written.
	stamp(st *grayapi.Status)
	// writeHold writes the hold (paused or not) with this sync's status and a consumed resume
	// request, in one write.
	writeHold(ctx context.Context, g *graySync, paused bool) error
	// persistStatus writes what of updated's status side is ours, unless that is what server
	// (the Deployment as the server has it) already has: then it writes nothing and returns nil.
	persistStatus(ctx context.Context, gs *Controller, server, updated *appsv1.Deployment) (*appsv1.Deployment, error)
	// adopted sets the mode's view on d, whose spec was just replaced by a written Deployment.
	adopted(d *appsv1.Deployment)

	// pausedByItsUser reports a pause of the Deployment's user that spec.paused does not show.
	pausedByItsUser() bool
	// mirrorProgressing sets the Progressing condition a held rollout reports (a missed
	// deadline, an abort) in status, where the condition is ours to write.
	mirrorProgressing(status *appsv1.DeploymentStatus, cond appsv1.DeploymentCondition)
	// serveRollbackTo serves the deprecated rollback annotation where the mode can, and reports
	// whether it did (the sync then ends).
	serveRollbackTo(ctx context.Context, g *graySync) (bool, error)
	// newReplicaSetLabels gives the labels of a ReplicaSet the sync creates from those
	// upstream gives it.
	newReplicaSetLabels(labels map[string]string) map[string]string
	// retryConflict answers a conflicting resize of rs: retried on the live object when only
	// another writer's annotation write caused it, or the conflict returned as it is.
	retryConflict(ctx context.Context, g *graySync, rs *appsv1.ReplicaSet, size int32, force bool, conflict error) (bool, *appsv1.ReplicaSet, error)
	// rollbackPaused is spec.paused of a Deployment whose template a rollback puts back.
	rollbackPaused(paused bool) bool
	// writeReport writes the status a sync ends with (writeStatus), unless the mode has another
	// write carry it.
	writeReport(ctx context.Context, g *graySync, updated *appsv1.Deployment) error
}

// insteadMode is grayMode with no other deployment controller: every write is upstream's.
type insteadMode struct{}

func (insteadMode) stamp(st *grayapi.Status) {
	st.Mode = grayapi.ModeInstead
}

// writeHold writes spec.paused, the consumed resume request and the status in one
// main-resource Update (the only way to change spec.paused; it bumps the generation).
func (insteadMode) writeHold(ctx context.Context, g *graySync, paused bool) error {
	d := g.cur.d.DeepCopy()
	d.Spec.Paused = paused
	if g.removeResume {
		delete(d.Annotations, grayapi.ResumeAnnotation)
	}
	if err := g.setStatusAnnotation(d); err != nil {
		return err
	}
	written, err := g.gs.client.AppsV1().Deployments(d.Namespace).Update(ctx, d, metav1.UpdateOptions{FieldManager: g.gs.fieldManager})
	if err != nil {
		return fmt.Errorf("deployment %s/%s: setting paused=%t for the gray rollout: %w", d.Namespace, d.Name, paused, err)
	}
	g.holdWritten(written)
	return nil
}

// persistStatus writes all of the status, through UpdateStatus.
func (insteadMode) persistStatus(ctx context.Context, gs *Controller, server, updated *appsv1.Deployment) (*appsv1.Deployment, error) {
	if wholeStatusUnchanged(server, updated) {
		return nil, nil
	}
	return gs.client.AppsV1().Deployments(updated.Namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{FieldManager: gs.fieldManager})
}

func (insteadMode) adopted(*appsv1.Deployment) {}

// cacheChecks: the Deployment as the server has it before any write the server would not
// refuse for a stale resourceVersion.
func (insteadMode) cacheChecks() deployment.CacheChecks {
	return deployment.CacheChecks{LiveBeforeUnguardedWrite: true}
}

func (insteadMode) begin(*appsv1.Deployment) {}

func (insteadMode) pausedByItsUser() bool { return false }

// mirrorProgressing: with no other controller, a held Deployment's Progressing condition reports
// the gray deadline (gray.DecideReport: Progressing) and an abort.
func (insteadMode) mirrorProgressing(status *appsv1.DeploymentStatus, cond appsv1.DeploymentCondition) {
	deployutil.SetDeploymentCondition(status, cond)
}

// serveRollbackTo serves the annotation as upstream does (never while paused), but only once
// the new template has its (capped) ReplicaSet: rollback would create it uncapped.
func (insteadMode) serveRollbackTo(ctx context.Context, g *graySync) (bool, error) {
	d := g.cur.d
	if d.Spec.Paused || g.cur.newRS == nil || deployment.GetRollbackTo(d) == nil {
		return false, nil
	}
	// Its events may go before its write.
	if err := deployment.ConfirmLive(ctx); err != nil {
		return true, err
	}
	return true, g.gs.port.Rollback(ctx, d, g.in.rsList)
}

func (insteadMode) writeReport(ctx context.Context, g *graySync, updated *appsv1.Deployment) error {
	return g.writeStatus(ctx, updated)
}

func (insteadMode) newReplicaSetLabels(labels map[string]string) map[string]string { return labels }

// retryConflict: nobody else writes our ReplicaSets, so a conflict means a stale read.
func (insteadMode) retryConflict(_ context.Context, _ *graySync, _ *appsv1.ReplicaSet, _ int32, _ bool, conflict error) (bool, *appsv1.ReplicaSet, error) {
	return false, nil, conflict
}

// rollbackPaused: the hold is spec.paused, and a rollback leaves it.
func (insteadMode) rollbackPaused(bool) bool { return false }
