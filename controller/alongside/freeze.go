package alongside

// Frozen ReplicaSet sizes. While a Deployment
// is taken over, every ReplicaSet it controls carries grayapi.FrozenLabel, and the
// kubegray-freeze admission policy refuses a change of a labelled ReplicaSet's spec.replicas to
// anyone but gray-controller. The built-in deployment controller's paused sync, which still
// resizes a lone active ReplicaSet or empties the old ones next to a saturated new one, is then
// refused instead of moving pods: gray-controller is the only writer of sizes, by construction.
//
// The label goes on before any write of the gray sync (and on a ReplicaSet we create, at
// creation) and comes off before the release, so that the built-in controller is never refused
// on a Deployment it runs again.

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"

	"github.com/kubegray/kubectl-gray/pkg/deployutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// isFrozen reports whether rs carries the freeze label.
func isFrozen(rs *appsv1.ReplicaSet) bool {
	return rs.Labels[grayapi.FrozenLabel] == grayapi.FrozenLabelValue
}

// WithFrozenLabel returns a copy of a ReplicaSet's labels with the freeze label added: in
// alongside mode the deployment controller creates new ReplicaSets frozen.
func WithFrozenLabel(labels map[string]string) map[string]string {
	return deployutil.CloneAndAddLabel(labels, grayapi.FrozenLabel, grayapi.FrozenLabelValue)
}

// controlsFrozenReplicaSets reports whether d controls a frozen ReplicaSet although it is not
// gray: an annotated Deployment deleted with --cascade=orphan and created again without the
// annotation adopts its predecessor's frozen ReplicaSets, which must be thawed, or the built-in
// controller could never size them.
func (c *Controller) controlsFrozenReplicaSets(d *appsv1.Deployment) bool {
	frozen, err := c.host.ReplicaSets(d.Namespace, labels.SelectorFromSet(labels.Set{grayapi.FrozenLabel: grayapi.FrozenLabelValue}))
	if err != nil {
		return false
	}
	for _, rs := range frozen {
		if ref := metav1.GetControllerOf(rs); ref != nil && ref.UID == d.UID {
			return true
		}
	}
	return false
}

// freezeReplicaSets labels every ReplicaSet of rsList (those d controls) that is not frozen yet.
func (c *Controller) freezeReplicaSets(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) error {
	for _, rs := range rsList {
		if isFrozen(rs) || rs.DeletionTimestamp != nil {
			continue
		}
		if _, err := c.host.PatchReplicaSetMeta(ctx, rs, "labels", map[string]any{grayapi.FrozenLabel: grayapi.FrozenLabelValue}); err != nil {
			return fmt.Errorf("deployment %s/%s: freezing the size of replica set %s for its gray rollout: %w", d.Namespace, d.Name, rs.Name, err)
		}
		klog.FromContext(ctx).V(4).Info("Froze replica set", "deployment", klog.KObj(d), "replicaSet", klog.KObj(rs))
	}
	return nil
}

// thawReplicaSets removes the freeze label from every ReplicaSet of rsList that carries it.
func (c *Controller) thawReplicaSets(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) error {
	for _, rs := range rsList {
		if _, labelled := rs.Labels[grayapi.FrozenLabel]; !labelled {
			continue
		}
		if _, err := c.host.PatchReplicaSetMeta(ctx, rs, "labels", map[string]any{grayapi.FrozenLabel: nil}); err != nil {
			return fmt.Errorf("deployment %s/%s: handing the size of replica set %s back: %w", d.Namespace, d.Name, rs.Name, err)
		}
		klog.FromContext(ctx).V(4).Info("Thawed replica set", "deployment", klog.KObj(d), "replicaSet", klog.KObj(rs))
	}
	return nil
}
