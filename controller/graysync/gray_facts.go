package graysync

// Gathering what a gray sync decides from (gray.Facts), before anything is decided: the
// annotations, the status read and who wrote it, the ReplicaSets, the pods and measurements the
// gates judge, the mode's and the leader's facts. The one write on the way is upstream's: the new
// ReplicaSet's revision and annotations synced (findNewReplicaSet).

import (
	"context"

	"k8s.io/apimachinery/pkg/types"

	"github.com/kubegray/kubectl-gray/controller/gray"
	"github.com/kubegray/kubectl-gray/pkg/deployutil"
	"github.com/kubegray/kubectl-gray/pkg/gates"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// gather reads this sync's facts, and keeps what the writes after the decision use in g.in and
// g.cur (the hold points, the policy, the gates named, the ReplicaSets).
func (g *graySync) gather(ctx context.Context) (gray.Facts, error) {
	d := g.cur.d
	f := gray.Facts{Deployment: d, Cached: g.in.rsList, ForeignWriter: g.in.statusWriter, ModePaused: g.mode.pausedByItsUser(), Now: g.in.now}
	f.Prev, f.HasPrev = readGrayStatus(ctx, d)
	// An unreadable request is no request: the move drops it with the reason.
	f.Request, _ = grayapi.ParseResume(d.Annotations[grayapi.ResumeAnnotation])
	if err := g.readAnnotations(&f); err != nil {
		f.Problem = err.Error()
		// Found, not synced: a stopped rollout does not even copy annotations to its ReplicaSets.
		_, f.OldRSs = deployutil.FindOldReplicaSets(d, g.in.rsList)
		f.NewRS = deployutil.FindNewReplicaSet(d, g.in.rsList)
	} else {
		_, g.cur.oldRSs = deployutil.FindOldReplicaSets(d, g.in.rsList)
		if f.NewRS, err = g.findNewReplicaSet(ctx); err != nil {
			return f, err
		}
		f.OldRSs = g.cur.oldRSs
		f.Gates, f.Pods = g.gateEvidence(f)
		f.LeaderInStable = g.gs.leaderInStable(d, f.OldRSs)
	}
	g.cur.newRS, g.cur.oldRSs = f.NewRS, f.OldRSs
	// A scaling event is read once: the sync's own writes change neither spec.replicas nor the
	// ReplicaSets' desired-replicas annotations.
	f.Scaling = deployutil.ReplicasChanged(ctx, d, deployutil.WithNewRS(f.OldRSs, f.NewRS))
	return f, nil
}

// readAnnotations parses kubegray.io/percent and the policy, and resolves the gates named,
// stopping at the first that cannot be read.
func (g *graySync) readAnnotations(f *gray.Facts) error {
	var err error
	annotations := g.cur.d.Annotations
	if f.Points, err = grayapi.ParsePercent(annotations[grayapi.PercentAnnotation]); err != nil {
		return err
	}
	g.in.points = f.Points
	if f.Policy, err = grayapi.ParsePolicy(annotations); err != nil {
		return err
	}
	g.in.policy = f.Policy
	g.in.gates, err = g.gs.gates.resolve(g.cur.d.Namespace, f.Policy)
	return err
}

// gateEvidence is what the hold's gates are judged on (gray.Decide fills in the status and the
// clock): the latest measurements taken off the sync path, and the pods of each ReplicaSet as
// the pod cache has them. Without gates nothing more is looked up.
func (g *graySync) gateEvidence(f gray.Facts) (gray.GateFacts, map[types.UID][]gates.Pod) {
	if len(g.in.gates.defs) == 0 {
		return gray.GateFacts{}, nil
	}
	evidence := gray.GateFacts{Gates: g.in.gates.defs, DryRun: g.in.gates.dryRun, Measured: g.gs.measured(f.Deployment.UID, g.in.gates)}
	pods := map[types.UID][]gates.Pod{}
	for _, rs := range deployutil.WithNewRS(f.OldRSs, f.NewRS) {
		pods[rs.UID] = g.gs.port.PodHealth(rs.UID)
	}
	return evidence, pods
}
