package graysync

// Carrying out the rollout's move (controller/gray: DecideSync's decideMove), in the order that
// keeps the canary within the target recorded on the Deployment: the resume it decided; our hold,
// the consumed resume request and the status in one write; the ReplicaSet writes
// (gray_scale.go); and the pause when they reach a hold point (gray_hold.go).

import (
	"context"

	"github.com/kubegray/kubectl-gray/controller/deployment"
	"github.com/kubegray/kubectl-gray/controller/gray"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// takeMove carries out m: the hold change, then the deprecated rollback annotation where the mode
// serves it (the sync ends there: done), the ReplicaSet writes and the pause after them.
// scaled: a ReplicaSet's size changed.
func (g *graySync) takeMove(ctx context.Context, m gray.Move) (scaled, done bool, err error) {
	if err := g.takeHoldChange(ctx, m); err != nil {
		return false, false, err
	}
	if served, err := g.mode.serveRollbackTo(ctx, g); served || err != nil {
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
