package deployutil

import (
	"maps"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/kubegray/kubectl-gray/internal/testutil"
)

// Fixed times so tests never depend on the wall clock.
var (
	t0 = metav1.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	t1 = metav1.Date(2026, 1, 1, 1, 0, 0, 0, time.UTC)
	t2 = metav1.Date(2026, 1, 1, 2, 0, 0, 0, time.UTC)
)

func intOrStr(s string) *intstr.IntOrString { v := intstr.Parse(s); return &v }

// podTemplate is a minimal template running image, labelled app=web.
func podTemplate(image string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: image}}},
	}
}

// rollingDeployment builds default/web with R replicas and the given
// fenceposts (strings like "25%" or "3"; "" leaves the fencepost nil).
func rollingDeployment(replicas int32, maxSurge, maxUnavailable string) *appsv1.Deployment {
	ru := &appsv1.RollingUpdateDeployment{}
	if maxSurge != "" {
		ru.MaxSurge = intOrStr(maxSurge)
	}
	if maxUnavailable != "" {
		ru.MaxUnavailable = intOrStr(maxUnavailable)
	}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "d-uid", Annotations: map[string]string{}},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: podTemplate("nginx:1"),
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: ru},
		},
	}
}

func recreateDeployment(replicas int32) *appsv1.Deployment {
	d := rollingDeployment(replicas, "", "")
	d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	return d
}

// newRS builds a ReplicaSet of default/web with the given spec and available
// replicas, created at created, running nginx:1 (the Deployment's template);
// opts change it.
func newRS(name string, spec, available int32, created metav1.Time, opts ...testutil.ReplicaSetOption) *appsv1.ReplicaSet {
	tmpl := podTemplate("nginx:1")
	tmpl.Labels[DefaultPodTemplateHashKey] = name
	labels := map[string]string{"app": "web", DefaultPodTemplateHashKey: name}
	rs := testutil.ReplicaSet(name, spec, testutil.RSCreatedAt(created.Time), testutil.RSAvailable(available))
	rs.UID, rs.Labels = types.UID(name+"-uid"), labels
	rs.Spec.Selector = &metav1.LabelSelector{MatchLabels: maps.Clone(labels)}
	rs.Spec.Template = tmpl
	for _, o := range opts {
		o(rs)
	}
	return rs
}

func names(rss []*appsv1.ReplicaSet) []string {
	var out []string
	for _, rs := range rss {
		out = append(out, rs.Name)
	}
	return out
}
