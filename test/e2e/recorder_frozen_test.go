package e2e

// The recorder's check of alongside mode's promise: the sizes of a gray Deployment's
// ReplicaSets are gray-controller's alone while it is taken over (the kubegray-freeze policy
// refuses everyone else), so no write of another field manager may change them.

import (
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// checkOnlyGraySizes fails a write that changed rs's spec.replicas (prev is the version before
// it) by a field manager other than gray-controller when rs was frozen, or when the Deployment
// controlling it was taken over at that point of the history.
func checkOnlyGraySizes(rv uint64, rs, prev *appsv1.ReplicaSet, deployments map[string]*deploymentTrack, fail func(uint64, string, ...any)) {
	writer := replicasManager(rs)
	if writer == grayapi.ControllerFieldManager || metav1.GetControllerOf(prev) == nil {
		return
	}
	why := ""
	if prev.Labels[grayapi.FrozenLabel] == grayapi.FrozenLabelValue {
		why = "it was labelled " + grayapi.FrozenLabel
	} else if tr := ownerTrack(rs, deployments); tr != nil {
		if _, taken := tr.d.Annotations[grayapi.StrategyAnnotation]; taken && tr.d.Spec.Paused {
			why = "its deployment " + tr.d.Name + " was taken over"
		}
	}
	if why == "" {
		return
	}
	fail(rv, "replicaset %s resized %d→%d by %s although %s: only gray-controller may size it", rs.Name,
		replicasOf(prev.Spec.Replicas), replicasOf(rs.Spec.Replicas), writer, why)
}
