package graysync

// The executor's side of handing the lease over (controller/gray/handover.go): who this process
// is among its own Deployment's pods, and stepping down once the sync's writes have landed.

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// leaderInStable reports whether this process is a pod of one of d's old ReplicaSets. It looks
// only when hand-overs were asked for and d is in this pod's namespace: for every other
// Deployment it costs nothing.
func (gs *Controller) leaderInStable(d *appsv1.Deployment, oldRSs []*appsv1.ReplicaSet) bool {
	if gs.handOver == nil || gs.self.Name == "" || d.Namespace != gs.self.Namespace {
		return false
	}
	podMap, err := gs.port.GetPodMapForDeployment(d, oldRSs)
	if err != nil {
		return false
	}
	for _, pods := range podMap {
		for _, pod := range pods {
			if pod.Name == gs.self.Name && pod.Namespace == gs.self.Namespace {
				return true
			}
		}
	}
	return false
}

// handOverLease steps this leader down when the sync decided so (the reason says why): the event
// on the Deployment first, so that the hand-over shows where people look.
func (g *graySync) handOverLease(ctx context.Context, reason string) {
	if reason == "" || g.gs.handOver == nil {
		return
	}
	klog.FromContext(ctx).Info("Handing the lease over", "deployment", klog.KObj(g.cur.d), "pod", g.gs.self, "reason", reason)
	g.gs.eventRecorder.Eventf(g.cur.d, corev1.EventTypeNormal, grayapi.ReasonGrayLeaseHandedOver, "%s: %s", g.gs.self.Name, reason)
	g.gs.handOver(reason)
}
