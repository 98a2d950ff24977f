package deployment

import (
	"context"
	"fmt"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/kubegray/kubectl-gray/pkg/deployutil"
)

// Rollback serves the deprecated rollback annotation (the round-tripped form of the removed
// spec.rollbackTo): copy the template of the ReplicaSet with the requested revision (0 = the
// previous one) into the Deployment and clear the annotation. The rollout itself happens on
// later syncs, when the old ReplicaSet becomes the new one again.
func (dc *DeploymentController) Rollback(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) error {
	logger := klog.FromContext(ctx)
	newRS, allOldRSs, err := dc.getAllReplicaSetsAndSyncRevision(ctx, d, rsList, true)
	if err != nil {
		return err
	}
	allRSs := deployutil.WithNewRS(allOldRSs, newRS)

	rollbackRevision := *GetRollbackTo(d)
	if rollbackRevision == 0 {
		if rollbackRevision = deployutil.LastRevision(allRSs); rollbackRevision == 0 {
			dc.emitRollbackWarningEvent(d, deployutil.RollbackRevisionNotFound, "Unable to find last revision.")
			return dc.updateDeploymentAndClearRollbackTo(ctx, d)
		}
	}
	for _, rs := range allRSs {
		v, err := deployutil.Revision(rs)
		if err != nil {
			logger.V(4).Info("Unable to extract revision from deployment's replica set", "replicaSet", klog.KObj(rs), "err", err)
			continue
		}
		if v != rollbackRevision {
			continue
		}
		logger.V(4).Info("Found replica set with desired revision", "replicaSet", klog.KObj(rs), "revision", v)
		performedRollback, err := dc.rollbackToTemplate(ctx, d, rs)
		if performedRollback && err == nil {
			dc.emitRollbackNormalEvent(d, fmt.Sprintf("Rolled back deployment %q to revision %d", d.Name, rollbackRevision))
		}
		return err
	}
	dc.emitRollbackWarningEvent(d, deployutil.RollbackRevisionNotFound, "Unable to find the revision to rollback to.")
	return dc.updateDeploymentAndClearRollbackTo(ctx, d)
}

// rollbackToTemplate copies rs's template (without the hash label) and annotations into d
// unless the templates already match, then clears the rollback annotation. It reports whether
// the template changed.
func (dc *DeploymentController) rollbackToTemplate(ctx context.Context, d *appsv1.Deployment, rs *appsv1.ReplicaSet) (bool, error) {
	logger := klog.FromContext(ctx)
	performedRollback := false
	if !deployutil.EqualIgnoreHash(&d.Spec.Template, &rs.Spec.Template) {
		logger.V(4).Info("Rolling back deployment to old template spec", "deployment", klog.KObj(d), "templateSpec", rs.Spec.Template.Spec)
		deployutil.SetFromReplicaSetTemplate(d, rs.Spec.Template)
		// The annotations come back too (for example kubernetes.io/change-cause), otherwise the
		// Deployment's current ones would be copied onto the old ReplicaSet on the next sync.
		deployutil.SetDeploymentAnnotationsTo(d, rs)
		performedRollback = true
	} else {
		logger.V(4).Info("Rolling back to a revision that contains the same template as current deployment, skipping rollback...", "deployment", klog.KObj(d))
		dc.emitRollbackWarningEvent(d, deployutil.RollbackTemplateUnchanged,
			fmt.Sprintf("The rollback revision contains the same template as current deployment %q", d.Name))
	}
	return performedRollback, dc.updateDeploymentAndClearRollbackTo(ctx, d)
}

func (dc *DeploymentController) emitRollbackWarningEvent(d *appsv1.Deployment, reason, message string) {
	dc.eventRecorder.Eventf(d, corev1.EventTypeWarning, reason, "%s", message)
}

func (dc *DeploymentController) emitRollbackNormalEvent(d *appsv1.Deployment, message string) {
	dc.eventRecorder.Eventf(d, corev1.EventTypeNormal, deployutil.RollbackDone, "%s", message)
}

// updateDeploymentAndClearRollbackTo removes the rollback annotation with a main-resource PUT,
// the only write of the Deployment object itself (it bumps generation when the template changed).
func (dc *DeploymentController) updateDeploymentAndClearRollbackTo(ctx context.Context, d *appsv1.Deployment) error {
	klog.FromContext(ctx).V(4).Info("Cleans up rollbackTo of deployment", "deployment", klog.KObj(d))
	delete(d.Annotations, deployutil.RollbackToAnnotation)
	_, err := dc.client.AppsV1().Deployments(d.Namespace).Update(ctx, d, metav1.UpdateOptions{FieldManager: dc.fieldManager})
	return err
}

// GetRollbackTo returns the revision requested by the rollback annotation, or nil if it is
// absent or not an integer (an invalid value is ignored and left in place).
func GetRollbackTo(d *appsv1.Deployment) *int64 {
	revision := d.Annotations[deployutil.RollbackToAnnotation]
	if revision == "" {
		return nil
	}
	revision64, err := strconv.ParseInt(revision, 10, 64)
	if err != nil {
		return nil
	}
	return &revision64
}
