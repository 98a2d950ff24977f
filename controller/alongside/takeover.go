package alongside

// Taking a Deployment over for alongside mode and handing it back: the eager takeover, the
// repair of a takeover someone undid, and every release (alongside when a rollout ends or
// leaves gray, instead mode when it meets a Deployment left taken over). docs/design.md:
// alongside mode.

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/klog/v2"

	"github.com/kubegray/kubectl-gray/controller/gray"
	"github.com/kubegray/kubectl-gray/pkg/deployutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// ReleaseTakenOver releases, in instead mode, a Deployment taken over for alongside mode (see
// the file comment): one patch restores the saved strategy (the API defaults, with a Warning
// naming the value, when it is unreadable), unpauses and drops kubegray.io/strategy. A gray
// Deployment that our status holds at the revision in flight stays paused, its hold intact;
// its status is kept, no longer marked taken over, so the gray sync that runs on the event of
// this patch goes on from the same step. Any other Deployment loses our status with the
// takeover, and the upstream sync takes it from there.
func (c *Controller) ReleaseTakenOver(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) error {
	value := d.Annotations[grayapi.StrategyAnnotation]
	r := takeoverRelease{replicaSets: rsList, eventType: corev1.EventTypeNormal, title: "Released from the alongside takeover"}
	restored := "restored strategy " + value
	strategy, err := grayapi.ParseStrategy(value)
	if err != nil {
		strategy = defaultStrategy()
		r.eventType = corev1.EventTypeWarning
		restored = fmt.Sprintf("%v: restored the default strategy %s", err, describeStrategy(strategy))
	}
	r.strategy = strategy

	_, annotated := d.Annotations[grayapi.PercentAnnotation]
	st, _, _ := gray.StoredStatus(d)
	// A readable status of a Deployment that stays gray goes on; an Invalid one without a
	// revision too, so that the bad percent is not reported a second time.
	if annotated && strategy.Type == appsv1.RollingUpdateDeploymentStrategyType && st.Phase != "" {
		_, oldRSs := deployutil.FindOldReplicaSets(d, rsList)
		r.held = st.HeldAt != nil && st.Revision == gray.RevisionInFlight(deployutil.FindNewReplicaSet(d, rsList), oldRSs)
		if !r.held {
			st.HeldAt = nil
		}
		st.Mode, st.TakenOver = grayapi.ModeInstead, false
		r.status = &st
	}
	r.message = restored + ", unpaused"
	if r.held {
		r.message = fmt.Sprintf("%s, kept paused: the gray rollout holds revision %d at %d%%", restored, st.Revision, st.Percent)
	}
	return c.releaseTakeover(ctx, d, r)
}

// takeOver is the eager takeover: paused, Recreate and the strategy saved, in one patch.
func (c *Controller) takeOver(ctx context.Context, d *appsv1.Deployment) error {
	added, err := grayapi.TakeoverAnnotations(d)
	if err != nil {
		return fmt.Errorf("deployment %s/%s: %w", d.Namespace, d.Name, err)
	}
	value := added[grayapi.StrategyAnnotation]
	annotations := map[string]any{}
	for key, v := range added {
		annotations[key] = v
	}
	patch := map[string]any{
		"metadata": map[string]any{"resourceVersion": d.ResourceVersion, "annotations": annotations},
		"spec":     takenOverSpec(),
	}
	if _, err := c.patchDeployment(ctx, d, patch); err != nil {
		return fmt.Errorf("deployment %s/%s: taking it over (saving strategy %s): %w", d.Namespace, d.Name, value, err)
	}
	c.recorder.Eventf(d, corev1.EventTypeNormal, grayapi.ReasonGrayTakeover,
		"Taken over for gray rollouts: paused with strategy Recreate, strategy %s saved in %s", value, grayapi.StrategyAnnotation)
	klog.FromContext(ctx).V(2).Info("Took deployment over", "deployment", klog.KObj(d), "strategy", value)
	return nil
}

// retakeOver pauses a taken-over Deployment again and puts it back on Recreate after someone
// unpaused it or changed its strategy (possible only without the guard policy): left so, the
// built-in controller would roll it out with no hold. A Deployment found on RollingUpdate has
// its strategy saved afresh: either someone changed it behind the guard, or the annotation is
// a copy that `kubectl rollout undo` brought back from a ReplicaSet of an earlier rollout and
// the strategy the user set since then is the one to restore.
func (c *Controller) retakeOver(ctx context.Context, d *appsv1.Deployment) error {
	annotations := map[string]any{}
	saved := d.Annotations[grayapi.StrategyAnnotation]
	if d.Spec.Strategy.Type == appsv1.RollingUpdateDeploymentStrategyType {
		value, err := grayapi.FormatStrategy(d.Spec.Strategy)
		if err != nil {
			return fmt.Errorf("deployment %s/%s: %w", d.Namespace, d.Name, err)
		}
		saved = value
		annotations[grayapi.StrategyAnnotation] = value
	}
	// Unpausing a Deployment its user paused is `kubectl rollout resume` (the guard policy lets
	// it through): the user's pause ends, the takeover's comes back.
	resumedByUser := !d.Spec.Paused && userPaused(d)
	if resumedByUser {
		annotations[grayapi.PausedAnnotation] = nil
	}
	patch := map[string]any{
		"metadata": map[string]any{"resourceVersion": d.ResourceVersion, "annotations": annotations},
		"spec":     takenOverSpec(),
	}
	if _, err := c.patchDeployment(ctx, d, patch); err != nil {
		return fmt.Errorf("deployment %s/%s: pausing it again for its gray rollout: %w", d.Namespace, d.Name, err)
	}
	if resumedByUser && d.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType {
		c.recorder.Eventf(d, corev1.EventTypeNormal, grayapi.ReasonGrayResumed,
			"Resumed by its user: the gray rollout goes on (gray-controller keeps it paused on Recreate while it runs)")
		return nil
	}
	if d.Spec.Paused {
		// Only the strategy changed, as an apply of a manifest that spells it out does: it is
		// the one to restore, and the Deployment stayed paused, its sizes frozen.
		c.recorder.Eventf(d, corev1.EventTypeNormal, grayapi.ReasonGrayTakeover,
			"Strategy %s set while taken over: saved in %s, restored when the rollout ends", saved, grayapi.StrategyAnnotation)
		return nil
	}
	c.recorder.Eventf(d, corev1.EventTypeWarning, grayapi.ReasonGrayTakeover,
		"Paused again with strategy Recreate (saved strategy %s): the gray rollout runs it until it ends; use kubectl gray resume, kubectl gray undo, or remove %s to release it",
		saved, grayapi.PercentAnnotation)
	return nil
}

// takenOverSpec is the spec part of a takeover patch: paused, grayapi.TakenOverStrategy, and
// rollingUpdate removed (Recreate forbids it, and a merge patch keeps what it does not name).
func takenOverSpec() map[string]any {
	return map[string]any{
		"paused":   true,
		"strategy": map[string]any{"type": string(grayapi.TakenOverStrategy().Type), "rollingUpdate": nil},
	}
}

// release hands d back to the built-in controller: releaseTakeover with our hold gone and the
// event saying who runs the Deployment now.
func (c *Controller) release(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet, strategy appsv1.DeploymentStrategy,
	st *grayapi.Status, eventType, message string) error {
	return c.releaseTakeover(ctx, d, takeoverRelease{
		replicaSets: rsList, strategy: strategy, status: st, eventType: eventType,
		title: "Released to the built-in deployment controller", message: message,
	})
}

// takeoverRelease is what releasing a taken-over Deployment writes and reports.
type takeoverRelease struct {
	// replicaSets are the Deployment's ReplicaSets, thawed before the release.
	replicaSets []*appsv1.ReplicaSet
	// strategy is restored in place of Recreate.
	strategy appsv1.DeploymentStrategy
	// status replaces kubegray.io/status; nil drops it, and the GrayHeld condition after it.
	status *grayapi.Status
	// held keeps spec.paused and any resume request: in instead mode a gray hold is the pause
	// itself, and the request is for that hold. Otherwise the Deployment is unpaused and the
	// request, left with no hold to leave, is dropped.
	held bool
	// eventType, title and message make the GrayRelease event "<title>: <message>".
	eventType, title, message string
}

// releaseTakeover releases a taken-over Deployment in one patch: strategy restored, unpaused
// (unless r.held), kubegray.io/strategy dropped and kubegray.io/status set to r.status. Both
// modes release through it: alongside mode when a rollout ends, instead mode as soon as it
// meets a taken-over Deployment (ReleaseTakenOver).
func (c *Controller) releaseTakeover(ctx context.Context, d *appsv1.Deployment, r takeoverRelease) error {
	// The sizes are handed back first: once released, the built-in controller must not be
	// refused. The built-in controller cannot roll the Deployment in between (still paused).
	if err := c.thawReplicaSets(ctx, d, r.replicaSets); err != nil {
		return err
	}
	var rollingUpdate any
	if r.strategy.RollingUpdate != nil {
		rollingUpdate = r.strategy.RollingUpdate
	}
	annotations := map[string]any{
		grayapi.StrategyAnnotation: nil,
		grayapi.StatusAnnotation:   nil,
		grayapi.PausedAnnotation:   nil, // handed back as spec.paused below
	}
	paused := r.held || userPaused(d)
	if !r.held {
		annotations[grayapi.ResumeAnnotation] = nil
	}
	if r.status != nil {
		value, err := grayapi.FormatStatus(*r.status)
		if err != nil {
			return fmt.Errorf("deployment %s/%s: %w", d.Namespace, d.Name, err)
		}
		annotations[grayapi.StatusAnnotation] = value
	}
	patch := map[string]any{
		"metadata": map[string]any{"resourceVersion": d.ResourceVersion, "annotations": annotations},
		"spec": map[string]any{
			"paused":   paused,
			"strategy": map[string]any{"type": string(r.strategy.Type), "rollingUpdate": rollingUpdate},
		},
	}
	written, err := c.patchDeployment(ctx, d, patch)
	if err != nil {
		return fmt.Errorf("deployment %s/%s: releasing it (%s): %w", d.Namespace, d.Name, r.message, err)
	}
	c.recorder.Eventf(d, r.eventType, grayapi.ReasonGrayRelease, "%s: %s", r.title, r.message)
	klog.FromContext(ctx).V(2).Info("Released deployment", "deployment", klog.KObj(d), "reason", r.message, "paused", paused)
	if r.status != nil {
		return nil
	}
	return c.removeGrayLeftovers(ctx, written)
}

// defaultStrategy is what the API server defaults a Deployment's strategy to; a Deployment
// whose saved strategy is lost or unreadable goes back to it.
func defaultStrategy() appsv1.DeploymentStrategy {
	quarter := intstr.FromString("25%")
	return appsv1.DeploymentStrategy{
		Type:          appsv1.RollingUpdateDeploymentStrategyType,
		RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &quarter, MaxUnavailable: &quarter},
	}
}

// withStrategyDefaults fills in what the API server would for a RollingUpdate strategy saved
// without some of its fields ("RollingUpdate" alone means 25%/25%).
func withStrategyDefaults(s appsv1.DeploymentStrategy) appsv1.DeploymentStrategy {
	s = *s.DeepCopy()
	if s.Type != appsv1.RollingUpdateDeploymentStrategyType {
		return s
	}
	def := defaultStrategy().RollingUpdate
	if s.RollingUpdate == nil {
		s.RollingUpdate = &appsv1.RollingUpdateDeployment{}
	}
	if s.RollingUpdate.MaxSurge == nil {
		s.RollingUpdate.MaxSurge = def.MaxSurge
	}
	if s.RollingUpdate.MaxUnavailable == nil {
		s.RollingUpdate.MaxUnavailable = def.MaxUnavailable
	}
	return s
}

// describeStrategy renders a strategy in the kubegray.io/strategy format for messages.
func describeStrategy(s appsv1.DeploymentStrategy) string {
	value, err := grayapi.FormatStrategy(s)
	if err != nil {
		return string(s.Type)
	}
	return value
}
