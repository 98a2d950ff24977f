package alongside

import (
	"context"
	"encoding/json"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubegray/kubectl-gray/pkg/deployutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// patchDeployment sends a JSON merge patch to the Deployment itself.
func (c *Controller) patchDeployment(ctx context.Context, d *appsv1.Deployment, patch map[string]any) (*appsv1.Deployment, error) {
	body, err := json.Marshal(patch)
	if err != nil {
		return nil, err
	}
	return c.client.AppsV1().Deployments(d.Namespace).Patch(ctx, d.Name, types.MergePatchType, body,
		metav1.PatchOptions{FieldManager: c.fieldManager})
}

// patchGrayStatus writes what of updated's status side is ours (kubegray.io/status, the
// mirrored revision annotation, the GrayHeld condition, each removed when absent from updated)
// as a strategic merge patch of the status subresource, conditional on updated's
// resourceVersion: the rest of the status belongs to the built-in controller and is left as
// the server has it.
func (c *Controller) patchGrayStatus(ctx context.Context, updated *appsv1.Deployment) (*appsv1.Deployment, error) {
	annotations := map[string]any{grayapi.StatusAnnotation: nil}
	if value, ok := updated.Annotations[grayapi.StatusAnnotation]; ok {
		annotations[grayapi.StatusAnnotation] = value
	}
	if rev, ok := updated.Annotations[deployutil.RevisionAnnotation]; ok {
		annotations[deployutil.RevisionAnnotation] = rev
	}
	var conditions []any
	for _, t := range grayapi.Conditions {
		var condition any = map[string]any{"type": string(t), "$patch": "delete"}
		if c := deployutil.GetDeploymentCondition(updated.Status, t); c != nil {
			condition = c
		}
		conditions = append(conditions, condition)
	}
	patch := func(resourceVersion string) (*appsv1.Deployment, error) {
		body, err := json.Marshal(map[string]any{
			"metadata": map[string]any{"annotations": annotations, "resourceVersion": resourceVersion},
			"status":   map[string]any{"conditions": conditions},
		})
		if err != nil {
			return nil, err
		}
		return c.client.AppsV1().Deployments(updated.Namespace).Patch(ctx, updated.Name, types.StrategicMergePatchType, body,
			metav1.PatchOptions{FieldManager: c.fieldManager}, "status")
	}
	// The resourceVersion makes the patch conditional on the Deployment this sync read: a
	// percent or resume written in between fails it, and the next sync decides again. The
	// built-in controller writes the status after every ReplicaSet change, though, and a patch
	// that lost only to that is sent again at once: the generation moves with every change of
	// spec or annotations (the API server bumps it for both on Deployments), so an unchanged
	// generation means nothing this sync decided from has changed.
	written, err := patch(updated.ResourceVersion)
	if !apierrors.IsConflict(err) {
		return written, err
	}
	live, getErr := c.client.AppsV1().Deployments(updated.Namespace).Get(ctx, updated.Name, metav1.GetOptions{})
	if getErr != nil || live.UID != updated.UID || live.Generation != updated.Generation {
		return nil, err
	}
	return patch(live.ResourceVersion)
}

// grayPartUnchanged reports whether patchGrayStatus(updated) would change nothing of the part
// of the status alongside mode owns (our annotation, the mirrored revision, our conditions) on
// server; the rest is the built-in controller's. Condition timestamps are not compared: only a
// change of the condition itself is worth a write.
func grayPartUnchanged(server, updated *appsv1.Deployment) bool {
	if server.Annotations[grayapi.StatusAnnotation] != updated.Annotations[grayapi.StatusAnnotation] ||
		server.Annotations[deployutil.RevisionAnnotation] != updated.Annotations[deployutil.RevisionAnnotation] {
		return false
	}
	for _, t := range grayapi.Conditions {
		a := deployutil.GetDeploymentCondition(server.Status, t)
		b := deployutil.GetDeploymentCondition(updated.Status, t)
		if (a == nil) != (b == nil) || (a != nil && (a.Status != b.Status || a.Reason != b.Reason || a.Message != b.Message)) {
			return false
		}
	}
	return true
}
