package graysync

import (
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"

	"github.com/kubegray/kubectl-gray/controller/metrics"
	"github.com/kubegray/kubectl-gray/pkg/deployutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// GrayRollouts are the gray Deployments of the cache whose status gray-controller has reported,
// for the per-rollout series (metrics.RegisterRollouts), read at each scrape. A status that does
// not parse is left out: the Deployment's Invalid phase and its events say why.
func (gs *Controller) GrayRollouts() []metrics.Rollout {
	ds, err := gs.port.DeploymentLister().List(labels.Everything())
	if err != nil {
		return nil
	}
	var out []metrics.Rollout
	for _, d := range ds {
		_, gray := d.Annotations[grayapi.PercentAnnotation]
		st, reported, err := grayapi.RecordedStatus(d.Annotations)
		if !gray || !reported || err != nil {
			continue
		}
		r := metrics.Rollout{Namespace: d.Namespace, Name: d.Name, Status: st, Replicas: ptr.Deref(d.Spec.Replicas, 1)}
		// A policy that does not parse times nothing: the Deployment is Invalid.
		policy, _ := grayapi.ParsePolicy(d.Annotations)
		_, userPaused := d.Annotations[grayapi.PausedAnnotation]
		if at, timed := grayapi.TimedResumeAt(st, policy.HoldForAt(st.Step), userPaused); timed {
			r.HoldEnds = &at
		}
		if rs := gs.cachedReplicaSetAt(d, st.Revision); rs != nil {
			r.CanaryAvailable = rs.Status.AvailableReplicas
		}
		out = append(out, r)
	}
	return out
}

// cachedReplicaSetAt is the cached ReplicaSet d controls at revision (nil when there is none),
// found through the cache's index by controller: a scrape then reads each gray Deployment's own
// ReplicaSets, not its namespace's once per gray Deployment.
func (gs *Controller) cachedReplicaSetAt(d *appsv1.Deployment, revision int64) *appsv1.ReplicaSet {
	rss, err := gs.port.ReplicaSetsControlledBy(d.UID)
	if err != nil {
		return nil
	}
	for _, rs := range rss {
		if rs.Namespace != d.Namespace {
			continue
		}
		if rev, err := deployutil.Revision(rs); err == nil && rev == revision {
			return rs
		}
	}
	return nil
}
