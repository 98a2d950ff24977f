package graysync

// The sync of a rollout with an unreadable gray annotation (controller/gray: decideInvalid, through Decide): it
// scales and it aborts, and its progress stays stopped until the value is fixed.

import (
	"context"
	"fmt"

	"github.com/kubegray/kubectl-gray/controller/gray"

	"k8s.io/klog/v2"

	"github.com/kubegray/kubectl-gray/controller/metrics"
	"github.com/kubegray/kubectl-gray/pkg/deployutil"
)

// reportInvalid carries out the decision for an invalid gray annotation (gray.Plan.Invalid;
// problem is why it is invalid): an abort served first, any other request (an unpause of our hold
// too, the hold written back) dropped, the rollout's
// progress held where it is with phase Invalid, a scaling event carried out with the share of the
// last valid status, then the status and the GrayInvalid Warning.
func (g *graySync) reportInvalid(ctx context.Context, dec gray.InvalidDecision, problem string) error {
	d := g.cur.d
	if dec.Abort != nil {
		g.st = g.in.prev
		if done, err := g.takeCourse(ctx, *dec.Abort); done || err != nil {
			return err
		}
	}
	if dec.Ignored != "" {
		g.dropRequest(dec.Ignored)
	}
	g.st = dec.Status
	klog.FromContext(ctx).V(2).Info("Gray rollout stopped", "deployment", klog.KObj(d), "err", problem)
	if dec.KeepHold != "" {
		// Said once the hold is written back (holdWritten), as a dropped request is.
		g.dropped = append(g.dropped, dec.KeepHold)
	}
	if g.removeResume || dec.KeepHold != "" {
		if err := g.writeHold(ctx, d.Spec.Paused || dec.KeepHold != ""); err != nil {
			return err
		}
	}
	if plan := dec.Sizes; plan != nil {
		klog.FromContext(ctx).V(2).Info("Scaling an invalid gray deployment", "deployment", klog.KObj(d), "replicas", *d.Spec.Replicas,
			"target", g.st.Target, "newReplicas", plan.NewSize, "oldReplicas", plan.OldSizes)
		if _, err := g.apply(ctx, *plan); err != nil {
			return fmt.Errorf("deployment %s/%s: scaling to %d replicas while invalid: %w", d.Namespace, d.Name, *d.Spec.Replicas, err)
		}
	}

	newStatus := g.gs.port.CalculateStatus(deployutil.WithNewRS(g.cur.oldRSs, g.cur.newRS), g.cur.newRS, d)
	if d.Spec.Paused {
		setPausedCondition(&newStatus, d, g.in.metaNow())
	}
	updated, err := g.withStatus(ctx, newStatus, 0)
	if err != nil {
		return err
	}
	if _, err := g.mode.persistStatus(ctx, g.cur.server, updated); err != nil {
		return fmt.Errorf("deployment %s/%s: writing status (gray phase Invalid): %w", d.Namespace, d.Name, err)
	}
	if err := g.emit(ctx, dec.Events); err != nil {
		return err
	}
	metrics.SetGrayPhase(g.in.key, g.st.Phase)
	return nil
}
