package deployment

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/klog/v2"
)

// claimReplicaSets decides, for every ReplicaSet of d's namespace, whether d owns it, adopting
// matching orphans and releasing owned ReplicaSets whose labels stopped matching (upstream's
// ReplicaSetControllerRefManager.ClaimReplicaSets). It tries every ReplicaSet and returns the
// claimed ones (the cached, pre-patch objects) plus the aggregate of all errors.
func (dc *DeploymentController) claimReplicaSets(ctx context.Context, d *appsv1.Deployment, selector labels.Selector, sets []*appsv1.ReplicaSet) ([]*appsv1.ReplicaSet, error) {
	// Adoption is only safe if d is still alive on the server: the cache may lag a deletion, and
	// adopting for a Deployment that is being deleted would leak the ReplicaSet to the garbage
	// collector. The uncached GET happens at most once per sync, and only if adoption is tried.
	var (
		canAdoptOnce sync.Once
		canAdoptErr  error
	)
	canAdopt := func() error {
		canAdoptOnce.Do(func() { canAdoptErr = dc.recheckDeploymentForAdoption(ctx, d) })
		return canAdoptErr
	}

	var claimed []*appsv1.ReplicaSet
	var errs []error
	for _, rs := range sets {
		ok, err := dc.claimReplicaSet(ctx, d, selector, rs, canAdopt)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if ok {
			claimed = append(claimed, rs)
		}
	}
	return claimed, utilerrors.NewAggregate(errs)
}

// claimReplicaSet applies the ownership rules to one ReplicaSet and reports whether d owns it.
func (dc *DeploymentController) claimReplicaSet(ctx context.Context, d *appsv1.Deployment, selector labels.Selector, rs *appsv1.ReplicaSet, canAdopt func() error) (bool, error) {
	matches := selector.Matches(labels.Set(rs.Labels))

	if ref := metav1.GetControllerOfNoCopy(rs); ref != nil {
		if ref.UID != d.UID {
			return false, nil
		}
		if matches {
			// Already ours; claiming needs no write, so it is allowed even while d is deleting.
			return true, nil
		}
		if d.DeletionTimestamp != nil {
			return false, nil
		}
		if err := dc.orphanReplicaSet(ctx, d, rs); err != nil {
			if apierrors.IsNotFound(err) {
				return false, nil
			}
			return false, err
		}
		return false, nil
	}

	// An orphan.
	if d.DeletionTimestamp != nil || !matches || rs.DeletionTimestamp != nil {
		return false, nil
	}
	if d.Namespace != "" && d.Namespace != rs.Namespace {
		return false, nil
	}
	if err := dc.adoptReplicaSet(ctx, d, rs, canAdopt); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, err
	}
	return true, nil
}

// recheckDeploymentForAdoption is the uncached quorum read that guards adoption.
func (dc *DeploymentController) recheckDeploymentForAdoption(ctx context.Context, d *appsv1.Deployment) error {
	fresh, err := dc.client.AppsV1().Deployments(d.Namespace).Get(ctx, d.Name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("can't recheck DeletionTimestamp: %w", err)
	}
	if fresh.UID != d.UID {
		return fmt.Errorf("can't recheck DeletionTimestamp: original Deployment %v/%v is gone: got uid %v, wanted %v", d.Namespace, d.Name, fresh.UID, d.UID)
	}
	if fresh.DeletionTimestamp != nil {
		return fmt.Errorf("%v/%v has just been deleted at %v", fresh.Namespace, fresh.Name, fresh.DeletionTimestamp)
	}
	return nil
}

// ownerRefPatchMeta is the metadata of an adoption patch. The uid is a precondition: the patch
// fails if the ReplicaSet was deleted and recreated under the same name.
type ownerRefPatchMeta struct {
	OwnerReferences []metav1.OwnerReference `json:"ownerReferences"`
	UID             types.UID               `json:"uid"`
}

// deleteOwnerRefPatchMeta is the metadata of a release patch ($patch: delete by owner uid).
type deleteOwnerRefPatchMeta struct {
	OwnerReferences []map[string]string `json:"ownerReferences"`
	UID             types.UID           `json:"uid"`
}

// adoptReplicaSet makes d the controller of an orphan with a strategic-merge patch. Owner
// references merge by uid, so other owners are kept and a non-controller reference to d is
// turned into the controller reference.
func (dc *DeploymentController) adoptReplicaSet(ctx context.Context, d *appsv1.Deployment, rs *appsv1.ReplicaSet, canAdopt func() error) error {
	if err := canAdopt(); err != nil {
		return fmt.Errorf("can't adopt ReplicaSet %v/%v (%v): %w", rs.Namespace, rs.Name, rs.UID, err)
	}
	patch, err := json.Marshal(map[string]ownerRefPatchMeta{"metadata": {
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(d, controllerKind)},
		UID:             rs.UID,
	}})
	if err != nil {
		return fmt.Errorf("deployment %s/%s: encoding adoption patch for replica set %s: %w", d.Namespace, d.Name, rs.Name, err)
	}
	_, err = dc.client.AppsV1().ReplicaSets(rs.Namespace).Patch(ctx, rs.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{FieldManager: dc.fieldManager})
	return err
}

// orphanReplicaSet removes d's owner reference from a ReplicaSet that no longer matches.
// NotFound and Invalid (no such owner reference, or the uid precondition failed because the
// ReplicaSet was recreated) mean there is nothing left to orphan.
func (dc *DeploymentController) orphanReplicaSet(ctx context.Context, d *appsv1.Deployment, rs *appsv1.ReplicaSet) error {
	klog.FromContext(ctx).V(2).Info("Patching ReplicaSet to remove its controllerRef",
		"replicaSet", klog.KObj(rs), "gvk", controllerKind, "controller", d.Name)
	patch, err := json.Marshal(map[string]deleteOwnerRefPatchMeta{"metadata": {
		OwnerReferences: []map[string]string{{"$patch": "delete", "uid": string(d.UID)}},
		UID:             rs.UID,
	}})
	if err != nil {
		return fmt.Errorf("deployment %s/%s: encoding release patch for replica set %s: %w", d.Namespace, d.Name, rs.Name, err)
	}
	_, err = dc.client.AppsV1().ReplicaSets(rs.Namespace).Patch(ctx, rs.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{FieldManager: dc.fieldManager})
	if apierrors.IsNotFound(err) || apierrors.IsInvalid(err) {
		return nil
	}
	return err
}
