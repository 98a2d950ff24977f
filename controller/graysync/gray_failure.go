package graysync

// What a failing canary leads to: the reason its pods are not ready, read once when the step
// becomes Degraded (the abort that kubegray.io/on-failure: abort asks for is gray_abort.go's); the
// write of the undo a resource action asks for (decided with the sync's course, gray_course.go);
// and the other way a rollout fails: its stable ReplicaSet disappears while it is in flight.

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"

	"github.com/kubegray/kubectl-gray/pkg/deployutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
	"github.com/kubegray/kubectl-gray/pkg/podhealth"
)

// whyNewPodsNotReady names the most common reason the pods of rs are not ready. The pod cache
// keeps no pod status (it dominates the controller's memory, see deployment.NewDeploymentController), so
// the pods are listed live here, once per Degraded step; a failed list only costs the reason.
func (gs *Controller) whyNewPodsNotReady(ctx context.Context, rs *appsv1.ReplicaSet) string {
	if rs == nil {
		return ""
	}
	selector := labels.Set{appsv1.DefaultDeploymentUniqueLabelKey: rs.Labels[appsv1.DefaultDeploymentUniqueLabelKey]}.AsSelector()
	list, err := gs.client.CoreV1().Pods(rs.Namespace).List(ctx, metav1.ListOptions{LabelSelector: selector.String()})
	if err != nil {
		klog.FromContext(ctx).V(2).Info("Could not list the pods of a degraded replica set", "replicaSet", klog.KObj(rs), "err", err)
		return podhealth.Summarize(rs, nil).Top()
	}
	pods := make([]*corev1.Pod, len(list.Items))
	for i := range list.Items {
		pods[i] = &list.Items[i]
	}
	return podhealth.Summarize(rs, pods).Top()
}

// writeRollback puts stable's template on the Deployment in one main-resource Update that
// drops a resume request and, in instead mode, our hold (in alongside mode spec.paused is the
// takeover's).
func (g *graySync) writeRollback(ctx context.Context, stable *appsv1.ReplicaSet) error {
	updated := g.cur.server.DeepCopy()
	deployutil.SetFromReplicaSetTemplate(updated, stable.Spec.Template)
	delete(updated.Annotations, grayapi.ResumeAnnotation)
	updated.Spec.Paused = g.mode.rollbackPaused(updated.Spec.Paused)
	_, err := g.gs.client.AppsV1().Deployments(updated.Namespace).Update(ctx, updated, metav1.UpdateOptions{FieldManager: g.gs.fieldManager})
	return err
}
