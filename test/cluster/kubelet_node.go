package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
)

const (
	// nodeHeartbeatInterval is how often the stand-in kubelet renews its Lease
	// and its Ready condition, a kubelet's default.
	nodeHeartbeatInterval = 10 * time.Second
	// nodeLeaseDurationSeconds is the Lease's duration, a kubelet's default:
	// four heartbeats may fail before the node lifecycle controller looks at it.
	nodeLeaseDurationSeconds = 40
	nodeLeaseNamespace       = "kube-node-lease"
)

// nodeAllocatable is the stand-in node's capacity and allocatable alike: it
// reserves nothing for system daemons.
var nodeAllocatable = corev1.ResourceList{
	corev1.ResourceCPU:    resource.MustParse("8"),
	corev1.ResourceMemory: resource.MustParse("16Gi"),
	corev1.ResourcePods:   resource.MustParse("110"),
}

// registerNode creates the Node, or takes over one of that name left by an
// earlier stand-in kubelet, and reports it Ready.
func (k *Kubelet) registerNode(ctx context.Context) error {
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:   k.node,
			Labels: map[string]string{"kubernetes.io/hostname": k.node, "kubernetes.io/os": "linux"},
		},
		Spec: corev1.NodeSpec{
			Taints: []corev1.Taint{{Key: StandInKubeletTaint, Effect: corev1.TaintEffectNoSchedule}},
		},
		Status: corev1.NodeStatus{
			Capacity:    nodeAllocatable,
			Allocatable: nodeAllocatable,
			Addresses:   []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: podIP}},
		},
	}
	setNodeReady(node, metav1.Now())
	created, err := k.cluster.Client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		created, err = k.cluster.Client.CoreV1().Nodes().Get(ctx, k.node, metav1.GetOptions{})
	}
	if err != nil {
		return fmt.Errorf("register node: %w", err)
	}
	k.nodeUID = created.UID
	return k.heartbeat(ctx)
}

// keepNodeReady sends a heartbeat every nodeHeartbeatInterval until ctx ends.
func (k *Kubelet) keepNodeReady(ctx context.Context) {
	defer k.goroutines.Done()
	ticker := time.NewTicker(nodeHeartbeatInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
			if err := k.heartbeat(ctx); err != nil && ctx.Err() == nil {
				k.log.Printf("node %s heartbeat: %v", k.node, err)
			}
		}
	}
}

// heartbeat renews the node's Lease and its Ready condition's heartbeat time,
// either of which the node lifecycle controller reads as the kubelet's sign
// of life.
func (k *Kubelet) heartbeat(ctx context.Context) error {
	return errors.Join(k.renewLease(ctx), k.reportNodeReady(ctx))
}

// renewLease renews kube-node-lease/<node>, creating it (owned by the Node,
// so that it goes with it) when absent.
func (k *Kubelet) renewLease(ctx context.Context) error {
	leases := k.cluster.Client.CoordinationV1().Leases(nodeLeaseNamespace)
	now := metav1.NowMicro()
	spec := coordinationv1.LeaseSpec{
		HolderIdentity:       ptr.To(k.node),
		LeaseDurationSeconds: ptr.To[int32](nodeLeaseDurationSeconds),
		RenewTime:            &now,
	}
	lease, err := leases.Get(ctx, k.node, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = leases.Create(ctx, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: k.node, Namespace: nodeLeaseNamespace,
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: k.node, UID: k.nodeUID}}},
			Spec: spec,
		}, metav1.CreateOptions{})
		return err
	}
	if err != nil {
		return err
	}
	lease.Spec = spec
	_, err = leases.Update(ctx, lease, metav1.UpdateOptions{})
	return err
}

// reportNodeReady writes the Ready condition with a new heartbeat time.
func (k *Kubelet) reportNodeReady(ctx context.Context) error {
	nodes := k.cluster.Client.CoreV1().Nodes()
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		node, err := nodes.Get(ctx, k.node, metav1.GetOptions{})
		if err != nil {
			return err
		}
		setNodeReady(node, metav1.Now())
		_, err = nodes.UpdateStatus(ctx, node, metav1.UpdateOptions{})
		return err
	})
}

// setNodeReady sets the node's Ready condition to True, heartbeat now; its
// transition time changes only when it was not True (the node lifecycle
// controller writes Unknown when heartbeats stop).
func setNodeReady(node *corev1.Node, now metav1.Time) {
	ready := corev1.NodeCondition{
		Type: corev1.NodeReady, Status: corev1.ConditionTrue,
		Reason: "KubeletReady", Message: "stand-in kubelet is posting ready status",
		LastHeartbeatTime: now, LastTransitionTime: now,
	}
	for i, cond := range node.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			if cond.Status == corev1.ConditionTrue {
				ready.LastTransitionTime = cond.LastTransitionTime
			}
			node.Status.Conditions[i] = ready
			return
		}
	}
	node.Status.Conditions = append(node.Status.Conditions, ready)
}
