package graysync

// The seam between the two modes in a gray sync. The sync itself (gray_execute.go) is the same in both;
// what differs is how its decisions reach the server. Instead mode owns the whole Deployment:
// the hold is spec.paused and the status is written whole. Alongside mode (controller/alongside)
// runs next to the built-in controller on a taken-over Deployment: the hold lives in
// kubegray.io/status only and only our part of the status is written. The ReplicaSet writes are
// the same in both: in alongside mode their sizes are frozen to everyone else.
//
// Every other choice that differs between the modes is a method of grayMode too, so that the
// sync reads the same in both: the user's own pause, the Progressing condition, the deprecated
// Rollback annotation, the labels of a created ReplicaSet, conflicts with the other writer, the
// pause a rollback leaves and the Complete status the release patch carries. The methods are
// given objects, never the sync: a mode writes what it is handed. insteadMode is here,
// alongsideMode in alongside_mode.go.

import (
	"context"
	"fmt"
	"reflect"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubegray/kubectl-gray/controller/deployment"
	"github.com/kubegray/kubectl-gray/controller/gray"
	"github.com/kubegray/kubectl-gray/pkg/deployutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// grayMode is how one mode writes what a gray sync decided: the verbs that write (the hold, the
// status, a resize retried), the view it keeps of the Deployment, and the few rules of its own.
// No method sees the sync itself.
type grayMode interface {
	// cacheChecks is what the mode needs recent in the caches before a sync acts
	// (deployment.CacheFresh), beside our ReplicaSet writes, which every gray sync checks.
	cacheChecks() deployment.CacheChecks
	// begin sets the mode's view on d before the sync reads it; adopted sets it again on d, whose
	// spec was just replaced by a written Deployment.
	begin(d *appsv1.Deployment)
	adopted(d *appsv1.Deployment)
	// stamp records the mode in the status about to be written.
	stamp(st *grayapi.Status)

	// writeHold writes the hold (paused or not), updated's status (updated is d carrying it) and,
	// when removeResume, the consumed resume request's removal, in one write.
	writeHold(ctx context.Context, d, updated *appsv1.Deployment, paused, removeResume bool) (*appsv1.Deployment, error)
	// persistStatus writes what of updated's status side is ours, unless that is what server
	// (the Deployment as the server has it) already has: then it writes nothing and returns nil.
	persistStatus(ctx context.Context, server, updated *appsv1.Deployment) (*appsv1.Deployment, error)
	// skipsReport reports whether a sync ending with st leaves its status to another write (the
	// release that carries a Complete status in alongside mode).
	skipsReport(st grayapi.Status) bool
	// liveForResize answers a conflicting resize of rs with the live ReplicaSet to resize again
	// when only another writer's annotation write caused it, or the conflict as it is.
	liveForResize(ctx context.Context, rs *appsv1.ReplicaSet, conflict error) (*appsv1.ReplicaSet, error)
	// rollbackTo serves the deprecated rollback annotation of d where the mode can, and reports
	// whether it did (the sync then ends); newRS is the template's ReplicaSet (nil: none yet).
	rollbackTo(ctx context.Context, d *appsv1.Deployment, newRS *appsv1.ReplicaSet, rsList []*appsv1.ReplicaSet) (bool, error)

	// pausedByItsUser reports a pause of the Deployment's user that spec.paused does not show.
	pausedByItsUser() bool
	// unpauseReaches says what a plain unpause of the Deployment reaches (gray.Serves).
	unpauseReaches() gray.Unpause
	// mirrorProgressing sets the Progressing condition a held rollout reports (a missed
	// deadline, an abort) in status, where the condition is ours to write.
	mirrorProgressing(status *appsv1.DeploymentStatus, cond appsv1.DeploymentCondition)
	// newReplicaSetLabels gives the labels of a ReplicaSet the sync creates from those
	// upstream gives it.
	newReplicaSetLabels(labels map[string]string) map[string]string
	// rollbackPaused is spec.paused of a Deployment whose template a rollback puts back.
	rollbackPaused(paused bool) bool
}

// insteadMode is grayMode with no other deployment controller: every write is upstream's, made
// with the controller's client under its field manager.
type insteadMode struct {
	client       kubernetes.Interface
	fieldManager string
	port         Port
}

func (insteadMode) stamp(st *grayapi.Status) {
	st.Mode = grayapi.ModeInstead
}

// writeHold writes spec.paused, the consumed resume request and the status in one
// main-resource Update (the only way to change spec.paused; it bumps the generation).
func (m insteadMode) writeHold(ctx context.Context, _, updated *appsv1.Deployment, paused, removeResume bool) (*appsv1.Deployment, error) {
	d := updated.DeepCopy()
	d.Spec.Paused = paused
	if removeResume {
		delete(d.Annotations, grayapi.ResumeAnnotation)
	}
	written, err := m.client.AppsV1().Deployments(d.Namespace).Update(ctx, d, metav1.UpdateOptions{FieldManager: m.fieldManager})
	if err != nil {
		return nil, fmt.Errorf("deployment %s/%s: setting paused=%t for the gray rollout: %w", d.Namespace, d.Name, paused, err)
	}
	return written, nil
}

// persistStatus writes all of the status, through UpdateStatus.
func (m insteadMode) persistStatus(ctx context.Context, server, updated *appsv1.Deployment) (*appsv1.Deployment, error) {
	if wholeStatusUnchanged(server, updated) {
		return nil, nil
	}
	return m.client.AppsV1().Deployments(updated.Namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{FieldManager: m.fieldManager})
}

// wholeStatusUnchanged reports whether writing updated would change nothing a status write owns
// in instead mode (all of the status, timestamps included, as upstream compares it; our
// annotation; the mirrored revision) compared with what the server has. Alongside mode owns
// only its part: grayPartUnchanged in controller/alongside.
func wholeStatusUnchanged(server, updated *appsv1.Deployment) bool {
	return reflect.DeepEqual(server.Status, updated.Status) &&
		server.Annotations[grayapi.StatusAnnotation] == updated.Annotations[grayapi.StatusAnnotation] &&
		server.Annotations[deployutil.RevisionAnnotation] == updated.Annotations[deployutil.RevisionAnnotation]
}

func (insteadMode) skipsReport(grayapi.Status) bool { return false }

func (insteadMode) adopted(*appsv1.Deployment) {}

// cacheChecks: the Deployment as the server has it before any write the server would not
// refuse for a stale resourceVersion.
func (insteadMode) cacheChecks() deployment.CacheChecks {
	return deployment.CacheChecks{LiveBeforeUnguardedWrite: true}
}

func (insteadMode) begin(*appsv1.Deployment) {}

func (insteadMode) pausedByItsUser() bool { return false }

// unpauseReaches: spec.paused is the Deployment's own, our hold included.
func (insteadMode) unpauseReaches() gray.Unpause { return gray.UnpauseReachesHold }

// mirrorProgressing: with no other controller, a held Deployment's Progressing condition reports
// the gray deadline (gray.DecideReport: Progressing) and an abort.
func (insteadMode) mirrorProgressing(status *appsv1.DeploymentStatus, cond appsv1.DeploymentCondition) {
	deployutil.SetDeploymentCondition(status, cond)
}

// rollbackTo serves the annotation as upstream does (never while paused), but only once the new
// template has its (capped) ReplicaSet: rollback would create it uncapped.
func (m insteadMode) rollbackTo(ctx context.Context, d *appsv1.Deployment, newRS *appsv1.ReplicaSet, rsList []*appsv1.ReplicaSet) (bool, error) {
	if d.Spec.Paused || newRS == nil || deployment.GetRollbackTo(d) == nil {
		return false, nil
	}
	// Its events may go before its write.
	if err := deployment.ConfirmLive(ctx); err != nil {
		return true, err
	}
	return true, m.port.Rollback(ctx, d, rsList)
}

func (insteadMode) newReplicaSetLabels(labels map[string]string) map[string]string { return labels }

// liveForResize: nobody else writes our ReplicaSets, so a conflict means a stale read.
func (insteadMode) liveForResize(_ context.Context, _ *appsv1.ReplicaSet, conflict error) (*appsv1.ReplicaSet, error) {
	return nil, conflict
}

// rollbackPaused: the hold is spec.paused, and a rollback leaves it.
func (insteadMode) rollbackPaused(bool) bool { return false }
