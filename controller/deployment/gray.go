package deployment

// Gray rollouts (docs/design.md: gray semantics). This file is the entry of a gray sync and
// the identification of the rollout in flight; gray_hold.go resumes and holds, gray_scale.go
// sizes and writes the ReplicaSets, gray_status.go reports, gray_record.go keeps the durable
// record, takeover.go takes over and releases (alongside mode).
//
// A Deployment carrying kubegray.io/percent with the RollingUpdate strategy takes syncGray
// instead of upstream's paused, rollback, scaling and rolling dispatch. Everything the gray
// path knows lives on the Deployment: the hold points (kubegray.io/percent), the one-shot
// resume request (kubegray.io/resume), our own record of the rollout (kubegray.io/status) and
// spec.paused. "Our hold" is spec.paused with heldAt recorded for the revision in flight; a
// pause without heldAt is the user's and is left alone.
//
// Every size decision is pkg/rollout arithmetic (GrayTarget, PlanGrayStep, GrayScaleSizes,
// PlanGrayRestore); these files read the objects, order the ReplicaSets and write. The order
// of writes is what keeps the invariant "the new ReplicaSet never exceeds the target recorded
// on the Deployment": the status (or the resume Update) that raises the target is written
// before any ReplicaSet write that uses it, and the pause is written in the same sync in
// which the new ReplicaSet reaches its target.
//
// A Deployment taken over for alongside mode (kubegray.io/strategy set: by `kubectl gray set
// --patch-takeover=always`, an older plugin, or a cluster that ran the controller alongside before)
// is released before anything else, in the one patch alongside mode releases with
// (releaseTakenOver): nothing in instead mode would ever take it off Recreate. Only our hold
// survives the release, as spec.paused, since in this mode that is what a hold is.

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

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
// status annotation or one of our conditions.
func hasGrayLeftovers(d *appsv1.Deployment) bool {
	_, annotated := d.Annotations[grayapi.StatusAnnotation]
	if annotated {
		return true
	}
	for _, c := range grayapi.Conditions {
		if deployutil.GetDeploymentCondition(d.Status, c) != nil {
			return true
		}
	}
	return false
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
	// policy is kubegray.io/on-failure and kubegray.io/hold-for.
	policy grayapi.Policy
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

	// mode is how this sync writes what it decided (gray_mode.go). In alongside mode d is seen
	// through its view: the saved strategy, and our hold as spec.paused, while the server keeps
	// paused=true and Recreate.
	mode grayMode
}

// syncGray reconciles a gray Deployment (see the file comment). It replaces upstream's paused,
// rollback, scaling-event and rolling dispatch of syncDeployment for d.
func (dc *DeploymentController) syncGray(ctx context.Context, key string, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) error {
	_, err := dc.runGray(ctx, key, d, rsList, insteadMode{})
	return err
}

// runGray is syncGray in the given mode. It returns the finished sync (nil when a cache was
// behind and nothing was done).
func (dc *DeploymentController) runGray(ctx context.Context, key string, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet, mode grayMode) (*graySync, error) {
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
	server := d.DeepCopy()
	if wait, err := mode.begin(ctx, dc, d, rsList); wait || err != nil {
		return nil, err
	}
	g := &graySync{dc: dc, d: d, server: server, key: key, rsList: rsList, mode: mode}
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
	if g.policy, err = grayapi.ParsePolicy(d.Annotations); err != nil {
		return g.freeze(ctx, err)
	}

	_, g.oldRSs = deployutil.FindOldReplicaSets(d, rsList)
	if g.newRS, err = dc.getNewReplicaSetWith(ctx, d, rsList, g.oldRSs, newReplicaSetOptions{deferStatus: true}); err != nil {
		return err
	}

	// A hold recorded by a status that turns out untrusted still explains spec.paused: a sync
	// that renumbered the new ReplicaSet and stopped before its status write leaves one.
	recordedHold := g.hasPrev && g.prev.HeldAt != nil
	g.distrustCopiedStatus(ctx)
	g.identify(ctx)
	if err := g.markStableOfRollout(ctx); err != nil {
		return err
	}
	if undone, err := g.takeUndo(ctx); undone || err != nil {
		return err
	}
	g.pausedByUs = d.Spec.Paused && (recordedHold || g.rederivedHold)
	g.retarget()
	resumed := g.takeResume(ctx)
	g.retarget()
	if err := g.settleHold(ctx, resumed); err != nil {
		return err
	}

	// The deprecated rollback annotation is served like upstream does (never while paused), but
	// only once the new template has its (capped) ReplicaSet: rollback would create it uncapped.
	if g.mode.servesRollbackTo() && !g.d.Spec.Paused && g.newRS != nil && getRollbackTo(g.d) != nil {
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
	if err := dc.mirrorRecord(ctx, g.d, withNewRS(g.oldRSs, g.newRS)); err != nil {
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
//
// A rollback is not a copy, though it looks like one in alongside mode: the built-in
// controller renumbers the stable ReplicaSet as soon as the template goes back to it, before
// our next sync. Our own status then names the abandoned revision and, as its stable revision,
// one the new ReplicaSet had before the renumbering; a copy taken from a ReplicaSet names that
// ReplicaSet's own earlier revision instead.
func (g *graySync) distrustCopiedStatus(ctx context.Context) {
	rev := g.newRevision()
	if !g.hasPrev || g.prev.Revision == rev || g.newRS == nil || g.renumberedByRollback() {
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

// renumberedByRollback reports whether the new ReplicaSet is the stable one of the status read,
// renumbered by a rollback from the revision that status was rolling out.
func (g *graySync) renumberedByRollback() bool {
	stable := g.prev.StableRevision
	return stable > 0 && stable != g.prev.Revision && deployutil.RevisionHistoryContains(g.newRS, stable) &&
		!isRevisionOf(g.newRS, g.prev.Revision)
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
		// Said from the first write of the rollback on (prepare writes before any resize).
		st.Phase = grayapi.PhaseRolledBack
		st.Message = fmt.Sprintf("rolling back to stable revision %d", st.StableRevision)
		why := ""
		if st.Failure = g.carriedRollbackFailure(); st.Failure != nil {
			why = fmt.Sprintf(" after revision %d failed (%s: %s): %s", st.Failure.RolledBackFrom,
				grayapi.OnFailureAnnotation, grayapi.OnFailureRollback, st.Failure.Message)
		} else if st.Failure = g.abandonedRollout(); st.Failure != nil {
			why = fmt.Sprintf(", revision %d abandoned: %s", st.Failure.RolledBackFrom, st.Failure.Message)
		}
		g.dc.eventRecorder.Eventf(g.d, corev1.EventTypeNormal, grayapi.ReasonGrayRolledBack,
			"Rolling back to stable revision %d (replica set %s): hold points skipped%s", st.StableRevision, g.newRS.Name, why)
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

func ptrTime(t metav1.Time) *metav1.Time { return &t }
