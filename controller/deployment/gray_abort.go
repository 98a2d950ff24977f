package deployment

// Aborting a gray rollout (docs/design.md: failing canaries): the canary's ReplicaSet goes to 0
// and the stable revision's back to every replica, by sizes alone, while spec.template stays as
// its author (Git) wrote it, so a GitOps tool's self-heal finds nothing to apply again. An abort
// comes from kubegray.io/on-failure: abort, in the sync after the one that recorded the step
// Degraded (so every reader saw the failure before anything moved), or from a person
// ("<rev>:abort", `kubectl gray abort`). It lasts until the template changes (a new revision, a
// new rollout) or "<rev>:retry" starts the same revision again at its first hold point.
//
// The record of an abort is the label kubegray.io/aborted=<revision> on the canary's ReplicaSet,
// put on before anything else: a lost or forged kubegray.io/status cannot roll the failed canary
// out again.

import (
	"context"
	"fmt"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/kubegray/kubectl-gray/controller/metrics"
	"github.com/kubegray/kubectl-gray/pkg/deployutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
	"github.com/kubegray/kubectl-gray/pkg/rollout"
)

// abortRecorded reports whether rs carries the abort label of its own revision; a label of
// another revision was left by an earlier rollout of the same template and means nothing now.
func abortRecorded(rs *appsv1.ReplicaSet) bool {
	if rs == nil {
		return false
	}
	value, ok := rs.Labels[grayapi.AbortedLabel]
	return ok && value == strconv.FormatInt(revisionOf(rs), 10)
}

// isAborted reports whether the rollout in flight is aborted: its ReplicaSet's record says so,
// or the status identify trusted does.
func (g *graySync) isAborted() bool {
	return abortRecorded(g.cur.newRS) || (g.st.Phase == grayapi.PhaseAborted && g.in.hasPrev && g.in.prev.Revision == g.st.Revision)
}

// abortRequest is what this sync does about aborting; the zero value is nothing.
type abortRequest int

const (
	// abortStart: abort the rollout in flight now.
	abortStart abortRequest = iota + 1
	// abortRetry: an aborted rollout starts again at its first hold point.
	abortRetry
)

// abortFacts is what decideAbort decides from.
type abortFacts struct {
	// st is the rollout in flight (identify); prev the status read, hasPrev whether trusted.
	st, prev grayapi.Status
	hasPrev  bool
	// request is kubegray.io/resume parsed (zero when absent or unreadable).
	request  grayapi.Resume
	aborted  bool
	policy   grayapi.Policy
	hasNewRS bool
	// stableRS: a ReplicaSet of the stable revision is left to go back to.
	stableRS bool
}

// abortDecision is what decideAbort decided.
type abortDecision struct {
	what abortRequest
	// failure is the failure an abort records: the step's own, or ReasonAborted for a person's
	// abort of a rollout that had not failed.
	failure *grayapi.Failure
	// ignored is the GrayResumeIgnored Warning's message for a request that cannot be served;
	// consume: the request goes with the next write.
	ignored string
	consume bool
}

// decideAbort decides whether this sync aborts, retries or neither. An abort needs a rollout in
// flight with a stable ReplicaSet to go back to; on-failure: abort acts only on a Degraded step
// that the status read already reported, so that the failure reached every reader first.
//
//	Degraded read, on-failure abort, stable left      → abortStart with the step's failure
//	"3:abort" on revision 3 held at 20%               → abortStart, failure Aborted
//	"3:retry" on revision 3 aborted                   → abortRetry
//	"3:retry" on revision 3 not aborted, "2:abort"    → ignored, with the reason
func decideAbort(f abortFacts) abortDecision {
	st, req := f.st, f.request
	inFlight := f.hasNewRS && st.StableRevision > 0 && st.StableRevision != st.Revision &&
		st.Phase != grayapi.PhaseComplete && st.Phase != grayapi.PhaseRolledBack
	ignore := func(format string, args ...any) abortDecision {
		return abortDecision{consume: true, ignored: fmt.Sprintf(format, args...)}
	}
	switch {
	case req.Retry && req.Revision != st.Revision, req.Abort && req.Revision != st.Revision:
		return ignore("revision %d is not the rollout in flight (revision %d)", req.Revision, st.Revision)
	case req.Retry && !f.aborted:
		return ignore("revision %d is not aborted (phase %s)", req.Revision, st.Phase)
	case req.Retry:
		return abortDecision{what: abortRetry, consume: true}
	case req.Abort && f.aborted:
		return abortDecision{consume: true}
	case req.Abort && !inFlight:
		return ignore("revision %d has no rollout in flight to abort (phase %s, stable revision %d)", req.Revision, st.Phase, st.StableRevision)
	case req.Abort && !f.stableRS:
		return ignore("no replica set of stable revision %d is left to go back to", st.StableRevision)
	case req.Abort:
		failure := &grayapi.Failure{Reason: grayapi.ReasonAborted,
			Message: fmt.Sprintf("revision %d was aborted at %d%% on request", st.Revision, st.Percent)}
		if f.hasPrev && f.prev.Revision == st.Revision && f.prev.Failure != nil && f.prev.Phase == grayapi.PhaseDegraded {
			failure = f.prev.Failure
		}
		return abortDecision{what: abortStart, failure: failure, consume: true}
	}
	degradedRead := f.hasPrev && f.prev.Phase == grayapi.PhaseDegraded && f.prev.Revision == st.Revision && f.prev.Failure != nil
	if !f.aborted && degradedRead && f.policy.OnFailure == grayapi.OnFailureAbort && inFlight && f.stableRS {
		return abortDecision{what: abortStart, failure: f.prev.Failure}
	}
	return abortDecision{}
}

// serveAbort carries out decideAbort and, for an aborted rollout, the whole aborted sync. It
// reports whether the sync is done; a retry lets the rollout go on from its first hold point.
func (g *graySync) serveAbort(ctx context.Context) (bool, error) {
	value, requested := g.cur.d.Annotations[grayapi.ResumeAnnotation]
	var req grayapi.Resume
	if requested {
		req, _ = grayapi.ParseResume(value)
	}
	aborted := g.isAborted()
	dec := decideAbort(abortFacts{st: g.st, prev: g.in.prev, hasPrev: g.in.hasPrev, request: req, aborted: aborted,
		policy: g.in.policy, hasNewRS: g.cur.newRS != nil, stableRS: g.stableForRollback() != nil})
	if dec.consume {
		g.removeResume = true
	}
	if dec.ignored != "" {
		g.dc.eventRecorder.Eventf(g.cur.d, corev1.EventTypeWarning, grayapi.ReasonGrayResumeIgnored, "Ignored %s=%s: %s",
			grayapi.ResumeAnnotation, grayapi.QuoteValue(value), dec.ignored)
	}
	switch dec.what {
	case abortRetry:
		return false, g.retry(ctx)
	case abortStart:
		if err := g.startAbort(ctx, dec.failure); err != nil {
			return true, err
		}
		aborted = true
	}
	if !aborted {
		return false, nil
	}
	return true, g.syncAborted(ctx)
}

// startAbort records the abort on the canary's ReplicaSet, before any other write of it.
func (g *graySync) startAbort(ctx context.Context, failure *grayapi.Failure) error {
	rs := g.cur.newRS
	rev := strconv.FormatInt(g.st.Revision, 10)
	written, err := g.dc.patchReplicaSetMeta(ctx, rs, "labels", map[string]any{grayapi.AbortedLabel: rev})
	if err != nil {
		return fmt.Errorf("deployment %s/%s: recording the abort of revision %d on replica set %s: %w", g.cur.d.Namespace, g.cur.d.Name,
			g.st.Revision, rs.Name, err)
	}
	g.cur.newRS = written
	g.st.Failure = failure
	g.dc.eventRecorder.Eventf(g.cur.d, corev1.EventTypeWarning, grayapi.ReasonGrayAborted,
		"Revision %d aborted at %d%% (%s): scaling replica set %s to 0 and stable revision %d back to %d replicas; the template is kept",
		g.st.Revision, g.st.Percent, failure.Reason, rs.Name, g.st.StableRevision, *g.cur.d.Spec.Replicas)
	klog.FromContext(ctx).V(2).Info("Gray rollout aborted", "deployment", klog.KObj(g.cur.d), "revision", g.st.Revision,
		"stableRevision", g.st.StableRevision, "reason", failure.Reason)
	return nil
}

// retry starts an aborted rollout again at its first hold point: the record goes first, so that
// a sync stopped after it finds the request still there and the status still Aborted.
func (g *graySync) retry(ctx context.Context) error {
	if rs := g.cur.newRS; rs != nil {
		if _, marked := rs.Labels[grayapi.AbortedLabel]; marked {
			written, err := g.dc.patchReplicaSetMeta(ctx, rs, "labels", map[string]any{grayapi.AbortedLabel: nil})
			if err != nil {
				return fmt.Errorf("deployment %s/%s: removing the abort record of revision %d from replica set %s: %w", g.cur.d.Namespace,
					g.cur.d.Name, g.st.Revision, rs.Name, err)
			}
			g.cur.newRS = written
		}
	}
	g.st.Step = 0
	g.st.Phase = grayapi.PhaseProgressing
	g.st.Failure, g.st.Progress, g.st.SettledAt, g.st.HeldAt = nil, nil, nil, nil
	g.dc.eventRecorder.Eventf(g.cur.d, corev1.EventTypeNormal, grayapi.ReasonGrayRetried, "Revision %d retried: rolling it to its first hold point again",
		g.st.Revision)
	return nil
}

// syncAborted is the sync of an aborted rollout: the status saying so goes first (with our
// hold, which an abort leaves, and a consumed request), then the sizes back to the stable
// revision (PlanGrayAbort), then the status with the counts.
func (g *graySync) syncAborted(ctx context.Context) error {
	d := g.cur.d
	st := &g.st
	st.Phase = grayapi.PhaseAborted
	st.Target = 0
	st.HeldAt, st.Progress, st.SettledAt = nil, nil, nil
	if st.Failure == nil {
		// Re-derived from the record: the status that said why was lost.
		st.Failure = &grayapi.Failure{Reason: grayapi.ReasonAborted,
			Message: fmt.Sprintf("replica set %s carries %s=%d", g.cur.newRS.Name, grayapi.AbortedLabel, st.Revision)}
	}
	g.describeAbort()
	ourHold := d.Spec.Paused && g.in.hasPrev && g.in.prev.HeldAt != nil
	if ourHold || g.removeResume {
		if err := g.writeHold(ctx, d.Spec.Paused && !ourHold); err != nil {
			return err
		}
	}
	if stable := g.stableForRollback(); stable != nil {
		if _, err := g.apply(ctx, planAbortSizes(g.cur.d, stable, g.cur.newRS, g.cur.oldRSs)); err != nil {
			return err
		}
	}
	if err := g.dc.mirrorRecord(ctx, g.cur.d, withNewRS(g.cur.oldRSs, g.cur.newRS)); err != nil {
		return err
	}
	return g.reportAborted(ctx)
}

// describeAbort sets the message of an aborted rollout, with the stable revision's replicas as
// this sync left them.
func (g *graySync) describeAbort() {
	st := &g.st
	var stable int32
	if rs := g.stableForRollback(); rs != nil {
		stable = *rs.Spec.Replicas
	}
	st.Message = fmt.Sprintf("revision %d aborted (%s: %s); stable revision %d runs %d of %d replicas; kubectl gray retry %s, or a new template, starts again",
		st.Revision, st.Failure.Reason, st.Failure.Message, st.StableRevision, stable, *g.cur.d.Spec.Replicas, g.cur.d.Name)
}

// planAbortSizes is PlanGrayAbort for stable and every other ReplicaSet of d, the canary first.
func planAbortSizes(d *appsv1.Deployment, stable, newRS *appsv1.ReplicaSet, oldRSs []*appsv1.ReplicaSet) sizePlan {
	var leaving []*appsv1.ReplicaSet
	if newRS != nil {
		leaving = append(leaving, newRS)
	}
	for _, rs := range oldRSs {
		if rs.UID != stable.UID {
			leaving = append(leaving, rs)
		}
	}
	in := rollout.GrayAbortInput{Replicas: *d.Spec.Replicas, Surge: deployutil.MaxSurge(*d), Unavailable: deployutil.MaxUnavailable(*d),
		Stable: grayReplicaSet(stable), Leaving: make([]rollout.GrayReplicaSet, len(leaving))}
	for i, rs := range leaving {
		in.Leaving[i] = grayReplicaSet(rs)
	}
	stableSize, leavingSizes := rollout.PlanGrayAbort(in)
	// apply writes the new ReplicaSet first, then the old ones in the order given.
	plan := sizePlan{kind: sizesRestored, old: []*appsv1.ReplicaSet{stable}, oldSizes: []int32{stableSize}}
	if newRS != nil {
		plan.newSize = leavingSizes[0]
		leaving, leavingSizes = leaving[1:], leavingSizes[1:]
	}
	plan.old = append(plan.old, leaving...)
	plan.oldSizes = append(plan.oldSizes, leavingSizes...)
	return plan
}

// reportAborted writes the status of an aborted rollout: upstream's counts, Stalled True and
// GrayHeld False with reason Aborted, and in instead mode Progressing False with
// ProgressDeadlineExceeded, the one reason `kubectl rollout status` reports as a failure.
func (g *graySync) reportAborted(ctx context.Context) error {
	d := g.cur.d
	g.describeAbort()
	allRSs := withNewRS(g.cur.oldRSs, g.cur.newRS)
	newStatus := g.dc.calculateStatus(allRSs, g.cur.newRS, d)
	if g.mode.ownsProgressing() && deployutil.HasProgressDeadline(d) {
		cond := deployutil.GetDeploymentCondition(newStatus, appsv1.DeploymentProgressing)
		if cond == nil || cond.Reason != deployutil.TimedOutReason || cond.Message != g.st.Message {
			deployutil.SetDeploymentCondition(&newStatus, *deployutil.NewDeploymentCondition(appsv1.DeploymentProgressing,
				corev1.ConditionFalse, deployutil.TimedOutReason, g.st.Message, g.dc.metaNow()))
		}
	}
	setGrayConditions(&newStatus, g.st, *d.Spec.Replicas, len(g.in.points), g.dc.metaNow())
	updated := d.DeepCopy()
	updated.Status = newStatus
	if err := g.setStatusAnnotation(updated); err != nil {
		return err
	}
	if err := g.writeStatus(ctx, updated); err != nil {
		return err
	}
	metrics.SetGrayPhase(g.in.key, g.st.Phase)
	return nil
}
