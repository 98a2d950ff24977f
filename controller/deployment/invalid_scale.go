package deployment

// What an Invalid gray Deployment still does (gray_status.go: reportInvalid): it scales, and it aborts.
// An invalid annotation freezes the rollout's progress, never the replica count an HPA or a
// person asks for, and never a way back from a failing canary.

import (
	"context"
	"fmt"

	"github.com/kubegray/kubectl-gray/controller/gray"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/klog/v2"

	"github.com/kubegray/kubectl-gray/pkg/deployutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
	"github.com/kubegray/kubectl-gray/pkg/rollout"
)

// serveWhileInvalid serves what a rollout with an invalid annotation can still do: an abort
// (requested, or one already standing) needs no hold point and is carried out; any other
// request is dropped with the reason. It reports whether the sync is done (an aborted one).
func (g *graySync) serveWhileInvalid(ctx context.Context, invalid string) (bool, error) {
	value, requested := g.cur.d.Annotations[grayapi.ResumeAnnotation]
	req, err := grayapi.ParseResume(value)
	if requested && (err != nil || !req.Abort) {
		g.dropRequestWhileInvalid(invalid)
		return false, nil
	}
	if !requested && !g.isAborted() {
		return false, nil
	}
	return g.serveAbort(ctx)
}

// dropRequestWhileInvalid drops a kubegray.io/resume request other than an abort with a Warning:
// it cannot be served while the hold points or the policy are unreadable, and keeping it would
// carry it out by surprise when someone fixes the value.
func (g *graySync) dropRequestWhileInvalid(invalid string) {
	value, requested := g.cur.d.Annotations[grayapi.ResumeAnnotation]
	if !requested {
		return
	}
	if req, err := grayapi.ParseResume(value); err == nil && req.Abort {
		return
	}
	g.dropRequest(fmt.Sprintf("Ignored %s=%s: the rollout is Invalid (%s); fix the annotation first (kubectl gray abort works while Invalid)",
		grayapi.ResumeAnnotation, grayapi.QuoteValue(value), invalid))
}

// scaleWhileInvalid carries out a change of spec.replicas of an Invalid rollout: with the share of
// the last valid status (its percent, the hold kept), as a valid rollout scales
// (GrayScaleSizes), or with upstream's proportional scaling when no valid status was ever
// written. The status with the new target goes first, as for every raised target (prepare).
func (g *graySync) scaleWhileInvalid(ctx context.Context) error {
	d := g.cur.d
	if !deployutil.ReplicasChanged(ctx, d, deployutil.WithNewRS(g.cur.oldRSs, g.cur.newRS)) {
		return nil
	}
	var plan gray.SizePlan
	if g.in.hasPrev {
		g.st.Target = *d.Spec.Replicas
		if g.st.Percent < grayapi.FullPercent {
			g.st.Target = rollout.GrayTarget(*d.Spec.Replicas, g.st.Percent)
		}
		plan = gray.PlanRescale(ctx, gray.SizeFacts{Deployment: d, NewRS: g.cur.newRS, OldRSs: g.cur.oldRSs, Target: g.st.Target,
			StableRevision: g.st.StableRevision, Held: d.Spec.Paused && g.st.HeldAt != nil, Scaling: true})
	} else {
		plan = proportionalPlan(ctx, g.cur.d, g.cur.newRS, g.cur.oldRSs)
	}
	klog.FromContext(ctx).V(2).Info("Scaling an invalid gray deployment", "deployment", klog.KObj(d), "replicas", *d.Spec.Replicas,
		"target", g.st.Target, "newReplicas", plan.NewSize, "oldReplicas", plan.OldSizes)
	if _, err := g.apply(ctx, plan); err != nil {
		return fmt.Errorf("deployment %s/%s: scaling to %d replicas while invalid: %w", d.Namespace, d.Name, *d.Spec.Replicas, err)
	}
	return nil
}

// proportionalPlan is upstream's scale() (deployutil.ScalePlan) as a SizePlan.
func proportionalPlan(ctx context.Context, d *appsv1.Deployment, newRS *appsv1.ReplicaSet, oldRSs []*appsv1.ReplicaSet) gray.SizePlan {
	plan := gray.SizePlan{Kind: gray.SizesScaled, Force: true}
	if newRS != nil {
		plan.NewSize = *newRS.Spec.Replicas
	}
	for _, step := range deployutil.ScalePlan(ctx, d, newRS, oldRSs) {
		if step.ReplicaSet == newRS {
			plan.NewSize = step.Size
			continue
		}
		plan.Old = append(plan.Old, step.ReplicaSet)
		plan.OldSizes = append(plan.OldSizes, step.Size)
	}
	return plan
}
