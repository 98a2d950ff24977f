package deployment

import (
	"context"
	"fmt"
	"reflect"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/kubegray/kubectl-gray/pkg/deployutil"
)

// scalingReplicaSetReason is the event reason of every ReplicaSet size change.
const scalingReplicaSetReason = "ScalingReplicaSet"

// syncStatusOnly refreshes the status of a Deployment that is being deleted without creating or
// scaling anything (it may still sync the new ReplicaSet's annotations and the revision).
func (dc *DeploymentController) syncStatusOnly(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) error {
	newRS, oldRSs, err := dc.getAllReplicaSetsAndSyncRevision(ctx, d, rsList, false)
	if err != nil {
		return err
	}
	return dc.syncDeploymentStatus(ctx, deployutil.WithNewRS(oldRSs, newRS), newRS, d)
}

// sync handles paused Deployments and scaling events: proportional scaling only, no rollout
// progress and no new ReplicaSet.
func (dc *DeploymentController) sync(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) error {
	newRS, oldRSs, err := dc.getAllReplicaSetsAndSyncRevision(ctx, d, rsList, false)
	if err != nil {
		return err
	}
	if err := dc.scale(ctx, d, newRS, oldRSs); err != nil {
		// The key is requeued; the next sync starts over from fresh caches.
		return err
	}
	// History is trimmed while paused, but not while a rollback is pending (the rollback target
	// must survive) nor on unpaused scaling events.
	if d.Spec.Paused && GetRollbackTo(d) == nil {
		if err := dc.CleanupDeployment(ctx, oldRSs, d); err != nil {
			return err
		}
	}
	return dc.syncDeploymentStatus(ctx, deployutil.WithNewRS(oldRSs, newRS), newRS, d)
}

// checkPausedConditions records pausing and resuming in the Progressing condition (status
// Unknown), so that a Deployment paused for longer than its progress deadline is not reported
// as timed out once resumed. A timed-out Deployment keeps its timeout.
func (dc *DeploymentController) checkPausedConditions(ctx context.Context, d *appsv1.Deployment) error {
	if !deployutil.HasProgressDeadline(d) {
		return nil
	}
	cond := deployutil.GetDeploymentCondition(d.Status, appsv1.DeploymentProgressing)
	if cond != nil && cond.Reason == deployutil.TimedOutReason {
		return nil
	}
	pausedCondExists := cond != nil && cond.Reason == deployutil.PausedDeployReason

	var condition *appsv1.DeploymentCondition
	switch {
	case d.Spec.Paused && !pausedCondExists:
		condition = deployutil.NewDeploymentCondition(appsv1.DeploymentProgressing, corev1.ConditionUnknown, deployutil.PausedDeployReason, "Deployment is paused", dc.metaNow())
	case !d.Spec.Paused && pausedCondExists:
		condition = deployutil.NewDeploymentCondition(appsv1.DeploymentProgressing, corev1.ConditionUnknown, deployutil.ResumedDeployReason, "Deployment is resumed", dc.metaNow())
	default:
		return nil
	}
	deployutil.SetDeploymentCondition(&d.Status, *condition)
	return dc.writeStatusMidSync(ctx, d)
}

// scale distributes a change of spec.replicas (or of maxSurge) over the active ReplicaSets in
// proportion to their sizes, so that neither scaling up the new ReplicaSet nor scaling down the
// old ones hastens a rollout. It runs on scaling events and on every paused sync. The arithmetic
// (single active ReplicaSet, saturated new one, proportional shares and their write order) is
// deployutil.ScalePlan; this applies its steps in order and stops at the first failed write, so the
// remaining ReplicaSets are handled by the next sync.
func (dc *DeploymentController) scale(ctx context.Context, d *appsv1.Deployment, newRS *appsv1.ReplicaSet, oldRSs []*appsv1.ReplicaSet) error {
	for _, step := range deployutil.ScalePlan(ctx, d, newRS, oldRSs) {
		if _, _, err := dc.ScaleReplicaSet(ctx, step.ReplicaSet, step.Size, d, step.Force); err != nil {
			return err
		}
	}
	return nil
}

// ScaleReplicaSet sets rs to newScale and refreshes its desired-replicas and max-replicas
// annotations. Without forceUpdate it writes only when the size changes; with it, also when the
// annotations are stale. It reports whether the size changed (annotation-only writes do not
// count and emit no event) and returns the ReplicaSet as written.
func (dc *DeploymentController) ScaleReplicaSet(ctx context.Context, rs *appsv1.ReplicaSet, newScale int32, d *appsv1.Deployment, forceUpdate bool) (bool, *appsv1.ReplicaSet, error) {
	oldScale := *rs.Spec.Replicas
	if !forceUpdate && oldScale == newScale {
		return false, rs, nil
	}

	desired := *d.Spec.Replicas
	maxReplicas := desired + deployutil.MaxSurge(*d)
	sizeNeedsUpdate := oldScale != newScale
	annotationsNeedUpdate := deployutil.ReplicasAnnotationsNeedUpdate(rs, desired, maxReplicas)
	if !sizeNeedsUpdate && !annotationsNeedUpdate {
		return false, rs, nil
	}

	rsCopy := rs.DeepCopy()
	rsCopy.Spec.Replicas = &newScale
	deployutil.SetReplicasAnnotations(rsCopy, desired, maxReplicas)
	updated, err := dc.client.AppsV1().ReplicaSets(rsCopy.Namespace).Update(ctx, rsCopy, metav1.UpdateOptions{FieldManager: dc.fieldManager})
	if err != nil {
		return false, updated, fmt.Errorf("deployment %s/%s: scaling replica set %s from %d to %d: %w", d.Namespace, d.Name, rs.Name, oldScale, newScale, err)
	}
	if !sizeNeedsUpdate {
		return false, updated, nil
	}
	direction := "down"
	if oldScale < newScale {
		direction = "up"
	}
	klog.FromContext(ctx).V(4).Info("Scaled ReplicaSet", "replicaSet", klog.KObj(rsCopy), "from", oldScale, "to", newScale)
	dc.eventRecorder.Eventf(d, corev1.EventTypeNormal, scalingReplicaSetReason, "Scaled %s replica set %s from %d to %d", direction, rsCopy.Name, oldScale, newScale)
	return true, updated, nil
}

// CleanupDeployment deletes the oldest old ReplicaSets beyond revisionHistoryLimit. Only the
// first len(cleanable)−limit ReplicaSets by revision are candidates; candidates that still have
// replicas, are unobserved by the ReplicaSet controller or are being deleted are skipped, not
// replaced, so fewer may be deleted.
func (dc *DeploymentController) CleanupDeployment(ctx context.Context, oldRSs []*appsv1.ReplicaSet, d *appsv1.Deployment) error {
	logger := klog.FromContext(ctx)
	if !deployutil.HasRevisionHistoryLimit(d) {
		return nil
	}

	var cleanable []*appsv1.ReplicaSet
	for _, rs := range oldRSs {
		if rs != nil && rs.DeletionTimestamp == nil {
			cleanable = append(cleanable, rs)
		}
	}
	diff := int32(len(cleanable)) - *d.Spec.RevisionHistoryLimit
	if diff <= 0 {
		return nil
	}

	sort.Sort(deployutil.ReplicaSetsByRevision(cleanable))
	logger.V(4).Info("Looking to cleanup old replica sets for deployment", "deployment", klog.KObj(d))

	for _, rs := range cleanable[:diff] {
		if rs.Status.Replicas != 0 || *rs.Spec.Replicas != 0 || rs.Generation > rs.Status.ObservedGeneration || rs.DeletionTimestamp != nil {
			continue
		}
		logger.V(4).Info("Trying to cleanup replica set for deployment", "replicaSet", klog.KObj(rs), "deployment", klog.KObj(d))
		if err := dc.client.AppsV1().ReplicaSets(rs.Namespace).Delete(ctx, rs.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			// Stop at the first failure rather than hammering an overloaded API server.
			return fmt.Errorf("deployment %s/%s: deleting old replica set %s: %w", d.Namespace, d.Name, rs.Name, err)
		}
	}
	return nil
}

// syncDeploymentStatus writes the status computed from the ReplicaSets if it changed. It does
// not touch the Progressing or ReplicaFailure conditions (see syncRolloutStatus).
func (dc *DeploymentController) syncDeploymentStatus(ctx context.Context, allRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment) error {
	newStatus := dc.CalculateStatus(allRSs, newRS, d)
	if reflect.DeepEqual(d.Status, newStatus) {
		return nil
	}
	d.Status = newStatus
	_, err := dc.client.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, d, metav1.UpdateOptions{FieldManager: dc.fieldManager})
	return err
}

// CalculateStatus derives the Deployment status from its ReplicaSets: replica counts are sums
// of ReplicaSet status fields, except unavailableReplicas which uses the spec sum (surge pods
// count), and the Available condition is set from R − maxUnavailable. The
// DeploymentReplicaSetTerminatingReplicas gate is on by default since v1.35, so
// terminatingReplicas is always reported.
func (dc *DeploymentController) CalculateStatus(allRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment) appsv1.DeploymentStatus {
	availableReplicas := deployutil.GetAvailableReplicaCountForReplicaSets(allRSs)
	// More available than desired happens while scaling down; that is not negative unavailability.
	unavailableReplicas := max(deployutil.GetReplicaCountForReplicaSets(allRSs)-availableReplicas, 0)

	var updatedReplicas int32
	if newRS != nil {
		updatedReplicas = newRS.Status.Replicas
	}
	status := appsv1.DeploymentStatus{
		ObservedGeneration:  d.Generation,
		Replicas:            deployutil.GetActualReplicaCountForReplicaSets(allRSs),
		UpdatedReplicas:     updatedReplicas,
		ReadyReplicas:       deployutil.GetReadyReplicaCountForReplicaSets(allRSs),
		AvailableReplicas:   availableReplicas,
		UnavailableReplicas: unavailableReplicas,
		TerminatingReplicas: deployutil.GetTerminatingReplicaCountForReplicaSets(allRSs),
		CollisionCount:      d.Status.CollisionCount,
	}
	// Copy the conditions so that setting one does not write through to d.
	status.Conditions = append(status.Conditions, d.Status.Conditions...)

	if availableReplicas >= *d.Spec.Replicas-deployutil.MaxUnavailable(*d) {
		c := deployutil.NewDeploymentCondition(appsv1.DeploymentAvailable, corev1.ConditionTrue, deployutil.MinimumReplicasAvailable, "Deployment has minimum availability.", dc.metaNow())
		deployutil.SetDeploymentCondition(&status, *c)
	} else {
		c := deployutil.NewDeploymentCondition(appsv1.DeploymentAvailable, corev1.ConditionFalse, deployutil.MinimumReplicasUnavailable, "Deployment does not have minimum availability.", dc.metaNow())
		deployutil.SetDeploymentCondition(&status, *c)
	}
	return status
}

// isScalingEvent reports whether spec.replicas changed since the active ReplicaSets were last
// sized, judged by their desired-replicas annotation (ReplicaSets without a parseable one are
// ignored).
func (dc *DeploymentController) isScalingEvent(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) (bool, error) {
	newRS, oldRSs, err := dc.getAllReplicaSetsAndSyncRevision(ctx, d, rsList, false)
	if err != nil {
		return false, err
	}
	return deployutil.ReplicasChanged(ctx, d, deployutil.WithNewRS(oldRSs, newRS)), nil
}

// metaNow is the controller clock as an API timestamp.
func (dc *DeploymentController) metaNow() metav1.Time {
	return metav1.NewTime(dc.now())
}
