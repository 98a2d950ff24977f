package e2e

import (
	"context"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/kubegray/kubectl-gray/internal/testutil"
	"github.com/kubegray/kubectl-gray/test/cluster"
)

// action is one user action, applied identically to each cluster under test.
type action func(ctx context.Context, client kubernetes.Interface, ns string) error

func createDeployment(d *appsv1.Deployment) action {
	return func(ctx context.Context, client kubernetes.Interface, ns string) error {
		c := d.DeepCopy()
		c.Namespace = ns
		_, err := client.AppsV1().Deployments(ns).Create(ctx, c, metav1.CreateOptions{})
		return err
	}
}

// mutateDeployment re-reads the Deployment and updates it, retrying conflicts
// with the controller's own writes.
func mutateDeployment(name string, mutate func(*appsv1.Deployment)) action {
	return func(ctx context.Context, client kubernetes.Interface, ns string) error {
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			d, err := client.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			mutate(d)
			_, err = client.AppsV1().Deployments(ns).Update(ctx, d, metav1.UpdateOptions{})
			return err
		})
	}
}

func setImage(name, image string) action {
	return mutateDeployment(name, func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = image })
}

// breakPods makes the Deployment's next pods never become ready (the kwok
// stand-in for a bad image) and changes the image, so a rollout starts.
func breakPods(name, image string) action {
	return mutateDeployment(name, func(d *appsv1.Deployment) {
		testutil.WithTemplateAnnotation(cluster.NeverReadyAnnotation, "true")(d)
		d.Spec.Template.Spec.Containers[0].Image = image
	})
}

// fixPods is the remedy for breakPods: a new image whose pods become ready.
func fixPods(name, image string) action {
	return mutateDeployment(name, func(d *appsv1.Deployment) {
		delete(d.Spec.Template.Annotations, cluster.NeverReadyAnnotation)
		d.Spec.Template.Spec.Containers[0].Image = image
	})
}

func scaleDeployment(name string, replicas int32) action {
	return func(ctx context.Context, client kubernetes.Interface, ns string) error {
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			s, err := client.AppsV1().Deployments(ns).GetScale(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			s.Spec.Replicas = replicas
			_, err = client.AppsV1().Deployments(ns).UpdateScale(ctx, name, s, metav1.UpdateOptions{})
			return err
		})
	}
}

func setPaused(name string, paused bool) action {
	return mutateDeployment(name, func(d *appsv1.Deployment) { d.Spec.Paused = paused })
}

func setAnnotation(name, key, value string) action {
	return mutateDeployment(name, func(d *appsv1.Deployment) {
		if d.Annotations == nil {
			d.Annotations = map[string]string{}
		}
		d.Annotations[key] = value
	})
}

func setMaxSurge(name string, surge intstr.IntOrString) action {
	return mutateDeployment(name, func(d *appsv1.Deployment) { d.Spec.Strategy.RollingUpdate.MaxSurge = &surge })
}

func deleteDeployment(name string, propagation metav1.DeletionPropagation) action {
	return func(ctx context.Context, client kubernetes.Interface, ns string) error {
		return client.AppsV1().Deployments(ns).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &propagation})
	}
}

// createOrphanReplicaSet creates a ReplicaSet with no owner whose template is
// d's template, the situation a Deployment must adopt.
func createOrphanReplicaSet(name string, d *appsv1.Deployment, replicas int32) action {
	return func(ctx context.Context, client kubernetes.Interface, ns string) error {
		rs := &appsv1.ReplicaSet{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: d.Spec.Template.Labels},
			Spec: appsv1.ReplicaSetSpec{
				Replicas: ptr.To(replicas),
				Selector: d.Spec.Selector.DeepCopy(),
				Template: *d.Spec.Template.DeepCopy(),
			},
		}
		_, err := client.AppsV1().ReplicaSets(ns).Create(ctx, rs, metav1.CreateOptions{})
		return err
	}
}

// setReplicaSetLabel sets a label on the Deployment's ReplicaSet (owned or
// released: matched by name prefix) whose revision annotation is revision.
func setReplicaSetLabel(deployment, revision, key, value string) action {
	return func(ctx context.Context, client kubernetes.Interface, ns string) error {
		list, err := client.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, rs := range list.Items {
			if rs.Annotations["deployment.kubernetes.io/revision"] != revision || !strings.HasPrefix(rs.Name, deployment+"-") {
				continue
			}
			patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, key, value)
			_, err := client.AppsV1().ReplicaSets(ns).Patch(ctx, rs.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
			return err
		}
		return fmt.Errorf("no replicaset of deployment %s/%s at revision %s", ns, deployment, revision)
	}
}

// waitCondition returns a wait that holds once the Deployment has a condition
// of that type with that reason.
func waitCondition(name string, condType appsv1.DeploymentConditionType, reason string) func(context.Context, kubernetes.Interface, string) (bool, string) {
	return func(ctx context.Context, client kubernetes.Interface, ns string) (bool, string) {
		d, err := client.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, c := range d.Status.Conditions {
			if c.Type == condType && c.Reason == reason {
				return true, ""
			}
		}
		return false, fmt.Sprintf("conditions %v", d.Status.Conditions)
	}
}
