package deployment

// Gray rollouts in instead mode (DESIGN.md §4–§5, /work/briefs/gray-design.md).
//
// A Deployment carrying kubegray.io/percent with the RollingUpdate strategy takes syncGray
// instead of upstream's paused, rollback, scaling and rolling dispatch. Everything the gray
// path knows lives on the Deployment: the hold points (kubegray.io/percent), the one-shot
// resume request (kubegray.io/resume), our own record of the rollout (kubegray.io/status) and
// spec.paused. "Our hold" is spec.paused with heldAt recorded for the revision in flight; a
// pause without heldAt is the user's and is left alone.
//
// Every size decision is pkg/rollout arithmetic (GrayTarget, PlanGrayStep, GrayScaleSizes,
// PlanGrayRestore); this file reads the objects, orders the ReplicaSets and writes. The order
// of writes is what keeps the invariant "the new ReplicaSet never exceeds the target recorded
// on the Deployment": the status (or the resume Update) that raises the target is written
// before any ReplicaSet write that uses it, and the pause is written in the same sync in
// which the new ReplicaSet reaches its target.
//
// A Deployment taken over for alongside mode (kubegray.io/strategy set: by `kubectl gray set
// --takeover=always`, an older plugin, or a cluster that ran the controller alongside before)
// is released before anything else, in the one patch alongside mode releases with
// (releaseTakenOver): nothing in instead mode would ever take it off Recreate. Only our hold
// survives the release, as spec.paused, since in this mode that is what a hold is.

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/kubegray/kubectl-gray/controller/metrics"
	"github.com/kubegray/kubectl-gray/pkg/deployutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
	"github.com/kubegray/kubectl-gray/pkg/rollout"
)

// isGray reports whether d takes the gray path.
func isGray(d *appsv1.Deployment) bool {
	_, annotated := d.Annotations[grayapi.PercentAnnotation]
	return annotated && d.Spec.Strategy.Type == appsv1.RollingUpdateDeploymentStrategyType
}

// hasGrayLeftovers reports whether a Deployment that is not gray (any more) still carries our
// status annotation or GrayHeld condition.
func hasGrayLeftovers(d *appsv1.Deployment) bool {
	_, annotated := d.Annotations[grayapi.StatusAnnotation]
	return annotated || deployutil.GetDeploymentCondition(d.Status, grayapi.ConditionGrayHeld) != nil
}

// readGrayStatus returns our stored status (zero when absent or unreadable) and whether it
// names a rollout. An Invalid status written before any rollout was identified has revision 0
// and names none, but its phase and message still tell which bad value was reported.
func readGrayStatus(ctx context.Context, d *appsv1.Deployment) (grayapi.Status, bool) {
	value, ok := d.Annotations[grayapi.StatusAnnotation]
	if !ok {
		return grayapi.Status{}, false
	}
	st, err := grayapi.ParseStatus(value)
	if err != nil {
		// Someone edited our annotation; the rollout is re-identified from the ReplicaSets.
		klog.FromContext(ctx).V(2).Info("Ignoring unreadable gray status", "deployment", klog.KObj(d), "err", err)
		return grayapi.Status{}, false
	}
	return st, st.Revision > 0
}

// graySync is one sync of a gray Deployment. d is our copy of the Deployment as last written
// in this sync: every write moves its resourceVersion on, so later writes of the same sync do
// not conflict with earlier ones, while a write based on a stale read still does.
type graySync struct {
	dc *DeploymentController
	d  *appsv1.Deployment
	// server is the Deployment as the server has it (as read, then as last written): d gathers
	// changes in memory (revision, conditions) that only the final status write persists.
	server *appsv1.Deployment
	key    string
	rsList []*appsv1.ReplicaSet

	points []int32
	// prev is the status read at the start; stored is the one on the server now.
	prev, stored       grayapi.Status
	hasPrev, hasStored bool
	// prevRead: a status was read at all (it may name no rollout, see readGrayStatus).
	prevRead bool
	// st is the status this sync builds.
	st grayapi.Status

	newRS  *appsv1.ReplicaSet
	oldRSs []*appsv1.ReplicaSet

	// newRollout: the revision in flight changed in this sync.
	newRollout bool
	// pausedByUs: spec.paused with heldAt recorded for the rollout in flight (or our hold
	// re-derived when the status was lost, see identify).
	pausedByUs bool
	// rederivedHold: the status was missing or untrusted and identify recognised our hold
	// from spec.paused and the new ReplicaSet standing at a hold point's target.
	rederivedHold bool
	// removeResume: kubegray.io/resume was consumed and goes with the next Update.
	removeResume bool
	// prepared: the status that covers this sync's ReplicaSet writes is on the server.
	prepared bool

	// view is set in alongside mode: d then shows the saved strategy and our hold as
	// spec.paused (see alongside.go), while the server keeps paused=true and Recreate.
	view *alongsideView
}

// syncGray reconciles a gray Deployment (see the file comment). It replaces upstream's paused,
// rollback, scaling-event and rolling dispatch of syncDeployment for d.
func (dc *DeploymentController) syncGray(ctx context.Context, key string, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) error {
	_, err := dc.runGray(ctx, key, d, rsList, nil)
	return err
}

// runGray is syncGray with, in alongside mode, the view that d is seen through. It returns the
// finished sync (nil when the cached Deployment was behind and nothing was done).
func (dc *DeploymentController) runGray(ctx context.Context, key string, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet, view *alongsideView) (*graySync, error) {
	// ReplicaSets and Deployments come through separate watches; acting on a Deployment older
	// than the ReplicaSets we wrote after it would undo our own step.
	current, err := dc.cachedDeploymentIsCurrent(ctx, d)
	if err != nil || !current {
		return nil, err
	}
	if caughtUp, missing := dc.rsExpectations.caughtUp(key, rsList); !caughtUp {
		klog.FromContext(ctx).V(4).Info("ReplicaSet cache is behind our write, waiting for it", "deployment", klog.KObj(d),
			"replicaSet", missing)
		return nil, nil
	}
	g := &graySync{dc: dc, d: d, server: d.DeepCopy(), key: key, rsList: rsList, view: view}
	if view != nil {
		view.apply(ctx, g.d)
	}
	return g, g.run(ctx)
}

// run is the body of a gray sync, in the order the file comment describes.
func (g *graySync) run(ctx context.Context) error {
	dc, d, rsList := g.dc, g.d, g.rsList
	var err error
	g.prev, g.hasPrev = readGrayStatus(ctx, d)
	g.prevRead = g.prev.Phase != ""
	g.stored, g.hasStored = g.prev, g.hasPrev

	points, err := grayapi.ParsePercent(d.Annotations[grayapi.PercentAnnotation])
	if err != nil {
		return g.freeze(ctx, err)
	}
	g.points = points

	_, g.oldRSs = deployutil.FindOldReplicaSets(d, rsList)
	if g.newRS, err = dc.getNewReplicaSetWith(ctx, d, rsList, g.oldRSs, newReplicaSetOptions{deferStatus: true}); err != nil {
		return err
	}

	// A hold recorded by a status that turns out untrusted still explains spec.paused: a sync
	// that renumbered the new ReplicaSet and stopped before its status write leaves one.
	recordedHold := g.hasPrev && g.prev.HeldAt != nil
	g.distrustCopiedStatus(ctx)
	g.identify(ctx)
	g.pausedByUs = d.Spec.Paused && (recordedHold || g.rederivedHold)
	g.retarget()
	resumed := g.takeResume(ctx)
	g.retarget()
	if err := g.settleHold(ctx, resumed); err != nil {
		return err
	}

	// The deprecated rollback annotation is served like upstream does (never while paused), but
	// only once the new template has its (capped) ReplicaSet: rollback would create it uncapped.
	// In alongside mode d is a view, which rollback's Update would write to the server.
	if g.view == nil && !g.d.Spec.Paused && g.newRS != nil && getRollbackTo(g.d) != nil {
		return dc.rollback(ctx, g.d, rsList)
	}

	scaled, err := g.reconcileReplicaSets(ctx)
	if err != nil {
		return err
	}
	if err := g.holdIfReached(ctx); err != nil {
		return err
	}
	if g.d.Spec.Paused || (!scaled && deployutil.DeploymentComplete(g.d, &g.d.Status)) {
		if err := dc.cleanupDeployment(ctx, g.oldRSs, g.d); err != nil {
			return err
		}
	}
	if err := dc.mirrorPercent(ctx, g.d, withNewRS(g.oldRSs, g.newRS)); err != nil {
		return err
	}
	return g.finish(ctx)
}

// cachedDeploymentIsCurrent compares the cached Deployment with a live read. When they differ
// the newer version is still on its way to the informer, whose event will sync the
// Deployment again, so this sync can simply stop.
func (dc *DeploymentController) cachedDeploymentIsCurrent(ctx context.Context, d *appsv1.Deployment) (bool, error) {
	live, err := dc.client.AppsV1().Deployments(d.Namespace).Get(ctx, d.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("deployment %s/%s: reading it live: %w", d.Namespace, d.Name, err)
	}
	if live.UID != d.UID || live.ResourceVersion != d.ResourceVersion {
		klog.FromContext(ctx).V(4).Info("Cached deployment is behind, waiting for its update", "deployment", klog.KObj(d),
			"cachedResourceVersion", d.ResourceVersion, "liveResourceVersion", live.ResourceVersion)
		return false, nil
	}
	return true, nil
}

// distrustCopiedStatus drops a status that names another revision than the one in flight
// although the new ReplicaSet was already in flight before this sync (its revision unchanged):
// no template change explains it, so it was copied in (`kubectl rollout undo` from a ReplicaSet
// the built-in controller annotated, a GitOps tool, a hand edit) and the rollout is
// re-identified from the ReplicaSets and the durable record instead (see gray_record.go).
func (g *graySync) distrustCopiedStatus(ctx context.Context) {
	rev := g.newRevision()
	if !g.hasPrev || g.prev.Revision == rev || g.newRS == nil {
		return
	}
	for _, rs := range g.rsList {
		if rs.UID == g.newRS.UID && revisionOf(rs) == rev {
			klog.FromContext(ctx).V(2).Info("Ignoring a gray status of another revision: the rollout in flight has not changed",
				"deployment", klog.KObj(g.d), "statusRevision", g.prev.Revision, "revision", rev)
			g.hasPrev = false
			return
		}
	}
}

// newRevision is the revision of the rollout in flight: the new ReplicaSet's, or the one
// getNewReplicaSet will give it when it is created.
func (g *graySync) newRevision() int64 {
	return revisionInFlight(g.newRS, g.oldRSs)
}

// revisionInFlight is the revision the new ReplicaSet has once getNewReplicaSet has synced
// it: one above the old ReplicaSets' (a ReplicaSet that was old and serves the template again
// is renumbered so), or its own when that is higher; with no new ReplicaSet, the one it will
// be created with. Old revisions 1 and 3 give 4 for none or a new one at 2, and 5 for one at 5.
func revisionInFlight(newRS *appsv1.ReplicaSet, oldRSs []*appsv1.ReplicaSet) int64 {
	next := deployutil.MaxRevision(oldRSs) + 1
	if newRS != nil {
		if rev, err := deployutil.Revision(newRS); err == nil && rev > next {
			return rev
		}
	}
	return next
}

// identify works out which rollout is in flight and where it stands (revision, stable
// revision, step). A revision other than the recorded one is a new rollout: it starts at the
// first hold point, unless the stable ReplicaSet is coming back (rollback: every hold point
// is skipped) or there is nothing to canary against (no old replicas).
func (g *graySync) identify(ctx context.Context) {
	rev := g.newRevision()
	stableRS := stableReplicaSet(withNewRS(g.oldRSs, g.newRS))
	if g.hasPrev && g.prev.Revision == rev {
		g.st = g.prev
		g.st.Step = rollout.GrayContinuedStep(g.points, g.prev.Step, g.prev.Percent)
		if stableRS != nil && stableRS != g.newRS {
			// The durable record wins over a status that was edited or copied in.
			g.st.StableRevision = revisionOf(stableRS)
		}
		return
	}

	g.newRollout = true
	st := grayapi.Status{Mode: grayapi.ModeInstead, Revision: rev, Phase: grayapi.PhaseProgressing}
	oldActive := deployutil.GetReplicaCountForReplicaSets(g.oldRSs) > 0
	switch {
	case stableRS != nil && stableRS == g.newRS:
		// The stable ReplicaSet serves the template again (a rollback), renumbered: its
		// revision before that is the stable one.
		st.StableRevision = deployutil.LastRevisionInHistory(g.newRS, rev)
	case stableRS != nil:
		st.StableRevision = revisionOf(stableRS)
	case g.hasPrev:
		// A rollout that completed made its revision the stable one.
		st.StableRevision = g.prev.StableRevision
		if g.prev.Phase == grayapi.PhaseComplete {
			st.StableRevision = g.prev.Revision
		}
	case g.newRS != nil && !oldActive:
		st.StableRevision = rev
	default:
		st.StableRevision = largestOldRevision(g.oldRSs)
	}

	last := int32(len(g.points))
	switch {
	case !oldActive:
		st.Step = last
	case g.isStableComingBack(st.StableRevision):
		st.Step = last
		g.dc.eventRecorder.Eventf(g.d, corev1.EventTypeNormal, grayapi.ReasonGrayRolledBack,
			"Rolling back to stable revision %d (replica set %s): hold points skipped", st.StableRevision, g.newRS.Name)
	case !g.hasPrev && g.newRS != nil:
		// Annotated in the middle of a rollout, or the status was lost: hold at the first
		// point not yet passed rather than shrink the new ReplicaSet; a Deployment paused with
		// the new ReplicaSet standing at that point's target is our hold.
		st.Step = rollout.GrayFirstStepNotPassed(*g.d.Spec.Replicas, g.points, *g.newRS.Spec.Replicas)
		if g.d.Spec.Paused && int(st.Step) < len(g.points) &&
			*g.newRS.Spec.Replicas == rollout.GrayTarget(*g.d.Spec.Replicas, g.points[st.Step]) {
			st.HeldAt = ptrTime(g.dc.metaNow())
			g.newRollout = false
			g.rederivedHold = true
		}
	}
	g.st = st
	klog.FromContext(ctx).V(2).Info("New gray rollout", "deployment", klog.KObj(g.d), "revision", rev,
		"stableRevision", st.StableRevision, "step", st.Step)
}

// isStableComingBack reports whether the new ReplicaSet is the stable one again: it carries
// the stable label, has the stable revision, or served it before a rollback re-used it.
func (g *graySync) isStableComingBack(stable int64) bool {
	if g.newRS == nil {
		return false
	}
	if g.newRS.Labels[grayapi.StableLabel] == grayapi.StableLabelValue {
		return true
	}
	if stable <= 0 {
		return false
	}
	rev, err := deployutil.Revision(g.newRS)
	return (err == nil && rev == stable) || deployutil.RevisionHistoryContains(g.newRS, stable)
}

// isRollingBack reports whether the rollout in flight is a rollback to the stable revision
// that has not completed yet (once complete, the stable revision is the new one).
func (g *graySync) isRollingBack() bool {
	if g.newRS == nil || g.st.StableRevision <= 0 || int(g.st.Step) < len(g.points) {
		return false
	}
	rev, err := deployutil.Revision(g.newRS)
	return err == nil && rev != g.st.StableRevision && deployutil.RevisionHistoryContains(g.newRS, g.st.StableRevision)
}

// revisionOf is rs's revision, 0 when unreadable.
func revisionOf(rs *appsv1.ReplicaSet) int64 {
	rev, _ := deployutil.Revision(rs)
	return rev
}

// largestOldRevision guesses the stable revision of a Deployment seen for the first time: the
// revision of the old ReplicaSet with the most replicas (the higher revision on ties), or 0.
func largestOldRevision(oldRSs []*appsv1.ReplicaSet) int64 {
	var best *appsv1.ReplicaSet
	var bestRev int64
	for _, rs := range oldRSs {
		rev, err := deployutil.Revision(rs)
		if err != nil || *rs.Spec.Replicas == 0 {
			continue
		}
		if best == nil || *rs.Spec.Replicas > *best.Spec.Replicas || (*rs.Spec.Replicas == *best.Spec.Replicas && rev > bestRev) {
			best, bestRev = rs, rev
		}
	}
	return bestRev
}

// takeResume handles kubegray.io/resume and a plain unpause of our hold (both mean "leave
// this hold") and reports whether the rollout moved on. A request that cannot be honoured is
// dropped with a Warning event naming why.
func (g *graySync) takeResume(ctx context.Context) bool {
	d := g.d
	// Held by us: heldAt recorded for this revision, whether still paused or just unpaused by
	// the same write that asked to resume.
	heldByUs := (g.hasPrev && g.prev.HeldAt != nil && !g.newRollout) || g.rederivedHold
	value, requested := d.Annotations[grayapi.ResumeAnnotation]
	if !requested {
		if !d.Spec.Paused && heldByUs {
			from := g.st.Percent
			g.st.Step++
			g.resumed(ctx, fmt.Sprintf("Revision %d unpaused at %d%%: moving on to %s", g.st.Revision, from, g.nextShare()))
			return true
		}
		return false
	}

	g.removeResume = true
	ignore := func(format string, args ...any) bool {
		g.dc.eventRecorder.Eventf(d, corev1.EventTypeWarning, grayapi.ReasonGrayResumeIgnored, "Ignored %s=%q: "+format,
			append([]any{grayapi.ResumeAnnotation, value}, args...)...)
		return false
	}
	req, err := grayapi.ParseResume(value)
	switch {
	case err != nil:
		return ignore("%v", err)
	case req.Revision != g.st.Revision:
		return ignore("revision %d is not the rollout in flight (revision %d)", req.Revision, g.st.Revision)
	case !heldByUs:
		return ignore("revision %d is not held (phase %s)", req.Revision, g.st.Phase)
	case !g.holdInPlace():
		// The hold point was reached, but a scaling event (or a restore after someone else
		// resized a ReplicaSet) is still being absorbed: the request stays until the hold
		// stands again, so that the next step starts from the settled share.
		g.removeResume = false
		klog.FromContext(ctx).V(2).Info("Gray resume waits for the hold to settle", "deployment", klog.KObj(d),
			"revision", g.st.Revision, "target", g.st.Target)
		return false
	}
	from := g.st.Percent
	if req.Full {
		g.st.Step = int32(len(g.points))
	} else {
		g.st.Step++
	}
	g.resumed(ctx, fmt.Sprintf("Revision %d resumed at %d%%: moving on to %s", g.st.Revision, from, g.nextShare()))
	return true
}

// resumed records that the hold was left.
func (g *graySync) resumed(ctx context.Context, message string) {
	g.st.HeldAt = nil
	g.st.Phase = grayapi.PhaseProgressing
	g.dc.eventRecorder.Eventf(g.d, corev1.EventTypeNormal, grayapi.ReasonGrayResumed, "%s", message)
	klog.FromContext(ctx).V(2).Info("Gray rollout resumed", "deployment", klog.KObj(g.d), "revision", g.st.Revision, "step", g.st.Step)
}

// nextShare names where the rollout goes after st.Step moved on.
func (g *graySync) nextShare() string {
	if int(g.st.Step) >= len(g.points) {
		return "all replicas"
	}
	return fmt.Sprintf("%d%%", g.points[g.st.Step])
}

// retarget sets percent and target for the current step and replica count.
func (g *graySync) retarget() {
	g.st.Step = min(g.st.Step, int32(len(g.points)))
	g.st.Percent, g.st.Target = rollout.GrayStepTarget(*g.d.Spec.Replicas, g.points, g.st.Step)
}

// settleHold decides before any ReplicaSet is written whether our pause stays: it goes for a
// new rollout, after the last hold point, or when the target moved above the new ReplicaSet
// (resume, edited hold points) other than by a scaling event, which keeps the hold and its
// share; a resume that lands on a target the new ReplicaSet already has is a new hold right
// away. The decision, the consumed resume request and the status go in one main-resource
// Update.
func (g *graySync) settleHold(ctx context.Context, resumed bool) error {
	unpause, newHold := false, false
	if g.pausedByUs {
		keep := !g.newRollout && g.newRS != nil && int(g.st.Step) < len(g.points) &&
			(*g.newRS.Spec.Replicas >= g.st.Target || (!resumed && replicasChanged(ctx, g.d, withNewRS(g.oldRSs, g.newRS))))
		switch {
		case !keep:
			unpause = true
			g.st.HeldAt = nil
			g.st.Phase = grayapi.PhaseProgressing
		case resumed:
			newHold = true
			g.st.HeldAt = ptrTime(g.dc.metaNow())
		}
	}
	if !unpause && !newHold && !g.removeResume {
		return nil
	}
	if err := g.updateDeployment(ctx, g.d.Spec.Paused && !unpause); err != nil {
		return err
	}
	if newHold {
		g.heldEvent(ctx)
	}
	return nil
}

// updateDeployment writes spec.paused, the consumed resume request and the status in one
// main-resource Update (the only way to change spec.paused; it bumps the generation).
func (g *graySync) updateDeployment(ctx context.Context, paused bool) error {
	if g.view != nil {
		return g.updateAlongside(ctx, paused)
	}
	d := g.d.DeepCopy()
	d.Spec.Paused = paused
	if g.removeResume {
		delete(d.Annotations, grayapi.ResumeAnnotation)
	}
	if err := g.setStatusAnnotation(d); err != nil {
		return err
	}
	written, err := g.dc.client.AppsV1().Deployments(d.Namespace).Update(ctx, d, metav1.UpdateOptions{FieldManager: g.dc.fieldManager})
	if err != nil {
		return fmt.Errorf("deployment %s/%s: setting paused=%t for the gray rollout: %w", d.Namespace, d.Name, paused, err)
	}
	g.adopt(written)
	g.removeResume = false
	g.stored, g.hasStored = g.st, true
	return nil
}

// setStatusAnnotation writes st into d's annotations.
func (g *graySync) setStatusAnnotation(d *appsv1.Deployment) error {
	g.st.Mode = grayapi.ModeInstead
	if g.view != nil {
		g.st.Mode = grayapi.ModeAlongside
		g.st.TakenOver = true
	}
	g.st.ObservedGeneration = d.Generation
	value, err := grayapi.FormatStatus(g.st)
	if err != nil {
		return fmt.Errorf("deployment %s/%s: %w", d.Namespace, d.Name, err)
	}
	d.Annotations[grayapi.StatusAnnotation] = value
	return nil
}

// adopt takes metadata and spec of a Deployment we just wrote; the status stays ours, because
// a main-resource Update answers with the server's old status.
func (g *graySync) adopt(written *appsv1.Deployment) {
	g.d.ObjectMeta = *written.ObjectMeta.DeepCopy()
	g.d.Spec = *written.Spec.DeepCopy()
	g.server = written.DeepCopy()
	if g.view != nil {
		g.view.reapply(g.d)
	}
}

// prepare puts the status that covers this sync's ReplicaSet writes on the server before the
// first of them, so that a target never rises on a ReplicaSet before it does on the
// Deployment. It writes only when revision, step, target or stable revision changed.
func (g *graySync) prepare(ctx context.Context) error {
	if g.prepared {
		return nil
	}
	g.prepared = true
	if g.hasStored && g.stored.Revision == g.st.Revision && g.stored.Step == g.st.Step &&
		g.stored.Target == g.st.Target && g.stored.StableRevision == g.st.StableRevision {
		return nil
	}
	if g.st.Phase == grayapi.PhaseHeld {
		// The target moved (a scaling event, say): whatever was held is not settled for it
		// yet, and a Held written here would be taken back by finish.
		g.st.Phase = grayapi.PhaseProgressing
		g.st.Message = fmt.Sprintf("resizing revision %d to its hold target %d of %d replicas (%d%%)",
			g.st.Revision, g.st.Target, *g.d.Spec.Replicas, g.st.Percent)
	}
	if err := g.setStatusAnnotation(g.d); err != nil {
		return err
	}
	written, err := g.persistStatus(ctx, g.d)
	if err != nil {
		return fmt.Errorf("deployment %s/%s: recording gray target %d before scaling: %w", g.d.Namespace, g.d.Name, g.st.Target, err)
	}
	g.adopt(written)
	g.stored, g.hasStored = g.st, true
	return nil
}

// reconcileReplicaSets performs this sync's ReplicaSet writes and reports whether any size
// changed: a scaling event keeps the share (GrayScaleSizes); caps broken by edited hold points
// are restored as a rolling update moves (PlanGrayRestore); the user's own pause stops the rollout as upstream's does;
// otherwise one capped rolling step (PlanGrayStep), which while held only converges the old
// ReplicaSets (the new one is at its target and never topped up).
func (g *graySync) reconcileReplicaSets(ctx context.Context) (bool, error) {
	d := g.d
	replicas := *d.Spec.Replicas
	_, minOld := rollout.GrayCaps(replicas, g.st.Target)
	held := d.Spec.Paused && g.st.HeldAt != nil
	switch {
	case replicasChanged(ctx, d, withNewRS(g.oldRSs, g.newRS)):
		return g.rescale(ctx, held)
	case g.newRS != nil && (*g.newRS.Spec.Replicas > g.st.Target || deployutil.GetReplicaCountForReplicaSets(g.oldRSs) < minOld):
		return g.restore(ctx)
	case d.Spec.Paused && !held:
		return false, nil
	}
	if g.newRS == nil {
		if err := g.prepare(ctx); err != nil {
			return false, err
		}
		target := g.st.Target
		newRS, err := g.dc.getNewReplicaSetWith(ctx, d, g.rsList, g.oldRSs,
			newReplicaSetOptions{create: true, maxReplicas: &target, deferStatus: true})
		if err != nil {
			return false, err
		}
		if newRS != nil {
			g.dc.rsExpectations.wrote(g.key, newRS)
		}
		g.newRS = newRS
	}
	return g.rollStep(ctx)
}

// rescale applies GrayScaleSizes for a changed spec.replicas, refreshing the desired- and
// max-replicas annotations of every active ReplicaSet like upstream's scale() does.
func (g *graySync) rescale(ctx context.Context, held bool) (bool, error) {
	d := g.d
	old := g.oldKeepOrder()
	in := rollout.GrayScaleInput{
		Replicas: *d.Spec.Replicas, Target: g.st.Target, Held: held, HasNew: g.newRS != nil,
		Old: specsOf(old),
	}
	if g.newRS != nil {
		in.NewSpec = *g.newRS.Spec.Replicas
		in.ProportionalNew = in.NewSpec
		for _, step := range deployutil.ScalePlan(ctx, d, g.newRS, g.oldRSs) {
			if step.ReplicaSet == g.newRS {
				in.ProportionalNew = step.Size
			}
		}
	}
	newSize, oldSizes := rollout.GrayScaleSizes(in)
	klog.FromContext(ctx).V(2).Info("Scaling gray deployment", "deployment", klog.KObj(d), "replicas", in.Replicas,
		"target", g.st.Target, "held", held, "newReplicas", newSize, "oldReplicas", oldSizes)
	return g.apply(ctx, newSize, old, oldSizes, true)
}

// restore applies PlanGrayRestore: the caps broke without a scaling event (the hold point was
// lowered, or the built-in controller resized a ReplicaSet in alongside mode), and they come
// back within maxSurge and maxUnavailable, counting only availability the ReplicaSet statuses
// vouch for (grayReplicaSet).
func (g *graySync) restore(ctx context.Context) (bool, error) {
	d := g.d
	old := g.oldKeepOrder()
	if g.view != nil && g.builtInTookHoldApart() {
		if err := g.unsaturate(ctx); err != nil {
			return false, err
		}
		newSize, oldSizes := rollout.GrayRestoreAtOnce(*d.Spec.Replicas, g.st.Target, *g.newRS.Spec.Replicas, specsOf(old))
		klog.FromContext(ctx).V(2).Info("Restoring the hold the built-in controller resized", "deployment", klog.KObj(d),
			"target", g.st.Target, "newReplicas", newSize, "oldReplicas", oldSizes)
		return g.apply(ctx, newSize, old, oldSizes, false)
	}
	newRS := grayReplicaSet(g.newRS)
	in := rollout.GrayRestoreInput{
		Replicas: *d.Spec.Replicas, Surge: deployutil.MaxSurge(*d), Unavailable: deployutil.MaxUnavailable(*d),
		Target: g.st.Target, NewSpec: newRS.Spec, Available: newRS.Available, Old: specsOf(old),
	}
	if statusObserved(g.newRS) {
		in.NewUnavailable = newRS.Spec - max(newRS.Ready, newRS.Available)
	}
	for _, rs := range old {
		in.Available += grayReplicaSet(rs).Available
	}
	newSize, oldSizes := rollout.PlanGrayRestore(in)
	klog.FromContext(ctx).V(2).Info("Restoring gray caps", "deployment", klog.KObj(d), "target", g.st.Target,
		"newReplicas", newSize, "oldReplicas", oldSizes)
	return g.apply(ctx, newSize, old, oldSizes, false)
}

// unsaturate stops the built-in controller from seeing a saturated new ReplicaSet before the
// hold is restored. Its paused sync scales every old ReplicaSet to 0 next to a new one whose
// spec, desired-replicas annotation and availability all equal spec.replicas (upstream
// sync.go: scale, IsSaturated), and scales a lone active ReplicaSet to spec.replicas: once it
// has made the canary the whole Deployment, growing the old ReplicaSet back first is undone at
// once, and shrinking the canary first leaves it lone. Recording the hold target as the
// canary's desired replicas first breaks the saturation; the restore's own write of the canary
// sets the annotation right again, and a sync that stops in between sees a scaling event and
// resizes to the hold all the same.
func (g *graySync) unsaturate(ctx context.Context) error {
	replicas := *g.d.Spec.Replicas
	desired, ok := deployutil.GetDesiredReplicasAnnotation(ctx, g.newRS)
	if *g.newRS.Spec.Replicas != replicas || !ok || desired != replicas || replicas == g.st.Target {
		return nil
	}
	rs := g.newRS.DeepCopy()
	rs.Annotations[deployutil.DesiredReplicasAnnotation] = strconv.Itoa(int(g.st.Target))
	written, err := g.dc.client.AppsV1().ReplicaSets(rs.Namespace).Update(ctx, rs, metav1.UpdateOptions{FieldManager: g.dc.fieldManager})
	if err != nil {
		return fmt.Errorf("deployment %s/%s: marking replica set %s unsaturated before restoring the hold: %w", g.d.Namespace, g.d.Name, rs.Name, err)
	}
	g.newRS = written
	return nil
}

// builtInTookHoldApart reports whether the caps broke because another writer (in alongside
// mode, the built-in controller's paused sync) resized a ReplicaSet: the canary above its target,
// or the old ReplicaSets below their floor, last resized by a field manager other than ours.
func (g *graySync) builtInTookHoldApart() bool {
	if *g.newRS.Spec.Replicas > g.st.Target && g.dc.resizedByOther(g.newRS) {
		return true
	}
	if deployutil.GetReplicaCountForReplicaSets(g.oldRSs) >= *g.d.Spec.Replicas-g.st.Target {
		return false
	}
	for _, rs := range g.oldRSs {
		if g.dc.resizedByOther(rs) {
			return true
		}
	}
	return false
}

// resizedByOther reports whether rs's spec.replicas was last written by a field manager
// other than ours (an update hands the field to its writer).
func (dc *DeploymentController) resizedByOther(rs *appsv1.ReplicaSet) bool {
	for _, entry := range rs.ManagedFields {
		if entry.FieldsV1 == nil {
			continue
		}
		var fields struct {
			Spec map[string]json.RawMessage `json:"f:spec"`
		}
		if json.Unmarshal(entry.FieldsV1.Raw, &fields) != nil {
			continue
		}
		if _, owns := fields.Spec["f:replicas"]; owns {
			return entry.Manager != dc.fieldManager
		}
	}
	return false
}

// grayReplicaSet is what PlanGrayStep sees of rs. Its availability is only
// trusted once the ReplicaSet controller has observed its latest spec: right
// after a resize the status still counts pods being deleted (or not yet
// created), and trusting it would let a step remove old replicas that are not
// really there (upstream has this race; a gray rollout promises availability).
// A stale status counts as nothing available, which only delays scale-downs
// until the ReplicaSet controller's next status write, itself a sync trigger.
// Even a current status counts at most spec.replicas.
func grayReplicaSet(rs *appsv1.ReplicaSet) rollout.GrayReplicaSet {
	available := min(rs.Status.AvailableReplicas, *rs.Spec.Replicas)
	ready := min(rs.Status.ReadyReplicas, *rs.Spec.Replicas)
	if !statusObserved(rs) {
		available, ready = 0, 0
	}
	return rollout.GrayReplicaSet{Spec: *rs.Spec.Replicas, Available: available, Ready: ready}
}

// rollStep applies one PlanGrayStep: the new ReplicaSet grows, or else old ReplicaSets shrink,
// abandoned canaries first and the stable ReplicaSet last.
func (g *graySync) rollStep(ctx context.Context) (bool, error) {
	d := g.d
	old := g.oldScaleDownOrder()
	in := rollout.GrayStepInput{
		Replicas:    *d.Spec.Replicas,
		Surge:       deployutil.MaxSurge(*d),
		Unavailable: deployutil.MaxUnavailable(*d),
		Target:      g.st.Target,
		New:         grayReplicaSet(g.newRS),
		Old:         make([]rollout.GrayReplicaSet, len(old)),
	}
	for i, rs := range old {
		in.Old[i] = grayReplicaSet(rs)
	}
	plan := rollout.PlanGrayStep(in)
	return g.apply(ctx, plan.New, old, plan.Old, false)
}

// apply writes the new ReplicaSet first and then the old ones in the given order (in alongside
// mode, in the order and with the adjustment writeOrder decides), stopping at the first error.
// With force, every ReplicaSet that was active also gets its desired- and max-replicas
// annotations refreshed (the end of a scaling event).
func (g *graySync) apply(ctx context.Context, newSize int32, old []*appsv1.ReplicaSet, oldSizes []int32, force bool) (bool, error) {
	scaledAny := false
	write := func(rs *appsv1.ReplicaSet, size int32) (*appsv1.ReplicaSet, error) {
		if size == *rs.Spec.Replicas && !(force && *rs.Spec.Replicas > 0) {
			return rs, nil
		}
		if err := g.prepare(ctx); err != nil {
			return nil, err
		}
		scaled, written, err := g.dc.scaleReplicaSet(ctx, rs, size, g.d, force)
		if err != nil {
			return nil, err
		}
		if scaled {
			g.dc.rsExpectations.wrote(g.key, written)
		}
		scaledAny = scaledAny || scaled
		return written, nil
	}
	for _, w := range g.writeOrder(ctx, newSize, old, oldSizes) {
		if w.Old == rollout.GrayNewReplicaSet {
			written, err := write(g.newRS, w.Size)
			if err != nil {
				return scaledAny, err
			}
			g.newRS = written
			continue
		}
		rs := old[w.Old]
		written, err := write(rs, w.Size)
		if err != nil {
			return scaledAny, err
		}
		g.replaceOld(rs, written)
	}
	return scaledAny, nil
}

// writeOrder lists the writes of apply: the new ReplicaSet (if any) and then the old ones in
// the given order in instead mode; in alongside mode rollout.GrayAlongsideWrites decides, so
// that no write leaves the built-in controller a lone ReplicaSet to resize (see alongside.go).
func (g *graySync) writeOrder(ctx context.Context, newSize int32, old []*appsv1.ReplicaSet, oldSizes []int32) []rollout.GrayWrite {
	if g.view == nil {
		var writes []rollout.GrayWrite
		if g.newRS != nil {
			writes = append(writes, rollout.GrayWrite{Old: rollout.GrayNewReplicaSet, Size: newSize})
		}
		for i, size := range oldSizes {
			writes = append(writes, rollout.GrayWrite{Old: i, Size: size})
		}
		return writes
	}
	replicas := *g.d.Spec.Replicas
	maxNew, _ := rollout.GrayCaps(replicas, g.st.Target)
	in := rollout.GrayWritesInput{
		Replicas: replicas, HasNew: g.newRS != nil, MaxNew: maxNew,
		Current: rollout.GrayStep{Old: specsOf(old)},
		Planned: rollout.GrayStep{New: newSize, Old: oldSizes},
	}
	if g.newRS != nil {
		in.Current.New = *g.newRS.Spec.Replicas
	}
	writes := rollout.GrayAlongsideWrites(in)
	for _, w := range writes {
		planned := newSize
		if w.Old != rollout.GrayNewReplicaSet {
			planned = oldSizes[w.Old]
		}
		if w.Size != planned {
			klog.FromContext(ctx).V(2).Info("Adjusted gray step so the built-in controller has no lone ReplicaSet to resize",
				"deployment", klog.KObj(g.d), "replicas", replicas, "plannedNew", newSize, "plannedOld", oldSizes, "writes", writes)
			break
		}
	}
	return writes
}

// replaceOld swaps a written old ReplicaSet into oldRSs so the status sees its new spec.
func (g *graySync) replaceOld(before, after *appsv1.ReplicaSet) {
	for i, rs := range g.oldRSs {
		if rs == before {
			g.oldRSs[i] = after
			return
		}
	}
}

// isStable reports whether rs is the stable ReplicaSet of the rollout in flight.
func (g *graySync) isStable(rs *appsv1.ReplicaSet) bool {
	rev, err := deployutil.Revision(rs)
	return err == nil && g.st.StableRevision > 0 && rev == g.st.StableRevision
}

// oldScaleDownOrder lists the old ReplicaSets in the order a rollout shrinks them: abandoned
// canaries (every non-stable old ReplicaSet) oldest first, then the stable one.
func (g *graySync) oldScaleDownOrder() []*appsv1.ReplicaSet {
	var canaries, stable []*appsv1.ReplicaSet
	for _, rs := range g.oldRSs {
		if g.isStable(rs) {
			stable = append(stable, rs)
		} else {
			canaries = append(canaries, rs)
		}
	}
	sort.Sort(deployutil.ReplicaSetsByCreationTimestamp(canaries))
	return append(canaries, stable...)
}

// oldKeepOrder lists the old ReplicaSets in the order SpreadOld favours on ties: the stable
// one first, then the others newest first.
func (g *graySync) oldKeepOrder() []*appsv1.ReplicaSet {
	var stable, others []*appsv1.ReplicaSet
	for _, rs := range g.oldRSs {
		if g.isStable(rs) {
			stable = append(stable, rs)
		} else {
			others = append(others, rs)
		}
	}
	deployutil.SortNewestFirst(others)
	return append(stable, others...)
}

func specsOf(rss []*appsv1.ReplicaSet) []int32 {
	out := make([]int32, len(rss))
	for i, rs := range rss {
		out[i] = *rs.Spec.Replicas
	}
	return out
}

// holdIfReached pauses the rollout in the same sync in which the new ReplicaSet reached the
// target of a hold point (or is found there): one Update carrying spec.paused and heldAt.
func (g *graySync) holdIfReached(ctx context.Context) error {
	if g.d.Spec.Paused || g.newRS == nil || int(g.st.Step) >= len(g.points) || *g.newRS.Spec.Replicas < g.st.Target {
		return nil
	}
	g.st.HeldAt = ptrTime(g.dc.metaNow())
	g.st.Phase = grayapi.PhaseProgressing
	if err := g.updateDeployment(ctx, true); err != nil {
		return err
	}
	g.heldEvent(ctx)
	return nil
}

// heldEvent reports a hold point reached: event, log and metrics. Only the first hold point of
// a rollout feeds the time-to-hold histogram; later ones include the time people took to
// resume.
func (g *graySync) heldEvent(ctx context.Context) {
	replicas := *g.d.Spec.Replicas
	g.dc.eventRecorder.Eventf(g.d, corev1.EventTypeNormal, grayapi.ReasonGrayHeld, "%s holds %d/%d (%d%%)",
		g.newRS.Name, g.st.Target, replicas, g.st.Percent)
	klog.FromContext(ctx).V(2).Info("Gray rollout held", "deployment", klog.KObj(g.d), "replicaSet", klog.KObj(g.newRS),
		"target", g.st.Target, "replicas", replicas, "percent", g.st.Percent)
	sinceStart := time.Duration(-1)
	if g.st.Step == 0 && !g.newRS.CreationTimestamp.IsZero() {
		sinceStart = max(g.dc.now().Sub(g.newRS.CreationTimestamp.Time), 0)
	}
	metrics.RecordGrayHold(sinceStart)
}

// finish computes and writes the Deployment status: upstream's counts and conditions (the
// paused form while paused, the rolling form otherwise), the gray phase in kubegray.io/status
// and the GrayHeld condition, all in one UpdateStatus when anything changed.
func (g *graySync) finish(ctx context.Context) error {
	d := g.d
	allRSs := withNewRS(g.oldRSs, g.newRS)
	var newStatus appsv1.DeploymentStatus
	if d.Spec.Paused {
		newStatus = g.dc.calculateStatus(allRSs, g.newRS, d)
		g.dc.setPausedCondition(&newStatus, d)
	} else {
		g.dc.setResumedCondition(d)
		newStatus = g.dc.calculateRolloutStatus(ctx, allRSs, g.newRS, d)
	}

	g.setPhase(&newStatus)
	setGrayHeldCondition(&newStatus, g.st, *d.Spec.Replicas, g.dc.metaNow())
	// A Deployment first seen complete has completed nothing under our watch.
	completed := g.st.Phase == grayapi.PhaseComplete && g.prevRead &&
		!(g.prev.Phase == grayapi.PhaseComplete && g.prev.Revision == g.st.Revision)

	// The stable mark moves before the status says Complete: a controller stopped in between
	// leaves a mark no older than the status, and the mark is what wins (gray_record.go).
	if g.st.Phase == grayapi.PhaseComplete && g.newRS != nil {
		if err := g.dc.markStable(ctx, d, g.newRS, g.oldRSs); err != nil {
			return err
		}
	}
	updated := d.DeepCopy()
	updated.Status = newStatus
	if err := g.setStatusAnnotation(updated); err != nil {
		return err
	}
	if g.view == nil || !g.view.releaseOnComplete || g.st.Phase != grayapi.PhaseComplete {
		if err := g.writeStatus(ctx, updated); err != nil {
			return err
		}
	}
	if completed {
		g.dc.eventRecorder.Eventf(d, corev1.EventTypeNormal, grayapi.ReasonGrayComplete, "Revision %d complete: all %d replicas updated", g.st.Revision, *d.Spec.Replicas)
	}
	metrics.SetGrayPhase(g.key, g.st.Phase)
	return nil
}

// writeStatus writes updated through /status unless it equals what we have; an unchanged
// rolling Deployment gets its progress-deadline check scheduled instead, as upstream does.
func (g *graySync) writeStatus(ctx context.Context, updated *appsv1.Deployment) error {
	d := g.d
	if g.statusUnchanged(updated) {
		if !d.Spec.Paused {
			g.dc.requeueStuckDeployment(ctx, d, updated.Status)
		}
		return nil
	}
	written, err := g.persistStatus(ctx, updated)
	if err != nil {
		return fmt.Errorf("deployment %s/%s: writing status (gray phase %s): %w", d.Namespace, d.Name, g.st.Phase, err)
	}
	d.Status = updated.Status
	g.adopt(written)
	g.stored, g.hasStored = g.st, true
	return nil
}

// statusUnchanged is statusUnchanged for this sync's mode: in alongside mode only our
// annotation, the mirrored revision and the GrayHeld condition are ours to write.
func (g *graySync) statusUnchanged(updated *appsv1.Deployment) bool {
	if g.view != nil {
		return alongsideStatusUnchanged(g.server, updated)
	}
	return statusUnchanged(g.server, updated)
}

// persistStatus writes the status side of updated: all of it through UpdateStatus in instead
// mode, only what is ours through a merge patch in alongside mode.
func (g *graySync) persistStatus(ctx context.Context, updated *appsv1.Deployment) (*appsv1.Deployment, error) {
	if g.view != nil {
		return g.dc.patchGrayStatus(ctx, updated)
	}
	return g.dc.client.AppsV1().Deployments(updated.Namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{FieldManager: g.dc.fieldManager})
}

// statusUnchanged reports whether writing updated would change nothing a status write owns
// (status, our annotation, the mirrored revision) compared with what the server has.
func statusUnchanged(server, updated *appsv1.Deployment) bool {
	return reflect.DeepEqual(server.Status, updated.Status) &&
		server.Annotations[grayapi.StatusAnnotation] == updated.Annotations[grayapi.StatusAnnotation] &&
		server.Annotations[deployutil.RevisionAnnotation] == updated.Annotations[deployutil.RevisionAnnotation]
}

// setPhase decides the phase and message of st from the status about to be written.
func (g *graySync) setPhase(newStatus *appsv1.DeploymentStatus) {
	d := g.d
	replicas := *d.Spec.Replicas
	st := &g.st
	last := int(st.Step) >= len(g.points)
	held := d.Spec.Paused && st.HeldAt != nil
	progressing := deployutil.GetDeploymentCondition(*newStatus, appsv1.DeploymentProgressing)
	switch {
	case last && deployutil.DeploymentComplete(d, newStatus):
		st.Phase = grayapi.PhaseComplete
		st.Message = fmt.Sprintf("all %d replicas run revision %d", replicas, st.Revision)
		st.StableRevision = st.Revision
		st.HeldAt = nil
	case held && (g.settled() || g.heldThisGeneration()):
		st.Phase = grayapi.PhaseHeld
		st.Message = fmt.Sprintf("held at %d of %d replicas (%d%%) on revision %d; run kubectl gray resume", st.Target, replicas, st.Percent, st.Revision)
	case g.isRollingBack():
		st.Phase = grayapi.PhaseRolledBack
		st.Message = fmt.Sprintf("rolling back to stable revision %d", st.StableRevision)
	case progressing != nil && progressing.Reason == deployutil.TimedOutReason:
		st.Phase = grayapi.PhaseDegraded
		st.Message = fmt.Sprintf("revision %d exceeded its progress deadline", st.Revision)
	default:
		st.Phase = grayapi.PhaseProgressing
		switch {
		case held:
			st.Message = fmt.Sprintf("holding revision %d at %d of %d replicas (%d%%); waiting for the old replicas to settle at %d",
				st.Revision, st.Target, replicas, st.Percent, replicas-st.Target)
		case d.Spec.Paused:
			st.Message = fmt.Sprintf("paused by the user while rolling revision %d to %d of %d replicas (%d%%)", st.Revision, st.Target, replicas, st.Percent)
		case last:
			st.Message = fmt.Sprintf("rolling revision %d to all %d replicas", st.Revision, replicas)
		default:
			st.Message = fmt.Sprintf("rolling revision %d to %d of %d replicas (%d%%)", st.Revision, st.Target, replicas, st.Percent)
		}
	}
}

// settled reports whether a held rollout has reached its hold point for the current replica
// count: the ReplicaSets stand there (holdInPlace), T new replicas are available and R − T old
// pods are left. Every count comes from a ReplicaSet status that has observed its latest spec:
// right after a resize the status still describes the old size, and a hold reported from it
// would be taken back by the next sync.
func (g *graySync) settled() bool {
	if !g.holdInPlace() {
		return false
	}
	var oldPods int32
	for _, rs := range g.oldRSs {
		oldPods += rs.Status.Replicas
	}
	return g.newRS.Status.AvailableReplicas == g.st.Target && oldPods == *g.d.Spec.Replicas-g.st.Target
}

// holdInPlace reports whether the ReplicaSets are sized for the current hold point and
// replica count (new = T, old = R − T in total) and the ReplicaSet controller has observed
// every one of those sizes. Availability is not asked: a canary whose pods are not ready is
// still where the hold put it.
func (g *graySync) holdInPlace() bool {
	if g.newRS == nil || !statusObserved(g.newRS) || *g.newRS.Spec.Replicas != g.st.Target {
		return false
	}
	var old int32
	for _, rs := range g.oldRSs {
		if !statusObserved(rs) {
			return false
		}
		old += *rs.Spec.Replicas
	}
	return old == *g.d.Spec.Replicas-g.st.Target
}

// heldThisGeneration reports whether our status already reported this hold as Held for the
// Deployment's current generation: within one generation Held is final (DESIGN §4), so that
// whoever waited for it can act on it; a pod lost under a settled hold does not make it
// Progressing again. A scaling event, a resume or an edit is a new generation and is settled
// afresh.
func (g *graySync) heldThisGeneration() bool {
	return g.hasPrev && g.prev.Phase == grayapi.PhaseHeld && g.prev.ObservedGeneration == g.d.Generation &&
		g.prev.Revision == g.st.Revision && g.prev.Step == g.st.Step && g.prev.Target == g.st.Target
}

// statusObserved reports whether rs's status describes its latest spec.
func statusObserved(rs *appsv1.ReplicaSet) bool {
	return rs.Status.ObservedGeneration >= rs.Generation
}

// setGrayHeldCondition keeps GrayHeld True while the rollout is Held and False otherwise, with
// the phase as reason.
func setGrayHeldCondition(status *appsv1.DeploymentStatus, st grayapi.Status, replicas int32, now metav1.Time) {
	if st.Phase == grayapi.PhaseHeld {
		msg := fmt.Sprintf("%d of %d replicas (%d%%) on revision %d; run kubectl gray resume", st.Target, replicas, st.Percent, st.Revision)
		deployutil.SetDeploymentCondition(status, *deployutil.NewDeploymentCondition(grayapi.ConditionGrayHeld, corev1.ConditionTrue, grayapi.ReasonHoldPointReached, msg, now))
		return
	}
	deployutil.SetDeploymentCondition(status, *deployutil.NewDeploymentCondition(grayapi.ConditionGrayHeld, corev1.ConditionFalse, string(st.Phase), st.Message, now))
}

// setPausedCondition is checkPausedConditions' paused half applied to a status being built:
// Progressing Unknown/DeploymentPaused, unless there is no deadline or it already timed out.
func (dc *DeploymentController) setPausedCondition(status *appsv1.DeploymentStatus, d *appsv1.Deployment) {
	if !deployutil.HasProgressDeadline(d) {
		return
	}
	cond := deployutil.GetDeploymentCondition(*status, appsv1.DeploymentProgressing)
	if cond != nil && (cond.Reason == deployutil.TimedOutReason || cond.Reason == deployutil.PausedDeployReason) {
		return
	}
	deployutil.SetDeploymentCondition(status, *deployutil.NewDeploymentCondition(appsv1.DeploymentProgressing, corev1.ConditionUnknown,
		deployutil.PausedDeployReason, "Deployment is paused", dc.metaNow()))
}

// setResumedCondition is checkPausedConditions' resumed half, applied to d's status in memory
// so that the rolling status built from it starts from Unknown/DeploymentResumed.
func (dc *DeploymentController) setResumedCondition(d *appsv1.Deployment) {
	if !deployutil.HasProgressDeadline(d) {
		return
	}
	cond := deployutil.GetDeploymentCondition(d.Status, appsv1.DeploymentProgressing)
	if cond == nil || cond.Reason != deployutil.PausedDeployReason {
		return
	}
	deployutil.SetDeploymentCondition(&d.Status, *deployutil.NewDeploymentCondition(appsv1.DeploymentProgressing, corev1.ConditionUnknown,
		deployutil.ResumedDeployReason, "Deployment is resumed", dc.metaNow()))
}

// freeze handles an unparsable kubegray.io/percent: nothing is created or scaled, the phase is
// Invalid with the parse error (which quotes the value and the rule) as message, and a Warning
// event is emitted once per distinct bad value. Our hold, if any, stays recorded, so that
// fixing the value finds it again.
func (g *graySync) freeze(ctx context.Context, perr error) error {
	d := g.d
	// Found, not synced: a frozen rollout does not even copy annotations to its ReplicaSets.
	_, g.oldRSs = deployutil.FindOldReplicaSets(d, g.rsList)
	g.newRS = deployutil.FindNewReplicaSet(d, g.rsList)
	msg := perr.Error()
	if g.prev.Phase != grayapi.PhaseInvalid || g.prev.Message != msg {
		g.dc.eventRecorder.Eventf(d, corev1.EventTypeWarning, grayapi.ReasonGrayInvalid, "%s; the rollout is frozen until it is fixed or removed", msg)
	}
	if g.hasPrev {
		g.st = g.prev
	} else {
		g.st = grayapi.Status{}
	}
	g.st.Phase = grayapi.PhaseInvalid
	g.st.Message = msg
	klog.FromContext(ctx).V(2).Info("Gray rollout frozen", "deployment", klog.KObj(d), "err", perr)

	newStatus := g.dc.calculateStatus(withNewRS(g.oldRSs, g.newRS), g.newRS, d)
	if d.Spec.Paused {
		g.dc.setPausedCondition(&newStatus, d)
	}
	setGrayHeldCondition(&newStatus, g.st, *d.Spec.Replicas, g.dc.metaNow())
	updated := d.DeepCopy()
	updated.Status = newStatus
	if err := g.setStatusAnnotation(updated); err != nil {
		return err
	}
	if g.statusUnchanged(updated) {
		metrics.SetGrayPhase(g.key, g.st.Phase)
		return nil
	}
	if _, err := g.persistStatus(ctx, updated); err != nil {
		return fmt.Errorf("deployment %s/%s: writing status (gray phase Invalid): %w", d.Namespace, d.Name, err)
	}
	metrics.SetGrayPhase(g.key, g.st.Phase)
	return nil
}

// releaseGray removes what the gray path left on a Deployment that is no longer gray
// (kubegray.io/percent removed, or the strategy is no longer RollingUpdate): our hold is
// unpaused, and kubegray.io/status and the GrayHeld condition go. The caller goes on with
// upstream's flow on d, whose resourceVersion follows these writes.
func (dc *DeploymentController) releaseGray(ctx context.Context, d *appsv1.Deployment) error {
	prev, _ := readGrayStatus(ctx, d)
	if d.Spec.Paused && prev.HeldAt != nil {
		unpaused := d.DeepCopy()
		unpaused.Spec.Paused = false
		delete(unpaused.Annotations, grayapi.StatusAnnotation)
		written, err := dc.client.AppsV1().Deployments(d.Namespace).Update(ctx, unpaused, metav1.UpdateOptions{FieldManager: dc.fieldManager})
		if err != nil {
			return fmt.Errorf("deployment %s/%s: unpausing the gray hold after %s was removed: %w", d.Namespace, d.Name, grayapi.PercentAnnotation, err)
		}
		d.ObjectMeta = *written.ObjectMeta.DeepCopy()
		d.Spec = *written.Spec.DeepCopy()
		dc.eventRecorder.Eventf(d, corev1.EventTypeNormal, grayapi.ReasonGrayResumed,
			"Gray rollout of revision %d released: %s is gone, the rollout completes", prev.Revision, grayapi.PercentAnnotation)
	}
	if !hasGrayLeftovers(d) {
		return nil
	}
	delete(d.Annotations, grayapi.StatusAnnotation)
	deployutil.RemoveDeploymentCondition(&d.Status, grayapi.ConditionGrayHeld)
	written, err := dc.client.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, d, metav1.UpdateOptions{FieldManager: dc.fieldManager})
	if err != nil {
		return fmt.Errorf("deployment %s/%s: removing the gray status: %w", d.Namespace, d.Name, err)
	}
	d.ObjectMeta = *written.ObjectMeta.DeepCopy()
	return nil
}

// releaseTakenOver releases, in instead mode, a Deployment taken over for alongside mode (see
// the file comment): one patch restores the saved strategy (the API defaults, with a Warning
// naming the value, when it is unreadable), unpauses and drops kubegray.io/strategy. A gray
// Deployment that our status holds at the revision in flight stays paused, its hold intact;
// its status is kept, no longer marked taken over, so the gray sync that runs on the event of
// this patch goes on from the same step. Any other Deployment loses our status with the
// takeover, and the upstream sync takes it from there.
func (dc *DeploymentController) releaseTakenOver(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) error {
	value := d.Annotations[grayapi.StrategyAnnotation]
	r := takeoverRelease{eventType: corev1.EventTypeNormal, title: "Released from the alongside takeover"}
	restored := "restored strategy " + value
	strategy, err := grayapi.ParseStrategy(value)
	if err != nil {
		strategy = defaultStrategy()
		r.eventType = corev1.EventTypeWarning
		restored = fmt.Sprintf("%v: restored the default strategy %s", err, describeStrategy(strategy))
	}
	r.strategy = strategy

	_, annotated := d.Annotations[grayapi.PercentAnnotation]
	st, _ := readGrayStatus(ctx, d)
	// A readable status of a Deployment that stays gray goes on; an Invalid one without a
	// revision too, so that the bad percent is not reported a second time.
	if annotated && strategy.Type == appsv1.RollingUpdateDeploymentStrategyType && st.Phase != "" {
		_, oldRSs := deployutil.FindOldReplicaSets(d, rsList)
		r.held = st.HeldAt != nil && st.Revision == revisionInFlight(deployutil.FindNewReplicaSet(d, rsList), oldRSs)
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
	return dc.releaseTakeover(ctx, d, r)
}

func ptrTime(t metav1.Time) *metav1.Time { return &t }
