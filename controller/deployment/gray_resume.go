package deployment

// Leaving a hold: kubegray.io/resume, a plain unpause of our hold, or a kubegray.io/hold-for
// that ran out moves the rollout on to its next step (decideResume, pure); takeResume carries
// the decision out.

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// resumeFacts is what decideResume decides from.
type resumeFacts struct {
	d *appsv1.Deployment
	// st is the rollout in flight, points its hold points.
	st     grayapi.Status
	points []int32
	// heldByUs: our hold, heldAt recorded for this revision (rolloutIdentity.heldByUs).
	heldByUs bool
	// holdFor is kubegray.io/hold-for, and timedHoldDue whether it ran out (timedHoldDue).
	holdFor      time.Duration
	timedHoldDue bool
	// holdInPlace: the ReplicaSets stand at the hold; stableGone: there is no going back.
	holdInPlace, stableGone bool
}

// resumeDecision is what decideResume decided.
type resumeDecision struct {
	// step is the step the rollout moves on to; resumed the GrayResumed event's message, empty
	// when the rollout does not move.
	step    int32
	resumed string
	// consume: kubegray.io/resume goes with the next write; ignored is the GrayResumeIgnored
	// Warning's message when the request is dropped unserved.
	consume bool
	ignored string
	// waits: the request stays until the hold stands again.
	waits bool
}

// decideResume decides whether the rollout leaves its hold. A plain unpause of our hold and a
// hold-for that ran out move it one step; a kubegray.io/resume request for the revision in
// flight moves it one step (next) or to the end (full) once the hold stands, is kept while a
// scaling event is absorbed, and is dropped with the reason when it names another revision, a
// rollout that is not held, or is unreadable. Undo, abort and retry requests are takeUndo's
// (gray_failure.go) and serveAbort's (gray_abort.go).
func decideResume(f resumeFacts) resumeDecision {
	st := f.st
	value, requested := f.d.Annotations[grayapi.ResumeAnnotation]
	if !requested {
		switch {
		case !f.d.Spec.Paused && f.heldByUs:
			return resumeDecision{step: st.Step + 1, resumed: fmt.Sprintf("Revision %d unpaused at %d%%: moving on to %s",
				st.Revision, st.Percent, nextShare(f.points, st.Step+1))}
		case f.heldByUs && f.timedHoldDue:
			return resumeDecision{step: st.Step + 1, resumed: fmt.Sprintf("Revision %d held at %d%% for %s (%s): moving on to %s",
				st.Revision, st.Percent, f.holdFor, grayapi.HoldForAnnotation, nextShare(f.points, st.Step+1))}
		}
		return resumeDecision{}
	}
	ignore := func(format string, args ...any) resumeDecision {
		why := fmt.Sprintf(format, args...)
		return resumeDecision{consume: true, ignored: fmt.Sprintf("Ignored %s=%s: %s", grayapi.ResumeAnnotation, grayapi.QuoteValue(value), why)}
	}
	req, err := grayapi.ParseResume(value)
	switch {
	case err != nil:
		// The parse error quotes the value already; quoting it twice would double the event.
		return resumeDecision{consume: true, ignored: fmt.Sprintf("Ignored %s: %v", grayapi.ResumeAnnotation, err)}
	case req.Undo || req.Abort || req.Retry:
		// takeUndo's and serveAbort's, which have served it or said why not.
		return resumeDecision{consume: true}
	case req.Revision != st.Revision:
		return ignore("revision %d is not the rollout in flight (revision %d)", req.Revision, st.Revision)
	case !f.heldByUs:
		return ignore("revision %d is not held (phase %s)", req.Revision, st.Phase)
	case !f.holdInPlace && !f.stableGone:
		// The hold point was reached, but a scaling event (or a restore after someone else
		// resized a ReplicaSet) is still being absorbed: the next step starts from the settled
		// share.
		return resumeDecision{waits: true}
	}
	step := st.Step + 1
	if req.Full {
		step = int32(len(f.points))
	}
	return resumeDecision{step: step, consume: true,
		resumed: fmt.Sprintf("Revision %d resumed at %d%%: moving on to %s", st.Revision, st.Percent, nextShare(f.points, step))}
}

// nextShare names where a rollout at step goes.
func nextShare(points []int32, step int32) string {
	if int(step) >= len(points) {
		return "all replicas"
	}
	return fmt.Sprintf("%d%%", points[step])
}

// takeResume carries out decideResume and reports whether the rollout moved on.
func (g *graySync) takeResume(ctx context.Context, heldByUs bool) bool {
	dec := decideResume(resumeFacts{
		d: g.cur.d, st: g.st, points: g.in.points, heldByUs: heldByUs, holdFor: g.in.policy.HoldFor, timedHoldDue: g.timedHoldDue(),
		holdInPlace: g.holdInPlace(), stableGone: g.stableGone(),
	})
	if dec.consume {
		g.removeResume = true
	}
	if dec.ignored != "" {
		g.dc.eventRecorder.Eventf(g.cur.d, corev1.EventTypeWarning, grayapi.ReasonGrayResumeIgnored, "%s", dec.ignored)
	}
	if dec.waits {
		klog.FromContext(ctx).V(2).Info("Gray resume waits for the hold to settle", "deployment", klog.KObj(g.cur.d),
			"revision", g.st.Revision, "target", g.st.Target)
	}
	if dec.resumed == "" {
		return false
	}
	g.st.Step = dec.step
	g.st.HeldAt = nil
	g.st.Phase = grayapi.PhaseProgressing
	g.dc.eventRecorder.Eventf(g.cur.d, corev1.EventTypeNormal, grayapi.ReasonGrayResumed, "%s", dec.resumed)
	klog.FromContext(ctx).V(2).Info("Gray rollout resumed", "deployment", klog.KObj(g.cur.d), "revision", g.st.Revision, "step", g.st.Step)
	return true
}

// timedHoldDue reports whether kubegray.io/hold-for has run out on a hold that was reported
// Held (settled) and still stands: counted from the first time this step was Held, so that
// scaling events under the hold do not postpone it. A hold the user paused is not resumed.
func (g *graySync) timedHoldDue() bool {
	if g.in.policy.HoldFor <= 0 || g.pausedByUser() || !g.cur.d.Spec.Paused {
		return false
	}
	settledAt := g.in.prev.SettledAt
	if g.in.prev.Phase != grayapi.PhaseHeld || settledAt == nil || g.in.prev.Revision != g.st.Revision || g.in.prev.Step != g.st.Step ||
		int(g.st.Step) >= len(g.in.points) || !g.holdInPlace() {
		return false
	}
	return !g.dc.now().Before(settledAt.Add(g.in.policy.HoldFor))
}
