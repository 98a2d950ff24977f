package graysync

// The durable record of a gray Deployment (docs/design.md: The durable record): the stable label
// and the copied opt-in on the ReplicaSets, which outlive the tools that rewrite a Deployment's
// annotations (`kubectl rollout undo`, apply, GitOps), and the re-derivation of the step and
// the hold when kubegray.io/status is lost or untrusted.

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/kubegray/kubectl-gray/controller/gray"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/kubegray/kubectl-gray/pkg/deployutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// markStableOfRollout labels the ReplicaSet of the stable revision of the rollout in flight, from
// the sync that starts the rollout on: a rollback (kubectl gray undo, or one that the built-in
// controller renumbers before our next sync) must find the stable revision by its record even
// when no sync saw that revision complete (a Deployment opted in and given its new image in one
// write, as `kubectl gray set --image` does).
func (g *graySync) markStableOfRollout(ctx context.Context) error {
	if g.st.StableRevision <= 0 {
		return nil
	}
	all := deployutil.WithNewRS(g.cur.oldRSs, g.cur.newRS)
	for _, rs := range all {
		if gray.IsRevisionOf(rs, g.st.StableRevision) {
			if rs.Labels[grayapi.StableLabel] == grayapi.StableLabelValue {
				return nil
			}
			written, err := g.gs.markStable(ctx, g.cur.d, rs, all)
			g.adoptReplicaSets(written)
			return err
		}
	}
	return nil
}

// markStable puts the stable label on stable and takes it off every other ReplicaSet, and
// returns the ReplicaSets it wrote, as written (those written before an error too).
func (gs *Controller) markStable(ctx context.Context, d *appsv1.Deployment, stable *appsv1.ReplicaSet, rsList []*appsv1.ReplicaSet) ([]*appsv1.ReplicaSet, error) {
	var written []*appsv1.ReplicaSet
	if stable.Labels[grayapi.StableLabel] != grayapi.StableLabelValue {
		rs, err := gs.patchReplicaSetMeta(ctx, stable, "labels", map[string]any{grayapi.StableLabel: grayapi.StableLabelValue})
		if err != nil {
			return written, fmt.Errorf("deployment %s/%s: marking replica set %s stable: %w", d.Namespace, d.Name, stable.Name, err)
		}
		written = append(written, rs)
		klog.FromContext(ctx).V(2).Info("Marked stable replica set", "deployment", klog.KObj(d), "replicaSet", klog.KObj(stable))
	}
	for _, rs := range rsList {
		if rs.UID == stable.UID {
			continue
		}
		if _, marked := rs.Labels[grayapi.StableLabel]; marked {
			unmarked, err := gs.patchReplicaSetMeta(ctx, rs, "labels", map[string]any{grayapi.StableLabel: nil})
			if err != nil {
				return written, fmt.Errorf("deployment %s/%s: unmarking replica set %s: %w", d.Namespace, d.Name, rs.Name, err)
			}
			written = append(written, unmarked)
		}
	}
	return written, nil
}

// adoptReplicaSets takes ReplicaSets this sync wrote in place of the ones it had read, so that
// what the sync reports afterwards (gray.Serves on nextFacts) sees them as the server does.
func (g *graySync) adoptReplicaSets(written []*appsv1.ReplicaSet) {
	for _, rs := range written {
		if g.cur.newRS != nil && g.cur.newRS.UID == rs.UID {
			g.cur.newRS = rs
		}
		for i, old := range g.cur.oldRSs {
			if old.UID == rs.UID {
				g.cur.oldRSs[i] = rs
			}
		}
	}
}

// mirrorRecord makes every ReplicaSet carry the Deployment's recorded annotations
// (grayapi.RecordedAnnotations: the hold points and the failure and timed-hold policy), each
// removed where the Deployment has none, and all of them and the abort record for a Deployment
// that is no longer gray: see the file comment.
func (gs *Controller) mirrorRecord(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) error {
	_, gray := d.Annotations[grayapi.PercentAnnotation]
	for _, rs := range rsList {
		changes := map[string]any{}
		for _, key := range grayapi.RecordedAnnotations {
			value, want := d.Annotations[key]
			want = want && gray
			current, has := rs.Annotations[key]
			switch {
			case want && (!has || current != value):
				changes[key] = value
			case !want && has:
				changes[key] = nil
			}
		}
		if _, aborted := rs.Labels[grayapi.AbortedLabel]; aborted && !gray {
			// Out of gray the rollout completes; an abort record left behind would abort the
			// same revision again if the Deployment opted in later.
			if _, err := gs.patchReplicaSetMeta(ctx, rs, "labels", map[string]any{grayapi.AbortedLabel: nil}); err != nil {
				return fmt.Errorf("deployment %s/%s: removing %s from replica set %s: %w", d.Namespace, d.Name, grayapi.AbortedLabel, rs.Name, err)
			}
		}
		if len(changes) == 0 {
			continue
		}
		if _, err := gs.patchReplicaSetMeta(ctx, rs, "annotations", changes); err != nil {
			return fmt.Errorf("deployment %s/%s: recording %v on replica set %s: %w", d.Namespace, d.Name, changes, rs.Name, err)
		}
	}
	return nil
}

// patchReplicaSetMeta sets (or, for a nil value, removes) labels or annotations of rs with a
// merge patch: metadata only, so it never conflicts with a resize and bumps no generation. It
// returns the written ReplicaSet, for a sync that writes the same ReplicaSet again (its next
// update must carry the new resourceVersion).
func (gs *Controller) patchReplicaSetMeta(ctx context.Context, rs *appsv1.ReplicaSet, field string, values map[string]any) (*appsv1.ReplicaSet, error) {
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{field: values}})
	if err != nil {
		return nil, err
	}
	return gs.client.AppsV1().ReplicaSets(rs.Namespace).Patch(ctx, rs.Name, types.MergePatchType, body,
		metav1.PatchOptions{FieldManager: gs.fieldManager})
}
