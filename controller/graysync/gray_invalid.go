package graysync

// The sync of a rollout with an unreadable gray annotation (controller/gray: DecideInvalid): it
// scales and it aborts, and its progress stays stopped until the value is fixed.

import (
	"context"
	"fmt"

	"github.com/kubegray/kubectl-gray/controller/gray"

	"k8s.io/klog/v2"

	"github.com/kubegray/kubectl-gray/controller/metrics"
	"github.com/kubegray/kubectl-gray/pkg/deployutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// reportInvalid carries out gray.DecideInvalid for an invalid gray annotation (kubegray.io/percent,
// on-failure or hold-for): an abort served first, any other request dropped, the rollout's
// progress held where it is with phase Invalid, a scaling event carried out with the share of the
// last valid status, then the status and the GrayInvalid Warning.
func (g *graySync) reportInvalid(ctx context.Context, perr error) error {
	d := g.cur.d
	// Found, not synced: a stopped rollout does not even copy annotations to its ReplicaSets.
	_, g.cur.oldRSs = deployutil.FindOldReplicaSets(d, g.in.rsList)
	g.cur.newRS = deployutil.FindNewReplicaSet(d, g.in.rsList)
	dec := gray.DecideInvalid(ctx, gray.InvalidFacts{Problem: perr.Error(), Prev: g.in.prev, HasPrev: g.in.hasPrev, Deployment: d,
		NewRS: g.cur.newRS, OldRSs: g.cur.oldRSs,
		Aborted: gray.AbortRecorded(g.cur.newRS) || (g.in.hasPrev && g.in.prev.Phase == grayapi.PhaseAborted),
		Scaling: deployutil.ReplicasChanged(ctx, d, deployutil.WithNewRS(g.cur.oldRSs, g.cur.newRS)), Policy: g.in.policy, Now: g.in.now})
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
	klog.FromContext(ctx).V(2).Info("Gray rollout stopped", "deployment", klog.KObj(d), "err", perr)
	if g.removeResume {
		if err := g.writeHold(ctx, d.Spec.Paused); err != nil {
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
	updated, err := g.withStatus(newStatus, 0)
	if err != nil {
		return err
	}
	if _, err := g.mode.persistStatus(ctx, g.gs, g.cur.server, updated); err != nil {
		return fmt.Errorf("deployment %s/%s: writing status (gray phase Invalid): %w", d.Namespace, d.Name, err)
	}
	if err := g.emit(ctx, dec.Events); err != nil {
		return err
	}
	metrics.SetGrayPhase(g.in.key, g.st.Phase)
	return nil
}
