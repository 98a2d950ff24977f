package deployment

// Leaving a hold: kubegray.io/resume, a plain unpause of our hold, or a kubegray.io/hold-for
// that ran out moves the rollout on to its next step (DecideResume, pure); takeResume carries
// the decision out.

import (
	"context"

	"github.com/kubegray/kubectl-gray/controller/gray"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// takeResume carries out DecideResume and reports whether the rollout moved on.
func (g *graySync) takeResume(ctx context.Context, heldByUs bool) bool {
	dec := gray.DecideResume(gray.ResumeFacts{
		Deployment: g.cur.d, Status: g.st, Points: g.in.points, HeldByUs: heldByUs, HoldFor: g.in.policy.HoldFor, TimedHoldDue: g.timedHoldDue(),
		HoldInPlace: g.holdInPlace(), StableGone: g.stableGone(),
	})
	if dec.Ignored != "" {
		g.dropRequest(dec.Ignored)
	} else if dec.Consume {
		g.removeResume = true
	}
	if dec.Waits {
		klog.FromContext(ctx).V(2).Info("Gray resume waits for the hold to settle", "deployment", klog.KObj(g.cur.d),
			"revision", g.st.Revision, "target", g.st.Target)
	}
	if dec.Resumed == "" {
		return false
	}
	g.st = gray.Resumed(g.st, dec.Step)
	g.dc.eventRecorder.Eventf(g.cur.d, corev1.EventTypeNormal, grayapi.ReasonGrayResumed, "%s", dec.Resumed)
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
	return !g.in.now.Before(settledAt.Add(g.in.policy.HoldFor))
}

// pausedByUser reports whether the rollout is paused by its user rather than by our hold:
// spec.paused without heldAt, or in alongside mode kubegray.io/paused. Such a pause keeps a
// timed hold (and stops the step's deadline: gray.DecideReport).
func (g *graySync) pausedByUser() bool {
	return (g.cur.d.Spec.Paused && g.st.HeldAt == nil) || g.mode.pausedByItsUser()
}
