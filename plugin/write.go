package plugin

import (
	"context"
	"encoding/json"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
)

// edit changes a copy of the live Deployment into the wanted one. An error
// refuses the whole write (nothing is sent).
type edit func(d *appsv1.Deployment) error

// patchBuilder turns the live Deployment and the wanted one into one patch.
// Every builder includes live's resourceVersion so the API server refuses the
// patch with a Conflict if the Deployment changed since it was read.
type patchBuilder func(live, want *appsv1.Deployment) (types.PatchType, []byte, error)

// writeResult is what a write did.
type writeResult struct {
	// Before is the Deployment as read before the (last) attempt.
	Before *appsv1.Deployment
	// After is the Deployment as the server returned it, or for a client dry
	// run or no change, as it would be.
	After *appsv1.Deployment
	// Changed is false when the edits left the Deployment as it was.
	Changed bool
}

// writeDeployment reads the Deployment, applies the edits to a copy and sends
// the difference as one patch guarded by the resourceVersion it read. On a
// conflict it reads again and reapplies the edits, so a write never
// overwrites a change it did not see.
func writeDeployment(ctx context.Context, client kubernetes.Interface, namespace, name string, dryRun cmdutil.DryRunStrategy, build patchBuilder, edits ...edit) (writeResult, error) {
	deployments := client.AppsV1().Deployments(namespace)
	var result writeResult
	// apiError keeps a Conflict recognisable, so RetryOnConflict still sees
	// it; errors of the edits already name the Deployment and pass through.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		live, err := deployments.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return apiError(err, "get", namespace, name)
		}
		want := live.DeepCopy()
		for _, e := range edits {
			if err := e(want); err != nil {
				return err
			}
		}
		result = writeResult{Before: live, After: want, Changed: !equality.Semantic.DeepEqual(live, want)}
		if !result.Changed || dryRun == cmdutil.DryRunClient {
			return nil
		}
		patchType, patch, err := build(live, want)
		if err != nil {
			return fmt.Errorf("deployment %s/%s: building the patch: %w", namespace, name, err)
		}
		opts := metav1.PatchOptions{FieldManager: fieldManager}
		if dryRun == cmdutil.DryRunServer {
			opts.DryRun = []string{metav1.DryRunAll}
		}
		after, err := deployments.Patch(ctx, name, patchType, patch, opts)
		if err != nil {
			return apiError(err, "patch", namespace, name)
		}
		result.After = after
		return nil
	})
	if err != nil {
		return writeResult{}, err
	}
	return result, nil
}

// strategicPatch is the strategic merge patch from live to want, so lists
// such as containers merge by name like `kubectl patch` does.
func strategicPatch(live, want *appsv1.Deployment) (types.PatchType, []byte, error) {
	before, err := json.Marshal(live)
	if err != nil {
		return "", nil, err
	}
	after, err := json.Marshal(want)
	if err != nil {
		return "", nil, err
	}
	patch, err := strategicpatch.CreateTwoWayMergePatch(before, after, appsv1.Deployment{})
	if err != nil {
		return "", nil, err
	}
	patch, err = withResourceVersion(patch, live.ResourceVersion)
	return types.StrategicMergePatchType, patch, err
}

// withResourceVersion adds metadata.resourceVersion to a merge patch: the API
// server then applies it only to that version of the object.
func withResourceVersion(patch []byte, resourceVersion string) ([]byte, error) {
	if resourceVersion == "" {
		return patch, nil
	}
	var m map[string]any
	if err := json.Unmarshal(patch, &m); err != nil {
		return nil, err
	}
	meta, _ := m["metadata"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
		m["metadata"] = meta
	}
	meta["resourceVersion"] = resourceVersion
	return json.Marshal(m)
}

// jsonPatchOp is one RFC 6902 operation.
type jsonPatchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value"`
}

// templatePatch replaces the pod template and the annotations wholesale with
// a JSON patch, as kubectl rollout undo does: a rollback must reproduce the
// old template exactly, which a merge could not guarantee (fields absent from
// the old template would survive a merge).
func templatePatch(live, want *appsv1.Deployment) (types.PatchType, []byte, error) {
	annotations := want.Annotations
	if annotations == nil {
		annotations = map[string]string{}
	}
	ops := []jsonPatchOp{
		{Op: "replace", Path: "/spec/template", Value: want.Spec.Template},
		{Op: "add", Path: "/metadata/annotations", Value: annotations},
	}
	if live.ResourceVersion != "" {
		ops = append([]jsonPatchOp{{Op: "replace", Path: "/metadata/resourceVersion", Value: live.ResourceVersion}}, ops...)
	}
	patch, err := json.Marshal(ops)
	return types.JSONPatchType, patch, err
}
