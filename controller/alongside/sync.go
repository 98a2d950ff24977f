package alongside

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegray/kubectl-gray/controller/gray"
	"github.com/kubegray/kubectl-gray/controller/metrics"
	"github.com/kubegray/kubectl-gray/pkg/deployutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// Manages reports whether alongside mode has anything to do with d: it is annotated, taken
// over, carries gray leftovers (our status or GrayHeld condition) to clean, or controls a frozen
// ReplicaSet to thaw. Every other Deployment belongs to the built-in controller alone.
func (c *Controller) Manages(d *appsv1.Deployment) bool {
	_, annotated := d.Annotations[grayapi.PercentAnnotation]
	_, taken := d.Annotations[grayapi.StrategyAnnotation]
	return annotated || taken || gray.HasLeftovers(d) || c.controlsFrozenReplicaSets(d)
}

// Sync is the sync of a Deployment alongside mode manages: the takeover, its repair, the gray
// sync through a View, the release, or the clean-up of a Deployment that left gray.
func (c *Controller) Sync(ctx context.Context, key string, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) error {
	savedValue, taken := d.Annotations[grayapi.StrategyAnnotation]
	_, annotated := d.Annotations[grayapi.PercentAnnotation]
	prev, _, _ := gray.StoredStatus(d)
	if !annotated {
		// No longer gray: a rollback must not bring the opt-in back.
		if err := c.host.MirrorRecord(ctx, d, rsList); err != nil {
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
			return c.release(ctx, d, rsList, strategy, nil, corev1.EventTypeWarning,
				fmt.Sprintf("%s was removed from the taken-over Deployment: restored strategy %s", grayapi.StrategyAnnotation, describeStrategy(strategy)))
		case annotated && c.takeover == grayapi.TakeoverEager && d.Spec.Strategy.Type == appsv1.RollingUpdateDeploymentStrategyType:
			if froze, err := c.freezeFirst(ctx, key, d, rsList); froze || err != nil {
				return err
			}
			return c.takeOver(ctx, d)
		case annotated:
			if err := c.handBack(ctx, d, rsList); err != nil {
				return err
			}
			return c.trackNotTakenOver(ctx, d, rsList)
		}
		metrics.ForgetGray(key)
		if err := c.handBack(ctx, d, rsList); err != nil {
			return err
		}
		return c.removeGrayLeftovers(ctx, d)
	}

	saved, err := grayapi.ParseStrategy(savedValue)
	switch {
	case err != nil:
		return c.release(ctx, d, rsList, defaultStrategy(), nil, corev1.EventTypeWarning,
			fmt.Sprintf("%v: restored the default strategy %s", err, describeStrategy(defaultStrategy())))
	case !annotated:
		metrics.ForgetGray(key)
		return c.release(ctx, d, rsList, saved, nil, corev1.EventTypeNormal,
			fmt.Sprintf("%s was removed: restored strategy %s, the rollout completes under it", grayapi.PercentAnnotation, savedValue))
	case saved.Type != appsv1.RollingUpdateDeploymentStrategyType:
		return c.release(ctx, d, rsList, saved, nil, corev1.EventTypeNormal,
			fmt.Sprintf("strategy %s replaces all pods at once, so it has no gray rollout: restored it", savedValue))
	}
	if froze, err := c.freezeFirst(ctx, key, d, rsList); froze || err != nil {
		return err
	}
	if !d.Spec.Paused || d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
		return c.retakeOver(ctx, d)
	}

	view := &View{c: c, strategy: withStrategyDefaults(saved), releaseOnComplete: c.takeover != grayapi.TakeoverEager}
	end, err := c.host.RunGray(ctx, key, d, rsList, view)
	if err != nil || end == nil {
		return err
	}
	if end.Status.Phase != grayapi.PhaseComplete || c.takeover == grayapi.TakeoverEager {
		return nil
	}
	st := end.Status
	st.TakenOver = false
	return c.release(ctx, end.Server, end.ReplicaSets, saved, &st, corev1.EventTypeNormal,
		fmt.Sprintf("revision %d complete: restored strategy %s", st.Revision, savedValue))
}

// freezeFirst freezes the ReplicaSets of a Deployment about to be taken over, or taken over,
// and reports whether it had to: the sync then stops, and the ReplicaSet events of the freeze
// sync the Deployment again, so that no write of the gray rollout goes before the cache shows
// every ReplicaSet frozen.
func (c *Controller) freezeFirst(ctx context.Context, key string, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) (bool, error) {
	froze := false
	for _, rs := range rsList {
		froze = froze || (!isFrozen(rs) && rs.DeletionTimestamp == nil)
	}
	if !froze {
		return false, nil
	}
	// A Deployment just released still looks taken over in a cache that is behind: freezing
	// its ReplicaSets again would refuse the built-in controller for nothing.
	if fresh, err := c.host.LiveFresh(ctx, key, d, rsList); !fresh {
		return true, err
	}
	return true, c.freezeReplicaSets(ctx, d, rsList)
}

// handBack undoes what only a takeover means on a Deployment that is not taken over: frozen
// ReplicaSets (a release that stopped half-way) and kubegray.io/paused (a copy that the built-in
// controller put on a ReplicaSet and `kubectl rollout undo` brought back: nobody's pause).
func (c *Controller) handBack(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) error {
	if err := c.thawReplicaSets(ctx, d, rsList); err != nil {
		return err
	}
	if !userPaused(d) {
		return nil
	}
	patch := map[string]any{"metadata": map[string]any{
		"resourceVersion": d.ResourceVersion,
		"annotations":     map[string]any{grayapi.PausedAnnotation: nil},
	}}
	if _, err := c.patchDeployment(ctx, d, patch); err != nil {
		return fmt.Errorf("deployment %s/%s: removing a %s that no takeover set: %w", d.Namespace, d.Name, grayapi.PausedAnnotation, err)
	}
	return nil
}

// removeGrayLeftovers drops our status annotation and GrayHeld condition from a Deployment
// that is no longer gray, without touching the rest of its status.
func (c *Controller) removeGrayLeftovers(ctx context.Context, d *appsv1.Deployment) error {
	if !gray.HasLeftovers(d) {
		return nil
	}
	cleaned := d.DeepCopy()
	delete(cleaned.Annotations, grayapi.StatusAnnotation)
	for _, c := range grayapi.Conditions {
		deployutil.RemoveDeploymentCondition(&cleaned.Status, c)
	}
	if _, err := c.patchGrayStatus(ctx, cleaned); err != nil {
		return fmt.Errorf("deployment %s/%s: removing the gray status: %w", d.Namespace, d.Name, err)
	}
	return nil
}

// trackNotTakenOver records, for an annotated Deployment that is not taken over, the revision
// the built-in controller completed: it becomes the stable revision of the next gray rollout
// (the one `kubectl gray undo` returns to). Nothing is written while it is rolling.
func (c *Controller) trackNotTakenOver(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) error {
	newRS := deployutil.FindNewReplicaSet(d, rsList)
	if dropped, err := c.dropRequestOfReleased(ctx, d, newRS); dropped || err != nil {
		return err
	}
	if newRS == nil || !deployutil.DeploymentComplete(d, &d.Status) {
		return nil
	}
	rev, err := deployutil.Revision(newRS)
	if err != nil || rev == 0 {
		return nil
	}
	// The durable record holds for a rollout the built-in controller completed
	// too: a later rollback to any of these ReplicaSets keeps the opt-in and finds the stable one.
	if err := c.host.MarkStable(ctx, d, newRS, rsList); err != nil {
		return err
	}
	if err := c.host.MirrorRecord(ctx, d, rsList); err != nil {
		return err
	}
	prev, _, _ := gray.StoredStatus(d)
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
	st.Mode, st.Takeover, st.ObservedGeneration = grayapi.ModeAlongside, c.takeover, d.Generation
	st.Serves = gray.ServesReleased(d)
	value, err := grayapi.FormatStatus(st)
	if err != nil {
		return fmt.Errorf("deployment %s/%s: %w", d.Namespace, d.Name, err)
	}
	updated := d.DeepCopy()
	updated.Annotations[grayapi.StatusAnnotation] = value
	gray.SetConditions(&updated.Status, st, replicas, int(step), metav1.NewTime(c.host.Now()))
	if grayPartUnchanged(d, updated) {
		return nil
	}
	if _, err := c.patchGrayStatus(ctx, updated); err != nil {
		return fmt.Errorf("deployment %s/%s: recording completed revision %d: %w", d.Namespace, d.Name, rev, err)
	}
	return nil
}

// dropRequestOfReleased removes a kubegray.io/resume request from d, which no gray rollout holds,
// with the GrayResumeIgnored Warning that says so (gray.ReleasedIgnores); the removal is a new
// generation, whose sync records the status. dropped: there was one.
func (c *Controller) dropRequestOfReleased(ctx context.Context, d *appsv1.Deployment, newRS *appsv1.ReplicaSet) (dropped bool, err error) {
	var rev int64
	if newRS != nil {
		rev, _ = deployutil.Revision(newRS)
	}
	warning := gray.ReleasedIgnores(d, rev)
	if warning == "" {
		return false, nil
	}
	patch := map[string]any{"metadata": map[string]any{
		"resourceVersion": d.ResourceVersion,
		"annotations":     map[string]any{grayapi.ResumeAnnotation: nil},
	}}
	if _, err := c.patchDeployment(ctx, d, patch); err != nil {
		return true, fmt.Errorf("deployment %s/%s: dropping %s, which no gray rollout serves: %w", d.Namespace, d.Name, grayapi.ResumeAnnotation, err)
	}
	c.recorder.Eventf(d, corev1.EventTypeWarning, grayapi.ReasonGrayResumeIgnored, "%s", warning)
	return true, nil
}
