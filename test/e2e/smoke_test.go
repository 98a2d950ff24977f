package e2e

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/kubegray/kubectl-gray/internal/testutil"
	"github.com/kubegray/kubectl-gray/test/cluster"
)

// The stock controllers run a Deployment to availability and through a
// rolling update: proof that the harness is a working Kubernetes.
func TestSmokeBuiltinDeploymentController(t *testing.T) {
	c := cluster.StartForTest(t, cluster.Options{})
	ctx := context.Background()
	deployments := c.Client.AppsV1().Deployments(metav1.NamespaceDefault)

	d := testutil.Deployment("web", testutil.WithImage("nginx:1.25"), testutil.WithReplicas(5), testutil.WithRollingUpdate(intstr.FromInt32(1), intstr.FromInt32(1)))
	if _, err := deployments.Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create deployment: %v", err)
	}
	d = waitRolledOut(t, c.Client, d.Namespace, d.Name, 60*time.Second)
	if got := d.Status.AvailableReplicas; got != 5 {
		t.Fatalf("available replicas = %d, want 5", got)
	}

	d.Spec.Template.Spec.Containers[0].Image = "nginx:1.27"
	if _, err := deployments.Update(ctx, d, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update image: %v", err)
	}
	d = waitRolledOut(t, c.Client, d.Namespace, d.Name, 60*time.Second)

	rss := ownedReplicaSets(t, c.Client, d)
	if len(rss) != 2 {
		t.Fatalf("got %d replicasets, want 2 (old and new)", len(rss))
	}
	for _, rs := range rss {
		image := rs.Spec.Template.Spec.Containers[0].Image
		want := int32(0)
		if image == "nginx:1.27" {
			want = 5
		}
		if *rs.Spec.Replicas != want || rs.Status.AvailableReplicas != want {
			t.Errorf("replicaset %s (%s): spec %d available %d, want %d", rs.Name, image,
				*rs.Spec.Replicas, rs.Status.AvailableReplicas, want)
		}
	}
}

// With the built-in deployment controller disabled nothing creates the
// Deployment's ReplicaSet, while the ReplicaSet controller still works.
func TestSmokeWithoutDeploymentController(t *testing.T) {
	c := cluster.StartForTest(t, cluster.Options{Controllers: cluster.WithoutDeploymentController})
	ctx := context.Background()

	d := testutil.Deployment("orphan", testutil.WithImage("nginx:1.25"), testutil.WithReplicas(3))
	if _, err := c.Client.AppsV1().Deployments(d.Namespace).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create deployment: %v", err)
	}

	// A bare ReplicaSet becoming available shows the rest of the control plane
	// is live, so the Deployment's missing ReplicaSet below is meaningful.
	labels := map[string]string{"app": "bare"}
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "bare", Namespace: metav1.NamespaceDefault},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.25"}}},
			},
		},
	}
	if _, err := c.Client.AppsV1().ReplicaSets(rs.Namespace).Create(ctx, rs, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create replicaset: %v", err)
	}
	eventually(t, 60*time.Second, "bare replicaset available", func() (bool, string) {
		got, err := c.Client.AppsV1().ReplicaSets(rs.Namespace).Get(ctx, rs.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return got.Status.AvailableReplicas == 2, "not yet"
	})

	// Give a would-be deployment controller ample time (it acts in milliseconds).
	time.Sleep(5 * time.Second)
	created, err := c.Client.AppsV1().Deployments(d.Namespace).Get(ctx, d.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get deployment: %v", err)
	}
	if rss := ownedReplicaSets(t, c.Client, created); len(rss) != 0 {
		t.Fatalf("deployment got %d replicasets with the deployment controller disabled", len(rss))
	}
	if created.Status.ObservedGeneration != 0 {
		t.Fatalf("deployment status observed generation %d; nothing should have synced it", created.Status.ObservedGeneration)
	}
}
