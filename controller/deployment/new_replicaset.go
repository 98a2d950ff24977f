package deployment

// The new ReplicaSet of a Deployment: found by template, its revision and annotations synced,
// or created (capped at the gray target, labelled by the mode: frozen in alongside mode).

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
// bumped revision; a created one gets upstream's hash-named identity (sync.go: getNewReplicaSet,
// name from the template hash and collisionCount). Both paths
// may write d's status (revision annotation, Progressing condition).
func (dc *DeploymentController) getNewReplicaSet(ctx context.Context, d *appsv1.Deployment, rsList, oldRSs []*appsv1.ReplicaSet, createIfNotExisted bool) (*appsv1.ReplicaSet, error) {
	return dc.getNewReplicaSetWith(ctx, d, rsList, oldRSs, newReplicaSetOptions{create: createIfNotExisted})
}

// newReplicaSetOptions tune getNewReplicaSetWith; only create is set on upstream paths, so
// everything else keeps upstream's behaviour unless a gray rollout asks for it.
type newReplicaSetOptions struct {
	// create makes the new ReplicaSet when none runs d's template.
	create bool
	// maxReplicas caps the size a created ReplicaSet starts with (the gray target), so that
	// it never exceeds the target, not even at creation.
	maxReplicas *int32
	// deferStatus leaves the revision annotation and Progressing condition changes in d for
	// the caller's own status write, instead of writing d's status here.
	deferStatus bool
	// labels, when set, gives the labels the created ReplicaSet carries from those upstream
	// gives it (the mode's: alongside mode creates it frozen).
	labels func(map[string]string) map[string]string
}

// getNewReplicaSetWith is getNewReplicaSet with the gray options.
func (dc *DeploymentController) getNewReplicaSetWith(ctx context.Context, d *appsv1.Deployment, rsList, oldRSs []*appsv1.ReplicaSet, opts newReplicaSetOptions) (*appsv1.ReplicaSet, error) {
	logger := klog.FromContext(ctx)
	existingNewRS := deployutil.FindNewReplicaSet(d, rsList)

	maxOldRevision := deployutil.MaxRevision(oldRSs)
	newRevision := strconv.FormatInt(maxOldRevision+1, 10)

	if existingNewRS != nil {
		rsCopy := existingNewRS.DeepCopy()
		annotationsUpdated := deployutil.SetNewReplicaSetAnnotations(ctx, d, rsCopy, newRevision, true, deployutil.RevisionHistoryMaxChars)
		minReadySecondsNeedsUpdate := rsCopy.Spec.MinReadySeconds != d.Spec.MinReadySeconds
		if annotationsUpdated || minReadySecondsNeedsUpdate {
			// The Deployment's revision follows on a later sync, from the updated ReplicaSet.
			rsCopy.Spec.MinReadySeconds = d.Spec.MinReadySeconds
			return dc.client.AppsV1().ReplicaSets(rsCopy.Namespace).Update(ctx, rsCopy, metav1.UpdateOptions{FieldManager: dc.fieldManager})
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
		if needsUpdate && !opts.deferStatus {
			if err := dc.writeStatusMidSync(ctx, d); err != nil {
				return nil, err
			}
		}
		return rsCopy, nil
	}

	if !opts.create {
		return nil, nil
	}

	newRS := dc.newReplicaSetFor(d)
	newReplicasCount, err := deployutil.NewRSNewReplicas(d, append(append([]*appsv1.ReplicaSet{}, oldRSs...), newRS), newRS)
	if err != nil {
		return nil, fmt.Errorf("deployment %s/%s: sizing new replica set: %w", d.Namespace, d.Name, err)
	}
	if opts.maxReplicas != nil {
		newReplicasCount = min(newReplicasCount, *opts.maxReplicas)
	}
	newRS.Spec.Replicas = &newReplicasCount
	if opts.labels != nil {
		newRS.Labels = opts.labels(newRS.Labels)
	}
	deployutil.SetNewReplicaSetAnnotations(ctx, d, newRS, newRevision, false, deployutil.RevisionHistoryMaxChars)

	alreadyExists := false
	createdRS, err := dc.client.AppsV1().ReplicaSets(d.Namespace).Create(ctx, newRS, metav1.CreateOptions{FieldManager: dc.fieldManager})
	switch {
	case apierrors.IsAlreadyExists(err):
		// A slow cache or a fast resync can make us recreate our own ReplicaSet; anything else
		// under that name is a hash collision.
		alreadyExists = true
		rs, rsErr := dc.rsLister.ReplicaSets(newRS.Namespace).Get(newRS.Name)
		if rsErr != nil {
			return nil, rsErr
		}
		ref := metav1.GetControllerOf(rs)
		if ref != nil && ref.UID == d.UID && deployutil.EqualIgnoreHash(&d.Spec.Template, &rs.Spec.Template) {
			createdRS = rs
			err = nil
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
		return nil, err
	case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		// Every later create fails the same way; handleErr forgets the key.
		return nil, err
	case err != nil:
		msg := fmt.Sprintf("Failed to create new replica set %q: %v", newRS.Name, err)
		if deployutil.HasProgressDeadline(d) {
			cond := deployutil.NewDeploymentCondition(appsv1.DeploymentProgressing, corev1.ConditionFalse, deployutil.FailedRSCreateReason, msg, dc.metaNow())
			deployutil.SetDeploymentCondition(&d.Status, *cond)
			// The create error is the one worth returning; this write is best effort.
			_, _ = dc.client.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, d, metav1.UpdateOptions{FieldManager: dc.fieldManager})
		}
		dc.eventRecorder.Eventf(d, corev1.EventTypeWarning, deployutil.FailedRSCreateReason, "%s", msg)
		return nil, err
	}
	if !alreadyExists && newReplicasCount > 0 {
		dc.eventRecorder.Eventf(d, corev1.EventTypeNormal, scalingReplicaSetReason, "Scaled up replica set %s from 0 to %d", createdRS.Name, newReplicasCount)
	}

	needsUpdate := deployutil.SetDeploymentRevision(d, newRevision)
	if !alreadyExists && deployutil.HasProgressDeadline(d) {
		msg := fmt.Sprintf("Created new replica set %q", createdRS.Name)
		condition := deployutil.NewDeploymentCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, deployutil.NewReplicaSetReason, msg, dc.metaNow())
		deployutil.SetDeploymentCondition(&d.Status, *condition)
		needsUpdate = true
	}
	if needsUpdate && !opts.deferStatus {
		err = dc.writeStatusMidSync(ctx, d)
	}
	return createdRS, err
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
