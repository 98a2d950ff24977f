package graysync

// The entry of a gray sync (docs/design.md: One gray sync, step by step): a Deployment with
// kubegray.io/percent and the RollingUpdate strategy takes syncGray instead of upstream's
// dispatch. controller/gray decides; these files read the objects and write, in an order that
// keeps the new ReplicaSet within the target recorded on the Deployment (the status raising a
// target goes before the ReplicaSet write using it, the pause in the sync the target is reached).

import (
	"context"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// readGrayStatus is gray.StoredStatus, an unreadable status logged (and taken as none).
func readGrayStatus(ctx context.Context, d *appsv1.Deployment) (grayapi.Status, bool) {
	st, names, err := gray.StoredStatus(d)
	if err != nil {
		klog.FromContext(ctx).V(2).Info("Ignoring unreadable gray status", "deployment", klog.KObj(d), "err", err)
	}
	return st, names
}

// graySync is one sync of a gray Deployment: what it read (in), the objects as it last left
// them (cur), and what it decided so far (st, removeResume), written in the order its mode
// requires.
type graySync struct {
	gs  *Controller
	in  grayInputs
	cur grayObjects
	st  grayapi.Status
	// removeResume: kubegray.io/resume was consumed and goes with the next Update.
	removeResume bool
	// gates is the hold's gates as this sync decided them (gray_gates.go: takeGates).
	gates gray.GateDecision
	// dropped holds the GrayResumeIgnored Warnings of a request consumed without being served,
	// emitted once the write that removes it has landed (holdWritten).
	dropped []string
	// mode is how this sync writes what it decided (gray_mode.go). In alongside mode cur.d is
	// seen through its view: the saved strategy, and our hold as spec.paused, while the server
	// keeps paused=true and Recreate.
	mode grayMode
}

// grayInputs is what a sync reads before it decides anything: the cached ReplicaSets, the hold
// points, the policy and our status as stored. Nothing the sync writes changes them; only
// distrustCopiedStatus revises prev, before any decision reads it.
type grayInputs struct {
	key string
	// now is the clock, read once when the sync began: every time this sync records or
	// compares with (heldAt, a deadline, hold-for, a condition's timestamps) is this one.
	now    time.Time
	rsList []*appsv1.ReplicaSet
	points []int32
	// policy is kubegray.io/on-failure, kubegray.io/hold-for and the gates named; gates are
	// those gates resolved.
	policy grayapi.Policy
	gates  namedGates
	// prev is the status read at the start (statusOnServer is the one on the server now);
	// hasPrev: it names a rollout, and one this sync trusts (distrustCopiedStatus).
	prev    grayapi.Status
	hasPrev bool
	// statusWriter is who last wrote kubegray.io/status when it was not this controller (from
	// the managedFields the Deployment cache keeps; empty when it was, or nobody can tell).
	statusWriter string
}

// grayObjects is the Deployment and its ReplicaSets as this sync last left them. d is our copy
// of the Deployment as last written in this sync: every write moves its resourceVersion on, so
// later writes of the same sync do not conflict with earlier ones, while a write based on a
// stale read still does.
type grayObjects struct {
	d *appsv1.Deployment
	// server is the Deployment as the server has it (as read, then as last written): d gathers
	// changes in memory (revision, conditions) that only the final status write persists.
	server *appsv1.Deployment
	newRS  *appsv1.ReplicaSet
	oldRSs []*appsv1.ReplicaSet
}

// syncGray reconciles a gray Deployment (see the file comment). It replaces upstream's paused,
// rollback, scaling-event and rolling dispatch of syncDeployment for d.
func (gs *Controller) syncGray(ctx context.Context, key string, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) error {
	_, err := gs.runGray(ctx, key, d, rsList, insteadMode{})
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

// run is the body of a gray sync, in the order the file comment describes.
func (g *graySync) run(ctx context.Context) error {
	gs, d, rsList := g.gs, g.cur.d, g.in.rsList
	var err error
	g.in.prev, g.in.hasPrev = readGrayStatus(ctx, d)

	points, err := grayapi.ParsePercent(d.Annotations[grayapi.PercentAnnotation])
	if err != nil {
		return g.reportInvalid(ctx, err)
	}
	g.in.points = points
	if g.in.policy, err = grayapi.ParsePolicy(d.Annotations); err != nil {
		return g.reportInvalid(ctx, err)
	}
	if g.in.gates, err = gs.gates.resolve(d.Namespace, g.in.policy); err != nil {
		return g.reportInvalid(ctx, err)
	}

	_, g.cur.oldRSs = deployutil.FindOldReplicaSets(d, rsList)
	if g.cur.newRS, err = g.findNewReplicaSet(ctx); err != nil {
		return err
	}

	if err := g.distrustForeignStatus(ctx); err != nil {
		return err
	}
	// A hold recorded by a status that turns out untrusted still explains spec.paused: a sync
	// that renumbered the new ReplicaSet and stopped before its status write leaves one.
	recordedHold := g.in.hasPrev && g.in.prev.HeldAt != nil
	g.distrustCopiedStatus(ctx)
	id := g.identify(ctx)
	g.st = id.Status
	if id.RollingBack != "" {
		// Said once the cache is known to be the server's: an older Deployment beside newer
		// ReplicaSets looks like a rollback.
		if err := deployment.ConfirmLive(ctx); err != nil {
			return err
		}
		gs.eventRecorder.Eventf(d, corev1.EventTypeNormal, grayapi.ReasonGrayRolledBack, "%s", id.RollingBack)
	}
	if err := g.markStableOfRollout(ctx); err != nil {
		return err
	}
	// A scaling event is read once: our own writes below change neither spec.replicas nor the
	// ReplicaSets' desired-replicas annotations.
	scaling := deployutil.ReplicasChanged(ctx, d, deployutil.WithNewRS(g.cur.oldRSs, g.cur.newRS))
	dec := gray.DecideSync(ctx, g.syncFacts(id, recordedHold, scaling))
	if done, err := g.takeCourse(ctx, dec.Course); done || err != nil {
		return err
	}
	g.takeGates(dec.Gates)
	scaled, done, err := g.takeMove(ctx, dec.Move)
	if done || err != nil {
		return err
	}
	if g.cur.d.Spec.Paused || (!scaled && deployutil.DeploymentComplete(g.cur.d, &g.cur.d.Status)) {
		if err := gs.port.CleanupDeployment(ctx, g.cur.oldRSs, g.cur.d); err != nil {
			return err
		}
	}
	if err := gs.mirrorRecord(ctx, g.cur.d, deployutil.WithNewRS(g.cur.oldRSs, g.cur.newRS)); err != nil {
		return err
	}
	if err := g.report(ctx); err != nil {
		return err
	}
	g.handOverLease(ctx, dec.HandOver)
	return nil
}

// syncFacts is what this sync decides from (gray.DecideSync), read once the rollout in flight is
// identified (id). recordedHold: the status read recorded our hold, even if it turned out
// untrusted (a sync that renumbered the new ReplicaSet and stopped before its status write
// leaves one); scaling: spec.replicas changed.
func (g *graySync) syncFacts(id gray.Identity, recordedHold, scaling bool) gray.SyncFacts {
	d := g.cur.d
	// An unreadable request is no request: the move drops it with the reason.
	req, _ := grayapi.ParseResume(d.Annotations[grayapi.ResumeAnnotation])
	return gray.SyncFacts{Status: g.st, Prev: g.in.prev, HasPrev: g.in.hasPrev, Request: req, Points: g.in.points, Policy: g.in.policy,
		Deployment: d, NewRS: g.cur.newRS, OldRSs: g.cur.oldRSs, HeldByUs: id.HeldByUs(g.in.prev, g.in.hasPrev),
		PausedByUs: d.Spec.Paused && (recordedHold || id.RederivedHold), NewRollout: id.NewRollout, Scaling: scaling,
		ModePaused: g.mode.pausedByItsUser(), Gates: g.gateEvidence(), LeaderInStable: g.gs.leaderInStable(d, g.cur.oldRSs), Now: g.in.now}
}

// metaNow is the sync's clock as an API timestamp.
func (in grayInputs) metaNow() metav1.Time { return metav1.NewTime(in.now) }

// statusOnServer is our status as the server has it now: as read, or as this sync last wrote
// it (every write adopts what the server answered). ok: it names a rollout.
func (g *graySync) statusOnServer() (st grayapi.Status, ok bool) {
	st, _, err := grayapi.RecordedStatus(g.cur.server.Annotations)
	return st, err == nil && st.Revision > 0
}
