package deployment

// Alongside mode (DESIGN.md §3): the built-in deployment controller keeps running, so only
// Deployments carrying kubegray.io/percent, or taken over, are ours; every other Deployment is
// never written, not even its ReplicaSets' owner references.
//
// While a gray rollout is in flight the Deployment is taken over: spec.paused=true and
// strategy Recreate on the server (the built-in controller then creates and scales no
// ReplicaSet, upstream spec §5.3/§5.4), the original strategy saved in kubegray.io/strategy.
// The admission policy or `kubectl gray set --image` take over in the write that changes the
// template; with --takeover=eager we do it as soon as a Deployment is annotated.
//
// A taken-over Deployment runs the same gray sync as instead mode (gray.go), through a view:
// the Deployment it sees has the saved strategy, and spec.paused is our hold (heldAt in
// kubegray.io/status), because the real spec.paused is true the whole time. Holding and
// resuming therefore only write kubegray.io/status. The built-in controller keeps writing the
// Deployment status, so ours is limited to kubegray.io/status, the mirrored revision and the
// GrayHeld condition, sent as a strategic merge patch of the status subresource (conditions
// merge by type) rather than an UpdateStatus that would carry a copy of its fields.
//
// The built-in controller's paused sync still resizes a ReplicaSet in one case (upstream spec
// §5.3 step 1): when at most one ReplicaSet is active (spec > 0) and it is not at
// spec.replicas, it scales that one (or, with none active, the new one) to spec.replicas.
// With two or more active it does nothing on Recreate. A plain gray step can leave such a
// lone ReplicaSet: with maxSurge 0 the old ReplicaSet shrinks 10→9 before the new one has a
// pod, and at the end of a rollout the last old pod goes while the new ReplicaSet is at 9 of
// 10; the built-in controller then writes it back and the two controllers fight.
// So the writes of each step in this mode go through rollout.GrayAlongsideWrites: the
// ReplicaSets that grow are written before those that shrink, a step that empties the last
// old ReplicaSets keeps one of their pods when it removes several, and a step that would
// still leave a lone ReplicaSet first grows the ReplicaSet the rollout grows next (the new
// one) by one pod, in the same sync and before the shrink. That last case deliberately
// exceeds maxSurge by one pod between the two writes (with maxSurge 0 and R 10: old 10 and
// new 1, then old 9): without it a maxSurge-0 rollout cannot move without handing the
// built-in controller a lone ReplicaSet, and one extra pod is the smallest deviation that
// keeps both maxUnavailable and the gray target. Instead mode has no other controller and
// keeps upstream's exact numbers.
//
// Release is one patch that restores the saved strategy, unpauses and drops
// kubegray.io/strategy: when the rollout completes (a rollback completes too; with eager
// takeover the Deployment stays taken over while annotated), when kubegray.io/percent is
// removed, or when the saved strategy is Recreate (no gray rollout to run). Every sync also
// repairs: a taken-over Deployment that was unpaused or had its strategy edited behind the
// guard policy is taken over again, and one whose kubegray.io/strategy was lost or is
// unreadable is released to RollingUpdate with the API defaults, so no Deployment is ever
// left on Recreate. Instead mode releases a taken-over Deployment it meets through the same
// patch (releaseTakenOver in gray.go): there nothing else would ever take it off Recreate.

import (
	"context"
	"encoding/json"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/klog/v2"

	"github.com/kubegray/kubectl-gray/controller/metrics"
	"github.com/kubegray/kubectl-gray/pkg/deployutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// Takeover is how alongside mode takes a gray Deployment over.
type Takeover string

const (
	// TakeoverAdmission leaves the takeover to the MutatingAdmissionPolicy or to
	// `kubectl gray set --image`, in the write that changes the template (Kubernetes ≥ 1.36).
	TakeoverAdmission Takeover = "admission"
	// TakeoverEager takes a Deployment over as soon as it is annotated and keeps it taken over
	// while annotated, for clusters without the admission policies.
	TakeoverEager Takeover = "eager"
)

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

// isAlongsideManaged reports whether an alongside controller has anything to do with d: it is
// annotated, taken over, or carries gray leftovers (our status or GrayHeld condition) to clean.
func isAlongsideManaged(d *appsv1.Deployment) bool {
	_, annotated := d.Annotations[grayapi.PercentAnnotation]
	_, taken := d.Annotations[grayapi.StrategyAnnotation]
	return annotated || taken || hasGrayLeftovers(d)
}

// alongsideView is how the gray sync sees a taken-over Deployment: with the saved strategy,
// and paused exactly while we hold.
type alongsideView struct {
	strategy appsv1.DeploymentStrategy
	paused   bool
	// userPaused: the Deployment's user paused it (grayapi.PausedAnnotation); it stays paused
	// in the view whatever our hold does.
	userPaused bool
	// releaseOnComplete: a Complete rollout is released at once, and the release patch
	// carries the Complete status, so the sync does not write it first (a Complete status on a
	// Deployment still paused on Recreate would be a lie to whoever waits for it).
	releaseOnComplete bool
}

// apply sets the view on d, the hold read from d's kubegray.io/status.
func (v *alongsideView) apply(ctx context.Context, d *appsv1.Deployment) {
	st, _ := readGrayStatus(ctx, d)
	v.userPaused = userPaused(d)
	v.paused = st.HeldAt != nil || v.userPaused
	v.reapply(d)
}

// userPaused reports whether a taken-over Deployment carries its user's own pause.
func userPaused(d *appsv1.Deployment) bool {
	_, paused := d.Annotations[grayapi.PausedAnnotation]
	return paused
}

// reapply sets the view on d again after d's spec was replaced by a written Deployment.
func (v *alongsideView) reapply(d *appsv1.Deployment) {
	d.Spec.Strategy = *v.strategy.DeepCopy()
	d.Spec.Paused = v.paused
}

// syncAlongside is the sync of a Deployment an alongside controller manages (see the file
// comment for the decisions).
func (dc *DeploymentController) syncAlongside(ctx context.Context, key string, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) error {
	savedValue, taken := d.Annotations[grayapi.StrategyAnnotation]
	_, annotated := d.Annotations[grayapi.PercentAnnotation]
	prev, _ := readGrayStatus(ctx, d)
	if !annotated {
		// No longer gray: a rollback must not bring the opt-in back (gray_record.go).
		if err := dc.mirrorPercent(ctx, d, rsList); err != nil {
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
			return dc.release(ctx, d, strategy, nil, corev1.EventTypeWarning,
				fmt.Sprintf("%s was removed from the taken-over Deployment: restored strategy %s", grayapi.StrategyAnnotation, describeStrategy(strategy)))
		case annotated && dc.takeover == TakeoverEager && d.Spec.Strategy.Type == appsv1.RollingUpdateDeploymentStrategyType:
			return dc.takeOver(ctx, d)
		case annotated:
			return dc.trackNotTakenOver(ctx, d, rsList)
		}
		metrics.ForgetGray(key)
		return dc.removeGrayLeftovers(ctx, d)
	}

	saved, err := grayapi.ParseStrategy(savedValue)
	switch {
	case err != nil:
		return dc.release(ctx, d, defaultStrategy(), nil, corev1.EventTypeWarning,
			fmt.Sprintf("%v: restored the default strategy %s", err, describeStrategy(defaultStrategy())))
	case !annotated:
		metrics.ForgetGray(key)
		return dc.release(ctx, d, saved, nil, corev1.EventTypeNormal,
			fmt.Sprintf("%s was removed: restored strategy %s, the rollout completes under it", grayapi.PercentAnnotation, savedValue))
	case saved.Type != appsv1.RollingUpdateDeploymentStrategyType:
		return dc.release(ctx, d, saved, nil, corev1.EventTypeNormal,
			fmt.Sprintf("strategy %s replaces all pods at once, so it has no gray rollout: restored it", savedValue))
	case !d.Spec.Paused || d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType:
		return dc.retakeOver(ctx, d)
	}

	view := &alongsideView{strategy: withStrategyDefaults(saved), releaseOnComplete: dc.takeover != TakeoverEager}
	g, err := dc.runGray(ctx, key, d, rsList, view)
	if err != nil || g == nil {
		return err
	}
	if g.st.Phase != grayapi.PhaseComplete || dc.takeover == TakeoverEager {
		return nil
	}
	st := g.st
	st.TakenOver = false
	return dc.release(ctx, g.server, saved, &st, corev1.EventTypeNormal,
		fmt.Sprintf("revision %d complete: restored strategy %s", st.Revision, savedValue))
}

// describeStrategy renders a strategy in the kubegray.io/strategy format for messages.
func describeStrategy(s appsv1.DeploymentStrategy) string {
	value, err := grayapi.FormatStrategy(s)
	if err != nil {
		return string(s.Type)
	}
	return value
}

// takeOver is the eager takeover: paused, Recreate and the strategy saved, in one patch.
func (dc *DeploymentController) takeOver(ctx context.Context, d *appsv1.Deployment) error {
	value, err := grayapi.FormatStrategy(d.Spec.Strategy)
	if err != nil {
		return fmt.Errorf("deployment %s/%s: %w", d.Namespace, d.Name, err)
	}
	annotations := map[string]any{grayapi.StrategyAnnotation: value}
	if d.Spec.Paused {
		annotations[grayapi.PausedAnnotation] = "true" // the user's pause, handed back at release
	}
	patch := map[string]any{
		"metadata": map[string]any{"resourceVersion": d.ResourceVersion, "annotations": annotations},
		"spec":     takenOverSpec(),
	}
	if _, err := dc.patchDeployment(ctx, d, patch); err != nil {
		return fmt.Errorf("deployment %s/%s: taking it over (saving strategy %s): %w", d.Namespace, d.Name, value, err)
	}
	dc.eventRecorder.Eventf(d, corev1.EventTypeNormal, grayapi.ReasonGrayTakeover,
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
func (dc *DeploymentController) retakeOver(ctx context.Context, d *appsv1.Deployment) error {
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
	if _, err := dc.patchDeployment(ctx, d, patch); err != nil {
		return fmt.Errorf("deployment %s/%s: pausing it again for its gray rollout: %w", d.Namespace, d.Name, err)
	}
	if resumedByUser && d.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType {
		dc.eventRecorder.Eventf(d, corev1.EventTypeNormal, grayapi.ReasonGrayResumed,
			"Resumed by its user: the gray rollout goes on (gray-controller keeps it paused on Recreate while it runs)")
		return nil
	}
	dc.eventRecorder.Eventf(d, corev1.EventTypeWarning, grayapi.ReasonGrayTakeover,
		"Paused again with strategy Recreate (saved strategy %s): the gray rollout runs it until it ends; use kubectl gray resume, kubectl gray undo, or remove %s to release it",
		saved, grayapi.PercentAnnotation)
	return nil
}

// takenOverSpec is the spec part of a takeover patch (rollingUpdate removed: Recreate forbids it).
func takenOverSpec() map[string]any {
	return map[string]any{
		"paused":   true,
		"strategy": map[string]any{"type": string(appsv1.RecreateDeploymentStrategyType), "rollingUpdate": nil},
	}
}

// release hands d back to the built-in controller: releaseTakeover with our hold gone and the
// event saying who runs the Deployment now.
func (dc *DeploymentController) release(ctx context.Context, d *appsv1.Deployment, strategy appsv1.DeploymentStrategy, st *grayapi.Status, eventType, message string) error {
	return dc.releaseTakeover(ctx, d, takeoverRelease{
		strategy: strategy, status: st, eventType: eventType,
		title: "Released to the built-in deployment controller", message: message,
	})
}

// takeoverRelease is what releasing a taken-over Deployment writes and reports.
type takeoverRelease struct {
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
// meets a taken-over Deployment (gray.go).
func (dc *DeploymentController) releaseTakeover(ctx context.Context, d *appsv1.Deployment, r takeoverRelease) error {
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
	written, err := dc.patchDeployment(ctx, d, patch)
	if err != nil {
		return fmt.Errorf("deployment %s/%s: releasing it (%s): %w", d.Namespace, d.Name, r.message, err)
	}
	dc.eventRecorder.Eventf(d, r.eventType, grayapi.ReasonGrayRelease, "%s: %s", r.title, r.message)
	klog.FromContext(ctx).V(2).Info("Released deployment", "deployment", klog.KObj(d), "reason", r.message, "paused", paused)
	if r.status != nil {
		return nil
	}
	return dc.removeGrayLeftovers(ctx, written)
}

// removeGrayLeftovers drops our status annotation and GrayHeld condition from a Deployment
// that is no longer gray, without touching the rest of its status.
func (dc *DeploymentController) removeGrayLeftovers(ctx context.Context, d *appsv1.Deployment) error {
	if !hasGrayLeftovers(d) {
		return nil
	}
	cleaned := d.DeepCopy()
	delete(cleaned.Annotations, grayapi.StatusAnnotation)
	deployutil.RemoveDeploymentCondition(&cleaned.Status, grayapi.ConditionGrayHeld)
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
	if err := dc.mirrorPercent(ctx, d, rsList); err != nil {
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
	st := grayapi.Status{
		Mode: grayapi.ModeAlongside, Revision: rev, StableRevision: rev, Step: step, Percent: grayapi.FullPercent, Target: replicas,
		Phase: grayapi.PhaseComplete, Message: fmt.Sprintf("all %d replicas run revision %d", replicas, rev), ObservedGeneration: d.Generation,
	}
	value, err := grayapi.FormatStatus(st)
	if err != nil {
		return fmt.Errorf("deployment %s/%s: %w", d.Namespace, d.Name, err)
	}
	updated := d.DeepCopy()
	updated.Annotations[grayapi.StatusAnnotation] = value
	setGrayHeldCondition(&updated.Status, st, replicas, dc.metaNow())
	if alongsideStatusUnchanged(d, updated) {
		return nil
	}
	if _, err := dc.patchGrayStatus(ctx, updated); err != nil {
		return fmt.Errorf("deployment %s/%s: recording completed revision %d: %w", d.Namespace, d.Name, rev, err)
	}
	return nil
}

// updateAlongside is updateDeployment in alongside mode: the hold lives in kubegray.io/status
// only (the Deployment stays paused on the server), so taking or leaving it writes the status;
// a consumed resume request goes in the same main-resource patch, so that the step it asked
// for and its removal land together.
func (g *graySync) updateAlongside(ctx context.Context, paused bool) error {
	d := g.d
	g.view.paused = paused || g.view.userPaused
	d.Spec.Paused = g.view.paused
	updated := d.DeepCopy()
	if err := g.setStatusAnnotation(updated); err != nil {
		return err
	}
	var written *appsv1.Deployment
	var err error
	if g.removeResume {
		written, err = g.dc.patchDeployment(ctx, d, map[string]any{
			"metadata": map[string]any{
				"resourceVersion": d.ResourceVersion,
				"annotations": map[string]any{
					grayapi.StatusAnnotation: updated.Annotations[grayapi.StatusAnnotation],
					grayapi.ResumeAnnotation: nil,
				},
			},
		})
	} else {
		written, err = g.dc.patchGrayStatus(ctx, updated)
	}
	if err != nil {
		return fmt.Errorf("deployment %s/%s: recording the gray hold (held=%t): %w", d.Namespace, d.Name, paused, err)
	}
	g.adopt(written)
	g.removeResume = false
	g.stored, g.hasStored = g.st, true
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
	var condition any = map[string]any{"type": string(grayapi.ConditionGrayHeld), "$patch": "delete"}
	if c := deployutil.GetDeploymentCondition(updated.Status, grayapi.ConditionGrayHeld); c != nil {
		condition = c
	}
	// The resourceVersion makes the patch conditional on the Deployment this sync read: a
	// percent or resume written in between fails it, and the next sync decides again.
	body, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"annotations": annotations, "resourceVersion": updated.ResourceVersion},
		"status":   map[string]any{"conditions": []any{condition}},
	})
	if err != nil {
		return nil, err
	}
	return dc.client.AppsV1().Deployments(updated.Namespace).Patch(ctx, updated.Name, types.StrategicMergePatchType, body,
		metav1.PatchOptions{FieldManager: dc.fieldManager}, "status")
}

// alongsideStatusUnchanged reports whether patchGrayStatus(updated) would change nothing on
// server. Condition timestamps are not compared: only a change of the condition itself is
// worth a write.
func alongsideStatusUnchanged(server, updated *appsv1.Deployment) bool {
	if server.Annotations[grayapi.StatusAnnotation] != updated.Annotations[grayapi.StatusAnnotation] ||
		server.Annotations[deployutil.RevisionAnnotation] != updated.Annotations[deployutil.RevisionAnnotation] {
		return false
	}
	a := deployutil.GetDeploymentCondition(server.Status, grayapi.ConditionGrayHeld)
	b := deployutil.GetDeploymentCondition(updated.Status, grayapi.ConditionGrayHeld)
	if a == nil || b == nil {
		return a == b
	}
	return a.Status == b.Status && a.Reason == b.Reason && a.Message == b.Message
}
