package deployment

// Alongside mode's dispatch (docs/design.md: Alongside mode): only Deployments carrying
// kubegray.io/percent, or taken over, are ours, the rest the built-in controller's. A gray
// rollout in flight is taken over (paused, Recreate, the strategy saved: takeover.go) with its
// ReplicaSets frozen (freeze.go) before anything of it is written, runs the instead-mode gray
// sync through a view (alongside_view.go), and is released when it ends or leaves gray. Every
// sync repairs what a missing admission policy would have refused.

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/kubegray/kubectl-gray/controller/gray"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/kubegray/kubectl-gray/controller/metrics"
	"github.com/kubegray/kubectl-gray/pkg/deployutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// isAlongsideManaged reports whether an alongside controller has anything to do with d: it is
// annotated, taken over, or carries gray leftovers (our status or GrayHeld condition) to clean.
func isAlongsideManaged(d *appsv1.Deployment) bool {
	_, annotated := d.Annotations[grayapi.PercentAnnotation]
	_, taken := d.Annotations[grayapi.StrategyAnnotation]
	return annotated || taken || hasGrayLeftovers(d)
}

// syncAlongside is the sync of a Deployment an alongside controller manages (see the file
// comment for the decisions).
func (dc *DeploymentController) syncAlongside(ctx context.Context, key string, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) error {
	savedValue, taken := d.Annotations[grayapi.StrategyAnnotation]
	_, annotated := d.Annotations[grayapi.PercentAnnotation]
	prev, _ := readGrayStatus(ctx, d)
	if !annotated {
		// No longer gray: a rollback must not bring the opt-in back (gray_record.go).
		if err := dc.mirrorRecord(ctx, d, rsList); err != nil {
			return err
		}
	}

	if !taken {
		switch {
		case prev.TakenOver:
			strategy := d.Spec.Strategy
			if strategy.Type != appsv1.RollingUpdateDeploymentStrategyType {
				strategy = defaultStrategy()
			}
			return dc.release(ctx, d, rsList, strategy, nil, corev1.EventTypeWarning,
				fmt.Sprintf("%s was removed from the taken-over Deployment: restored strategy %s", grayapi.StrategyAnnotation, describeStrategy(strategy)))
		case annotated && dc.takeover == grayapi.TakeoverEager && d.Spec.Strategy.Type == appsv1.RollingUpdateDeploymentStrategyType:
			if froze, err := dc.freezeFirst(ctx, d, rsList); froze || err != nil {
				return err
			}
			return dc.takeOver(ctx, d)
		case annotated:
			if err := dc.handBack(ctx, d, rsList); err != nil {
				return err
			}
			return dc.trackNotTakenOver(ctx, d, rsList)
		}
		metrics.ForgetGray(key)
		if err := dc.handBack(ctx, d, rsList); err != nil {
			return err
		}
		return dc.removeGrayLeftovers(ctx, d)
	}

	saved, err := grayapi.ParseStrategy(savedValue)
	switch {
	case err != nil:
		return dc.release(ctx, d, rsList, defaultStrategy(), nil, corev1.EventTypeWarning,
			fmt.Sprintf("%v: restored the default strategy %s", err, describeStrategy(defaultStrategy())))
	case !annotated:
		metrics.ForgetGray(key)
		return dc.release(ctx, d, rsList, saved, nil, corev1.EventTypeNormal,
			fmt.Sprintf("%s was removed: restored strategy %s, the rollout completes under it", grayapi.PercentAnnotation, savedValue))
	case saved.Type != appsv1.RollingUpdateDeploymentStrategyType:
		return dc.release(ctx, d, rsList, saved, nil, corev1.EventTypeNormal,
			fmt.Sprintf("strategy %s replaces all pods at once, so it has no gray rollout: restored it", savedValue))
	}
	if froze, err := dc.freezeFirst(ctx, d, rsList); froze || err != nil {
		return err
	}
	if !d.Spec.Paused || d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
		return dc.retakeOver(ctx, d)
	}

	view := &alongsideView{strategy: withStrategyDefaults(saved), releaseOnComplete: dc.takeover != grayapi.TakeoverEager}
	g, err := dc.runGray(ctx, key, d, rsList, view)
	if err != nil || g == nil {
		return err
	}
	if g.st.Phase != grayapi.PhaseComplete || dc.takeover == grayapi.TakeoverEager {
		return nil
	}
	st := g.st
	st.TakenOver = false
	return dc.release(ctx, g.cur.server, deployutil.WithNewRS(g.cur.oldRSs, g.cur.newRS), saved, &st, corev1.EventTypeNormal,
		fmt.Sprintf("revision %d complete: restored strategy %s", st.Revision, savedValue))
}

// freezeFirst freezes the ReplicaSets of a Deployment about to be taken over, or taken over,
// and reports whether it had to: the sync then stops, and the ReplicaSet events of the freeze
// sync the Deployment again, so that no write of the gray rollout goes before the cache shows
// every ReplicaSet frozen.
func (dc *DeploymentController) freezeFirst(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) (bool, error) {
	froze := false
	for _, rs := range rsList {
		froze = froze || (!isFrozen(rs) && rs.DeletionTimestamp == nil)
	}
	if !froze {
		return false, nil
	}
	// A Deployment just released still looks taken over in a cache that is behind: freezing
	// its ReplicaSets again would refuse the built-in controller for nothing.
	if _, fresh, err := dc.cacheFresh(ctx, cache.MetaObjectToName(d).String(), d, rsList, cacheChecks{live: true}); !fresh {
		return true, err
	}
	return true, dc.freezeReplicaSets(ctx, d, rsList)
}

// handBack undoes what only a takeover means on a Deployment that is not taken over: frozen
// ReplicaSets (a release that stopped half-way) and kubegray.io/paused (a copy that the built-in
// controller put on a ReplicaSet and `kubectl rollout undo` brought back: nobody's pause).
func (dc *DeploymentController) handBack(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) error {
	if err := dc.thawReplicaSets(ctx, d, rsList); err != nil {
		return err
	}
	if !userPaused(d) {
		return nil
	}
	patch := map[string]any{"metadata": map[string]any{
		"resourceVersion": d.ResourceVersion,
		"annotations":     map[string]any{grayapi.PausedAnnotation: nil},
	}}
	if _, err := dc.patchDeployment(ctx, d, patch); err != nil {
		return fmt.Errorf("deployment %s/%s: removing a %s that no takeover set: %w", d.Namespace, d.Name, grayapi.PausedAnnotation, err)
	}
	return nil
}

// removeGrayLeftovers drops our status annotation and GrayHeld condition from a Deployment
// that is no longer gray, without touching the rest of its status.
func (dc *DeploymentController) removeGrayLeftovers(ctx context.Context, d *appsv1.Deployment) error {
	if !hasGrayLeftovers(d) {
		return nil
	}
	cleaned := d.DeepCopy()
	delete(cleaned.Annotations, grayapi.StatusAnnotation)
	for _, c := range grayapi.Conditions {
		deployutil.RemoveDeploymentCondition(&cleaned.Status, c)
	}
	if _, err := dc.patchGrayStatus(ctx, cleaned); err != nil {
		return fmt.Errorf("deployment %s/%s: removing the gray status: %w", d.Namespace, d.Name, err)
	}
	return nil
}

// trackNotTakenOver records, for an annotated Deployment that is not taken over, the revision
// the built-in controller completed: it becomes the stable revision of the next gray rollout
// (the one `kubectl gray undo` returns to). Nothing is written while it is rolling.
func (dc *DeploymentController) trackNotTakenOver(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) error {
	newRS := deployutil.FindNewReplicaSet(d, rsList)
	if newRS == nil || !deployutil.DeploymentComplete(d, &d.Status) {
		return nil
	}
	rev, err := deployutil.Revision(newRS)
	if err != nil || rev == 0 {
		return nil
	}
	// The durable record (gray_record.go) holds for a rollout the built-in controller completed
	// too: a later rollback to any of these ReplicaSets keeps the opt-in and finds the stable one.
	if err := dc.markStable(ctx, d, newRS, rsList); err != nil {
		return err
	}
	if err := dc.mirrorRecord(ctx, d, rsList); err != nil {
		return err
	}
	prev, _ := readGrayStatus(ctx, d)
	// Up to date also means for this generation: `kubectl gray status --until complete` waits
	// for it, and the release patch that ended the takeover bumped it.
	if prev.Mode == grayapi.ModeAlongside && prev.Phase == grayapi.PhaseComplete && prev.Revision == rev && !prev.TakenOver &&
		prev.ObservedGeneration == d.Generation {
		return nil
	}
	var step int32
	if points, err := grayapi.ParsePercent(d.Annotations[grayapi.PercentAnnotation]); err == nil {
		step = int32(len(points))
	}
	replicas := *d.Spec.Replicas
	// The failure of a rollout that on-failure rolled back stays across the release.
	st := gray.Completed(rev, step, replicas, gray.KeptRollbackFailure(prev, rev))
	st.Mode, st.Takeover, st.ObservedGeneration = grayapi.ModeAlongside, dc.takeover, d.Generation
	value, err := grayapi.FormatStatus(st)
	if err != nil {
		return fmt.Errorf("deployment %s/%s: %w", d.Namespace, d.Name, err)
	}
	updated := d.DeepCopy()
	updated.Annotations[grayapi.StatusAnnotation] = value
	setGrayConditions(&updated.Status, st, replicas, int(step), dc.metaNow())
	if alongsideStatusUnchanged(d, updated) {
		return nil
	}
	if _, err := dc.patchGrayStatus(ctx, updated); err != nil {
		return fmt.Errorf("deployment %s/%s: recording completed revision %d: %w", d.Namespace, d.Name, rev, err)
	}
	return nil
}

// patchDeployment sends a JSON merge patch to the Deployment itself.
func (dc *DeploymentController) patchDeployment(ctx context.Context, d *appsv1.Deployment, patch map[string]any) (*appsv1.Deployment, error) {
	body, err := json.Marshal(patch)
	if err != nil {
		return nil, err
	}
	return dc.client.AppsV1().Deployments(d.Namespace).Patch(ctx, d.Name, types.MergePatchType, body,
		metav1.PatchOptions{FieldManager: dc.fieldManager})
}

// patchGrayStatus writes what of updated's status side is ours (kubegray.io/status, the
// mirrored revision annotation, the GrayHeld condition, each removed when absent from updated)
// as a strategic merge patch of the status subresource, conditional on updated's
// resourceVersion: the rest of the status belongs to the built-in controller and is left as
// the server has it.
func (dc *DeploymentController) patchGrayStatus(ctx context.Context, updated *appsv1.Deployment) (*appsv1.Deployment, error) {
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
		return dc.client.AppsV1().Deployments(updated.Namespace).Patch(ctx, updated.Name, types.StrategicMergePatchType, body,
			metav1.PatchOptions{FieldManager: dc.fieldManager}, "status")
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
	live, getErr := dc.client.AppsV1().Deployments(updated.Namespace).Get(ctx, updated.Name, metav1.GetOptions{})
	if getErr != nil || live.UID != updated.UID || live.Generation != updated.Generation {
		return nil, err
	}
	return patch(live.ResourceVersion)
}

// alongsideStatusUnchanged reports whether patchGrayStatus(updated) would change nothing on
// server. Condition timestamps are not compared: only a change of the condition itself is
// worth a write.
func alongsideStatusUnchanged(server, updated *appsv1.Deployment) bool {
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
