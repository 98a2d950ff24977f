package graysync

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

	"github.com/kubegray/kubectl-gray/controller/deployment"
	"github.com/kubegray/kubectl-gray/controller/gray"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/kubegray/kubectl-gray/controller/metrics"
	"github.com/kubegray/kubectl-gray/pkg/deployutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// startAbort records the abort on the canary's ReplicaSet, before any other write of it.
func (g *graySync) startAbort(ctx context.Context, failure *grayapi.Failure) error {
	rs := g.cur.newRS
	rev := strconv.FormatInt(g.st.Revision, 10)
	written, err := g.gs.patchReplicaSetMeta(ctx, rs, "labels", map[string]any{grayapi.AbortedLabel: rev})
	if err != nil {
		return fmt.Errorf("deployment %s/%s: recording the abort of revision %d on replica set %s: %w", g.cur.d.Namespace, g.cur.d.Name,
			g.st.Revision, rs.Name, err)
	}
	g.cur.newRS = written
	g.gs.eventRecorder.Eventf(g.cur.d, corev1.EventTypeWarning, grayapi.ReasonGrayAborted,
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
			written, err := g.gs.patchReplicaSetMeta(ctx, rs, "labels", map[string]any{grayapi.AbortedLabel: nil})
			if err != nil {
				return fmt.Errorf("deployment %s/%s: removing the abort record of revision %d from replica set %s: %w", g.cur.d.Namespace,
					g.cur.d.Name, g.st.Revision, rs.Name, err)
			}
			g.cur.newRS = written
		}
	}
	g.st = gray.Retried(g.st)
	if err := deployment.ConfirmLive(ctx); err != nil {
		return err
	}
	g.gs.eventRecorder.Eventf(g.cur.d, corev1.EventTypeNormal, grayapi.ReasonGrayRetried, "Revision %d retried: rolling it to its first hold point again",
		g.st.Revision)
	return nil
}

// syncAborted carries out the aborted sync decided with the course (gray.AbortedSync): the
// status saying so first (with our hold, which an abort leaves, and a consumed request), then the
// sizes back to the stable revision, then the status with the counts.
func (g *graySync) syncAborted(ctx context.Context, dec gray.AbortedSync) error {
	g.st = dec.Status
	if dec.LeavesHold || g.removeResume {
		if err := g.writeHold(ctx, dec.Paused); err != nil {
			return err
		}
	}
	if dec.Sizes != nil {
		if _, err := g.apply(ctx, *dec.Sizes); err != nil {
			return err
		}
	}
	if err := g.gs.mirrorRecord(ctx, g.cur.d, deployutil.WithNewRS(g.cur.oldRSs, g.cur.newRS)); err != nil {
		return err
	}
	g.st = dec.Reported
	return g.reportAborted(ctx, dec.Progressing)
}

// reportAborted writes the status of an aborted rollout: upstream's counts, Stalled True and
// GrayHeld False with reason Aborted, and the Progressing condition decided, where the mode
// keeps it.
func (g *graySync) reportAborted(ctx context.Context, progressing *appsv1.DeploymentCondition) error {
	d := g.cur.d
	newStatus := g.gs.port.CalculateStatus(deployutil.WithNewRS(g.cur.oldRSs, g.cur.newRS), g.cur.newRS, d)
	if progressing != nil {
		g.mode.mirrorProgressing(&newStatus, *progressing)
	}
	gray.SetConditions(&newStatus, g.st, *d.Spec.Replicas, len(g.in.points), g.in.metaNow())
	updated := d.DeepCopy()
	updated.Status = newStatus
	if err := g.setStatusAnnotation(ctx, updated); err != nil {
		return err
	}
	if err := g.writeStatus(ctx, updated); err != nil {
		return err
	}
	metrics.SetGrayPhase(g.in.key, g.st.Phase)
	return nil
}
