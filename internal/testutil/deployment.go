// Package testutil builds the Deployments and ReplicaSets that tests start from, with
// options, for every module of the repository (the test module imports it too): one
// vocabulary, so that a fixture reads the same in a unit test and an e2e suite.
package testutil

import (
	"maps"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// RevisionAnnotation is upstream's deployment.kubernetes.io/revision, spelled out here so that
// fixtures do not depend on the code under test for it.
const RevisionAnnotation = "deployment.kubernetes.io/revision"

// DeploymentOption changes a Deployment that Deployment builds.
type DeploymentOption func(*appsv1.Deployment)

// Deployment builds default/<name>: one replica, pods labelled and selected app=<name>, one
// container "app" running nginx:1.25, no strategy, no annotations (an empty map), and no UID,
// TypeMeta or status; opts change it, in order.
func Deployment(name string, opts ...DeploymentOption) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: metav1.NamespaceDefault, Annotations: map[string]string{}},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: maps.Clone(labels)},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.25"}}},
			},
		},
	}
	for _, o := range opts {
		o(d)
	}
	return d
}

// Options is several options as one, for a package's own defaults.
func Options(opts ...DeploymentOption) DeploymentOption {
	return func(d *appsv1.Deployment) {
		for _, o := range opts {
			o(d)
		}
	}
}

// WithTypeMeta sets apps/v1 Deployment, as objects read from a fake clientset's tracker have it.
func WithTypeMeta() DeploymentOption {
	return func(d *appsv1.Deployment) { d.TypeMeta = metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"} }
}

// WithNamespace moves the Deployment to namespace ns.
func WithNamespace(ns string) DeploymentOption {
	return func(d *appsv1.Deployment) { d.Namespace = ns }
}

// WithUID sets the UID to "uid-<name>" (a fake clientset assigns none).
func WithUID() DeploymentOption {
	return func(d *appsv1.Deployment) { d.UID = types.UID("uid-" + d.Name) }
}

// WithReplicas sets spec.replicas.
func WithReplicas(n int32) DeploymentOption {
	return func(d *appsv1.Deployment) { d.Spec.Replicas = ptr.To(n) }
}

// WithLabels makes labels the selector and the pod template's labels.
func WithLabels(labels map[string]string) DeploymentOption {
	return func(d *appsv1.Deployment) {
		d.Spec.Selector = &metav1.LabelSelector{MatchLabels: maps.Clone(labels)}
		d.Spec.Template.Labels = maps.Clone(labels)
	}
}

// WithContainer makes the pod template one container name running image.
func WithContainer(name, image string) DeploymentOption {
	return func(d *appsv1.Deployment) {
		d.Spec.Template.Spec.Containers = []corev1.Container{{Name: name, Image: image}}
	}
}

// WithImage sets the image of the first container.
func WithImage(image string) DeploymentOption {
	return func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = image }
}

// WithRollingUpdate sets strategy RollingUpdate with these fenceposts.
func WithRollingUpdate(maxSurge, maxUnavailable intstr.IntOrString) DeploymentOption {
	return func(d *appsv1.Deployment) {
		d.Spec.Strategy = appsv1.DeploymentStrategy{
			Type:          appsv1.RollingUpdateDeploymentStrategyType,
			RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &maxSurge, MaxUnavailable: &maxUnavailable},
		}
	}
}

// WithRecreate sets strategy Recreate.
func WithRecreate() DeploymentOption {
	return WithStrategy(appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType})
}

// WithStrategy sets the strategy as given.
func WithStrategy(s appsv1.DeploymentStrategy) DeploymentOption {
	return func(d *appsv1.Deployment) { d.Spec.Strategy = s }
}

// WithRevisionHistoryLimit sets spec.revisionHistoryLimit.
func WithRevisionHistoryLimit(n int32) DeploymentOption {
	return func(d *appsv1.Deployment) { d.Spec.RevisionHistoryLimit = ptr.To(n) }
}

// WithProgressDeadline sets spec.progressDeadlineSeconds.
func WithProgressDeadline(seconds int32) DeploymentOption {
	return func(d *appsv1.Deployment) { d.Spec.ProgressDeadlineSeconds = ptr.To(seconds) }
}

// WithMinReadySeconds sets spec.minReadySeconds.
func WithMinReadySeconds(seconds int32) DeploymentOption {
	return func(d *appsv1.Deployment) { d.Spec.MinReadySeconds = seconds }
}

// WithPaused sets spec.paused.
func WithPaused() DeploymentOption {
	return func(d *appsv1.Deployment) { d.Spec.Paused = true }
}

// WithAnnotation sets one annotation of the Deployment.
func WithAnnotation(key, value string) DeploymentOption {
	return func(d *appsv1.Deployment) { d.Annotations = withKey(d.Annotations, key, value) }
}

// WithRevision sets the Deployment's deployment.kubernetes.io/revision.
func WithRevision(revision int64) DeploymentOption {
	return WithAnnotation(RevisionAnnotation, strconv.FormatInt(revision, 10))
}

// WithTemplateAnnotation sets one annotation of the pod template.
func WithTemplateAnnotation(key, value string) DeploymentOption {
	return func(d *appsv1.Deployment) {
		d.Spec.Template.Annotations = withKey(d.Spec.Template.Annotations, key, value)
	}
}

// withKey sets key in m, making m first when it is nil.
func withKey(m map[string]string, key, value string) map[string]string {
	if m == nil {
		m = map[string]string{}
	}
	m[key] = value
	return m
}

// WithGeneration sets metadata.generation and status.observedGeneration.
func WithGeneration(generation, observed int64) DeploymentOption {
	return func(d *appsv1.Deployment) {
		d.Generation = generation
		d.Status.ObservedGeneration = observed
	}
}
