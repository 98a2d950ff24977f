package deployment

// The new ReplicaSet of a Deployment: found by template, its revision and annotations synced,
// or created. Its steps are exported for the gray hook, which writes the status they change
// with its own and creates a canary at its own size and labels (controller/graysync).

import (
	"context"
	"fmt"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/kubegray/kubectl-gray/pkg/deployutil"
)

// getAllReplicaSetsAndSyncRevision splits the claimed ReplicaSets into the new one (matching
// d's template, created when createIfNotExisted) and all old ones, syncing the new one's
// revision (max old revision + 1) and mirroring it onto d.
func (dc *DeploymentController) getAllReplicaSetsAndSyncRevision(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet, createIfNotExisted bool) (*appsv1.ReplicaSet, []*appsv1.ReplicaSet, error) {
	_, allOldRSs := deployutil.FindOldReplicaSets(d, rsList)
	newRS, err := dc.getNewReplicaSet(ctx, d, rsList, allOldRSs, createIfNotExisted)
	if err != nil {
		return nil, nil, err
	}
	return newRS, allOldRSs, nil
}

// getNewReplicaSet returns the ReplicaSet running d's template, or nil if there is none and
// createIfNotExisted is false. An existing one gets d's annotations and minReadySeconds and a
// bumped revision (SyncNewReplicaSet); a created one gets upstream's hash-named identity
// (NewReplicaSet, CreateNewReplicaSet). Both paths may write d's status (revision annotation,
// Progressing condition).
func (dc *DeploymentController) getNewReplicaSet(ctx context.Context, d *appsv1.Deployment, rsList, oldRSs []*appsv1.ReplicaSet, createIfNotExisted bool) (*appsv1.ReplicaSet, error) {
	if existingNewRS := deployutil.FindNewReplicaSet(d, rsList); existingNewRS != nil {
		rs, statusChanged, err := dc.SyncNewReplicaSet(ctx, d, existingNewRS, oldRSs)
		if err != nil {
			return nil, err
		}
		if statusChanged {
			if err := dc.writeStatusMidSync(ctx, d); err != nil {
				return nil, err
			}
		}
		return rs, nil
	}
	if !createIfNotExisted {
		return nil, nil
	}
	newRS, err := dc.NewReplicaSet(d, oldRSs)
	if err != nil {
		return nil, err
	}
	createdRS, statusChanged, err := dc.CreateNewReplicaSet(ctx, d, newRS, oldRSs)
	if err != nil {
		return nil, err
	}
	if statusChanged {
		err = dc.writeStatusMidSync(ctx, d)
	}
	return createdRS, err
}

// newRevision is the revision of the new ReplicaSet beside oldRSs: the highest old one + 1.
func newRevision(oldRSs []*appsv1.ReplicaSet) string {
	return strconv.FormatInt(deployutil.MaxRevision(oldRSs)+1, 10)
}

// SyncNewReplicaSet is the existing new ReplicaSet rs of getNewReplicaSet: when its annotations,
// revision or minReadySeconds lag d, it is updated and returned as written (d's revision follows
// on a later sync); otherwise d takes its revision, and a Progressing condition when d has a
// progress deadline and none yet. statusChanged: d's status changed in memory, for the caller to
// write.
func (dc *DeploymentController) SyncNewReplicaSet(ctx context.Context, d *appsv1.Deployment, rs *appsv1.ReplicaSet, oldRSs []*appsv1.ReplicaSet) (_ *appsv1.ReplicaSet, statusChanged bool, _ error) {
	rsCopy := rs.DeepCopy()
	annotationsUpdated := deployutil.SetNewReplicaSetAnnotations(ctx, d, rsCopy, newRevision(oldRSs), true, deployutil.RevisionHistoryMaxChars)
	minReadySecondsNeedsUpdate := rsCopy.Spec.MinReadySeconds != d.Spec.MinReadySeconds
	if annotationsUpdated || minReadySecondsNeedsUpdate {
		// The Deployment's revision follows on a later sync, from the updated ReplicaSet.
		rsCopy.Spec.MinReadySeconds = d.Spec.MinReadySeconds
		written, err := dc.client.AppsV1().ReplicaSets(rsCopy.Namespace).Update(ctx, rsCopy, metav1.UpdateOptions{FieldManager: dc.fieldManager})
		return written, false, err
	}

	needsUpdate := deployutil.SetDeploymentRevision(d, rsCopy.Annotations[deployutil.RevisionAnnotation])
	// A Deployment that gained a progress deadline after its rollout started measures progress
	// from the moment we first saw its new ReplicaSet.
	if deployutil.HasProgressDeadline(d) && deployutil.GetDeploymentCondition(d.Status, appsv1.DeploymentProgressing) == nil {
		msg := fmt.Sprintf("Found new replica set %q", rsCopy.Name)
		condition := deployutil.NewDeploymentCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, deployutil.FoundNewRSReason, msg, dc.metaNow())
		deployutil.SetDeploymentCondition(&d.Status, *condition)
		needsUpdate = true
	}
	return rsCopy, needsUpdate, nil
}

// NewReplicaSet builds, without creating it, the ReplicaSet for d's current template beside
// oldRSs, at the size upstream gives a new ReplicaSet (deployutil.NewRSNewReplicas).
func (dc *DeploymentController) NewReplicaSet(d *appsv1.Deployment, oldRSs []*appsv1.ReplicaSet) (*appsv1.ReplicaSet, error) {
	newRS := dc.newReplicaSetFor(d)
	newReplicasCount, err := deployutil.NewRSNewReplicas(d, append(append([]*appsv1.ReplicaSet{}, oldRSs...), newRS), newRS)
	if err != nil {
		return nil, fmt.Errorf("deployment %s/%s: sizing new replica set: %w", d.Namespace, d.Name, err)
	}
	newRS.Spec.Replicas = &newReplicasCount
	return newRS, nil
}

// CreateNewReplicaSet creates newRS (NewReplicaSet's, at the size it has) with its revision
// annotations, as upstream's getNewReplicaSet does: one of ours already there under its name is
// taken, another one is a hash collision (collisionCount bumped, AlreadyExists returned); a
// failure sets the FailedRSCreate condition. On success d takes the revision and, when it has a
// progress deadline, the NewReplicaSetReason condition; statusChanged: d's status changed in
// memory, for the caller to write.
func (dc *DeploymentController) CreateNewReplicaSet(ctx context.Context, d *appsv1.Deployment, newRS *appsv1.ReplicaSet, oldRSs []*appsv1.ReplicaSet) (_ *appsv1.ReplicaSet, statusChanged bool, _ error) {
	logger := klog.FromContext(ctx)
	newReplicasCount := *newRS.Spec.Replicas
	revision := newRevision(oldRSs)
	deployutil.SetNewReplicaSetAnnotations(ctx, d, newRS, revision, false, deployutil.RevisionHistoryMaxChars)

	alreadyExists := false
	createdRS, err := dc.client.AppsV1().ReplicaSets(d.Namespace).Create(ctx, newRS, metav1.CreateOptions{FieldManager: dc.fieldManager})
	switch {
	case apierrors.IsAlreadyExists(err):
		// A slow cache or a fast resync can make us recreate our own ReplicaSet; anything else
		// under that name is a hash collision.
		alreadyExists = true
		rs, rsErr := dc.rsLister.ReplicaSets(newRS.Namespace).Get(newRS.Name)
		if rsErr != nil {
			return nil, false, rsErr
		}
		ref := metav1.GetControllerOf(rs)
		if ref != nil && ref.UID == d.UID && deployutil.EqualIgnoreHash(&d.Spec.Template, &rs.Spec.Template) {
			createdRS = rs
			break
		}
		// Bump collisionCount so the next attempt hashes to another name, and requeue by
		// returning the AlreadyExists error.
		if d.Status.CollisionCount == nil {
			d.Status.CollisionCount = new(int32)
		}
		preCollisionCount := *d.Status.CollisionCount
		*d.Status.CollisionCount++
		if _, dErr := dc.client.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, d, metav1.UpdateOptions{FieldManager: dc.fieldManager}); dErr == nil {
			logger.V(2).Info("Found a hash collision for deployment - bumping collisionCount to resolve it",
				"deployment", klog.KObj(d), "oldCollisionCount", preCollisionCount, "newCollisionCount", *d.Status.CollisionCount)
		}
		return nil, false, err
	case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		// Every later create fails the same way; handleErr forgets the key.
		return nil, false, err
	case err != nil:
		msg := fmt.Sprintf("Failed to create new replica set %q: %v", newRS.Name, err)
		if deployutil.HasProgressDeadline(d) {
			cond := deployutil.NewDeploymentCondition(appsv1.DeploymentProgressing, corev1.ConditionFalse, deployutil.FailedRSCreateReason, msg, dc.metaNow())
			deployutil.SetDeploymentCondition(&d.Status, *cond)
			// The create error is the one worth returning; this write is best effort.
			_, _ = dc.client.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, d, metav1.UpdateOptions{FieldManager: dc.fieldManager})
		}
		dc.eventRecorder.Eventf(d, corev1.EventTypeWarning, deployutil.FailedRSCreateReason, "%s", msg)
		return nil, false, err
	}
	if !alreadyExists && newReplicasCount > 0 {
		dc.eventRecorder.Eventf(d, corev1.EventTypeNormal, scalingReplicaSetReason, "Scaled up replica set %s from 0 to %d", createdRS.Name, newReplicasCount)
	}

	needsUpdate := deployutil.SetDeploymentRevision(d, revision)
	if !alreadyExists && deployutil.HasProgressDeadline(d) {
		msg := fmt.Sprintf("Created new replica set %q", createdRS.Name)
		condition := deployutil.NewDeploymentCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, deployutil.NewReplicaSetReason, msg, dc.metaNow())
		deployutil.SetDeploymentCondition(&d.Status, *condition)
		needsUpdate = true
	}
	return createdRS, needsUpdate, nil
}

// writeStatusMidSync writes d's status in a sync that goes on to write it again, and gives d
// the resourceVersion the server answered. Upstream sends the later write with the version
// this one replaced: a 409 Conflict by design, a requeue, and the same sync once more. The
// status that finally lands is the same; it lands in this sync, with one write less.
func (dc *DeploymentController) writeStatusMidSync(ctx context.Context, d *appsv1.Deployment) error {
	written, err := dc.client.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, d, metav1.UpdateOptions{FieldManager: dc.fieldManager})
	if err != nil {
		return err
	}
	d.ResourceVersion = written.ResourceVersion
	return nil
}

// newReplicaSetFor builds (without sizing or annotations) the ReplicaSet for d's current
// template: template labels and selector carry the pod-template-hash, the name is derived from
// the hash so that retries are idempotent, and d is its controller.
func (dc *DeploymentController) newReplicaSetFor(d *appsv1.Deployment) *appsv1.ReplicaSet {
	template := *d.Spec.Template.DeepCopy()
	// The hash is taken before the hash label is added, as upstream does.
	hash := deployutil.ComputeHash(&template, d.Status.CollisionCount)
	template.Labels = deployutil.CloneAndAddLabel(d.Spec.Template.Labels, deployutil.DefaultPodTemplateHashKey, hash)
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{
			Name:            deployutil.GenerateReplicaSetName(d.Name, hash),
			Namespace:       d.Namespace,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(d, controllerKind)},
			Labels:          template.Labels,
		},
		Spec: appsv1.ReplicaSetSpec{
			Replicas:        new(int32),
			MinReadySeconds: d.Spec.MinReadySeconds,
			Selector:        deployutil.CloneSelectorAndAddLabel(d.Spec.Selector, deployutil.DefaultPodTemplateHashKey, hash),
			Template:        template,
		},
	}
}
