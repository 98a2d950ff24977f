package graysync

// Carrying out a gray sync's plan (gray.Decide), in one order, top to bottom: a sync's facts are
// gathered (gray_facts.go), decided once, and written here; each step's writes are in the files
// named by the step (gray_abort.go, gray_hold.go, gray_scale.go, gray_record.go, gray_status.go,
// gray_handover.go), their order here. The order keeps the new ReplicaSet within the target
// recorded on the Deployment: the status raising a target goes before the ReplicaSet write using
// it, and the pause goes in the sync the target is reached.

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/kubegray/kubectl-gray/controller/deployment"
	"github.com/kubegray/kubectl-gray/controller/gray"
	"github.com/kubegray/kubectl-gray/pkg/deployutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// isGray reports whether d takes the gray path.
func isGray(d *appsv1.Deployment) bool {
	_, annotated := d.Annotations[grayapi.PercentAnnotation]
	return annotated && d.Spec.Strategy.Type == appsv1.RollingUpdateDeploymentStrategyType
}

// syncGray reconciles a gray Deployment (see the file comment). It replaces upstream's paused,
// rollback, scaling-event and rolling dispatch of syncDeployment for d.
func (gs *Controller) syncGray(ctx context.Context, key string, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) error {
	_, err := gs.runGray(ctx, key, d, rsList, insteadMode{client: gs.client, fieldManager: gs.fieldManager, port: gs.port})
	return err
}

// runGray is syncGray in the given mode. It returns the finished sync (nil when a cache was
// behind and nothing was done).
func (gs *Controller) runGray(ctx context.Context, key string, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet, mode grayMode) (*graySync, error) {
	// ReplicaSets and Deployments come through separate watches; acting on a Deployment older
	// than the ReplicaSets we wrote after it would undo our own step.
	checks := mode.cacheChecks()
	checks.ReplicaSetWrites = gs.rsExpectations.caughtUp
	ctx, fresh, err := gs.port.CacheFresh(ctx, key, d, rsList, checks)
	if !fresh {
		return nil, err
	}
	server := d.DeepCopy()
	in := grayInputs{key: key, now: gs.port.Now(), rsList: rsList, statusWriter: foreignStatusWriter(d, gs.fieldManager)}
	mode.begin(d)
	g := &graySync{gs: gs, in: in, cur: grayObjects{d: d, server: server}, mode: mode}
	if err := g.run(ctx); err != nil {
		// A sync that found its cache behind before a write it could not take back ends here,
		// as one deferred before it began (deployment.liveCheck).
		return nil, deployment.IgnoreBehind(err)
	}
	return g, nil
}

// run is the body of a gray sync: its facts gathered, one decision (gray.Decide), and the writes
// it decided (execute).
func (g *graySync) run(ctx context.Context) error {
	f, err := g.gather(ctx)
	if err != nil {
		return err
	}
	g.facts = f
	return g.execute(ctx, gray.Decide(ctx, f), f)
}

// execute carries out plan, decided from f, top to bottom: what the decision made of the status
// read and of the rollout in flight; the stable mark; the course (an undo, an abort, the aborted
// sync and an Invalid rollout's sync end the sync there; a retry goes on); the gates'
// measurements asked for; the move (the hold change, the deprecated rollback annotation where the
// mode serves it, the target, the ReplicaSet writes, the pause they reach); the clean-up and the
// records mirrored; the report; the hand-over.
func (g *graySync) execute(ctx context.Context, plan gray.Plan, f gray.Facts) error {
	g.in.prev, g.in.hasPrev = plan.Prev, plan.HasPrev
	if plan.Invalid != nil {
		return g.reportInvalid(ctx, *plan.Invalid, f.Problem)
	}
	if err := g.reportDistrust(ctx, plan.Distrust, f.Prev); err != nil {
		return err
	}
	id := plan.Identity
	g.st = id.Status
	g.logNewRollout(ctx, f.Prev, f.HasPrev)
	if id.RollingBack != "" {
		// Said once the cache is known to be the server's: an older Deployment beside newer
		// ReplicaSets looks like a rollback.
		if err := deployment.ConfirmLive(ctx); err != nil {
			return err
		}
		g.gs.eventRecorder.Eventf(g.cur.d, corev1.EventTypeNormal, grayapi.ReasonGrayRolledBack, "%s", id.RollingBack)
	}
	if err := g.markStableOfRollout(ctx); err != nil {
		return err
	}
	dec := plan.Sync
	if done, err := g.takeCourse(ctx, dec.Course); done || err != nil {
		return err
	}
	g.takeGates(dec.Gates)
	scaled, done, err := g.takeMove(ctx, dec.Move)
	if done || err != nil {
		return err
	}
	if g.cur.d.Spec.Paused || (!scaled && deployutil.DeploymentComplete(g.cur.d, &g.cur.d.Status)) {
		if err := g.gs.port.CleanupDeployment(ctx, g.cur.oldRSs, g.cur.d); err != nil {
			return err
		}
	}
	if err := g.gs.mirrorRecord(ctx, g.cur.d, deployutil.WithNewRS(g.cur.oldRSs, g.cur.newRS)); err != nil {
		return err
	}
	if err := g.report(ctx); err != nil {
		return err
	}
	g.handOverLease(ctx, dec.HandOver)
	return nil
}

// takeCourse carries out c, and reports whether that ended the sync: an undo's write, or an
// aborted sync. A retry goes on to the move.
func (g *graySync) takeCourse(ctx context.Context, c gray.CourseDecision) (bool, error) {
	d := g.cur.d
	value := d.Annotations[grayapi.ResumeAnnotation]
	if c.Ignored != "" {
		g.dropRequest(fmt.Sprintf("Ignored %s=%s: %s", grayapi.ResumeAnnotation, grayapi.QuoteValue(value), c.Ignored))
	} else if c.Consume {
		g.removeResume = true
	}
	switch c.Course {
	case gray.CourseUndo:
		if err := g.writeRollback(ctx, c.UndoTo); err != nil {
			return true, fmt.Errorf("deployment %s/%s: rolling revision %d back to stable revision %d (%s=%q): %w", d.Namespace, d.Name,
				g.st.Revision, g.st.StableRevision, grayapi.ResumeAnnotation, value, err)
		}
		klog.FromContext(ctx).V(2).Info("Gray rollout undone on request", "deployment", klog.KObj(d), "revision", g.st.Revision,
			"stableRevision", g.st.StableRevision, "replicaSet", klog.KObj(c.UndoTo))
		return true, nil
	case gray.CourseRetry:
		return false, g.retry(ctx)
	case gray.CourseAbort:
		if err := g.startAbort(ctx, c.Failure); err != nil {
			return true, err
		}
		return true, g.syncAborted(ctx, c.Aborted)
	case gray.CourseAborted:
		return true, g.syncAborted(ctx, c.Aborted)
	}
	return false, nil
}

// takeMove carries out m: the hold change, then the deprecated rollback annotation where the mode
// serves it (the sync ends there: done), the ReplicaSet writes and the pause after them.
// scaled: a ReplicaSet's size changed.
func (g *graySync) takeMove(ctx context.Context, m gray.Move) (scaled, done bool, err error) {
	if err := g.takeHoldChange(ctx, m); err != nil {
		return false, false, err
	}
	if served, err := g.mode.rollbackTo(ctx, g.cur.d, g.cur.newRS, g.in.rsList); served || err != nil {
		return false, true, err
	}
	if m, scaled, err = g.reconcileReplicaSets(ctx, m); err != nil {
		return scaled, false, err
	}
	if m.PauseAfter {
		err = g.pauseReached(ctx)
	}
	return scaled, false, err
}

// takeHoldChange carries out m up to the ReplicaSet writes: the resume's request and event, then
// the hold write when the hold changes or a request was consumed.
func (g *graySync) takeHoldChange(ctx context.Context, m gray.Move) error {
	log := klog.FromContext(ctx).V(2)
	switch r := m.Resume; {
	case r.Ignored != "":
		g.dropRequest(r.Ignored)
	case r.Consume:
		g.removeResume = true
	case r.Waits:
		log.Info("Gray resume waits for the hold to settle", "deployment", klog.KObj(g.cur.d), "revision", g.st.Revision, "target", g.st.Target)
	}
	g.st = m.Status
	if m.Resume.Resumed != "" {
		if err := deployment.ConfirmLive(ctx); err != nil {
			return err
		}
		g.gs.eventRecorder.Eventf(g.cur.d, corev1.EventTypeNormal, grayapi.ReasonGrayResumed, "%s", m.Resume.Resumed)
		log.Info("Gray rollout resumed", "deployment", klog.KObj(g.cur.d), "revision", g.st.Revision, "step", g.st.Step)
	}
	if m.Hold == gray.HoldUnchanged && !g.removeResume {
		return nil
	}
	if err := g.writeHold(ctx, m.Paused); err != nil {
		return err
	}
	if err := g.gatesWritten(ctx); err != nil {
		return err
	}
	if m.Hold == gray.HoldAgain {
		g.heldEvent(ctx)
	}
	return nil
}

// reconcileReplicaSets performs this sync's ReplicaSet writes as m planned them, and reports
// whether any size changed. A new ReplicaSet is created first when there is none, at the size m
// planned; when the server already had it (a create our cache had not seen yet) at another
// size, the roll planned for the size m created is not written and the sync looks again.
func (g *graySync) reconcileReplicaSets(ctx context.Context, m gray.Move) (gray.Move, bool, error) {
	switch plan := m.Sizes; plan.Kind {
	case gray.SizesKept:
		return m, false, nil
	case gray.SizesCreateFirst:
		if err := g.persistTargetFirst(ctx); err != nil {
			return m, false, err
		}
		newRS, err := g.createNewReplicaSet(ctx, plan.Created)
		if err != nil {
			return m, false, err
		}
		g.gs.rsExpectations.wrote(g.in.key, newRS)
		g.cur.newRS = newRS
		if *newRS.Spec.Replicas != plan.Created {
			g.gs.port.EnqueueAfter(g.cur.d, 0)
			m.Sizes, m.PauseAfter = gray.SizePlan{Kind: gray.SizesKept}, false
			return m, false, nil
		}
	case gray.SizesScaled:
		klog.FromContext(ctx).V(2).Info("Scaling gray deployment", "deployment", klog.KObj(g.cur.d), "replicas", *g.cur.d.Spec.Replicas,
			"target", g.st.Target, "held", g.cur.d.Spec.Paused && g.st.HeldAt != nil, "newReplicas", plan.NewSize, "oldReplicas", plan.OldSizes)
	case gray.SizesRestored:
		klog.FromContext(ctx).V(2).Info("Restoring gray caps", "deployment", klog.KObj(g.cur.d), "target", g.st.Target,
			"newReplicas", plan.NewSize, "oldReplicas", plan.OldSizes)
	}
	scaled, err := g.apply(ctx, m.Sizes)
	return m, scaled, err
}
