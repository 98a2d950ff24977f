package testutil

import (
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// PercentAnnotation is kubegray.io/percent, the hold points that make a Deployment gray, spelled
// out here so that fixtures do not depend on the code under test for it.
const PercentAnnotation = "kubegray.io/percent"

// GrayDeployment is Deployment(name) with replicas and the hold points percent: the gray
// Deployment every suite starts from. opts change it, in order.
func GrayDeployment(name string, replicas int32, percent string, opts ...DeploymentOption) *appsv1.Deployment {
	gray := Options(WithReplicas(replicas), WithAnnotation(PercentAnnotation, percent))
	return Deployment(name, append([]DeploymentOption{gray}, opts...)...)
}

// GrayWeb is the gray Deployment "web" of the unit scenarios, as a fake clientset's tracker
// returns it (TypeMeta, a UID, generation 1): pods labelled foo=bar running image v1, maxSurge
// and maxUnavailable 25%. opts change it, in order.
func GrayWeb(replicas int32, percent string, opts ...DeploymentOption) *appsv1.Deployment {
	unit := Options(WithTypeMeta(), WithUID(), WithGeneration(1, 0), WithLabels(map[string]string{"foo": "bar"}), WithImage("v1"),
		WithRollingUpdate(intstr.FromString("25%"), intstr.FromString("25%")))
	return GrayDeployment("web", replicas, percent, append([]DeploymentOption{unit}, opts...)...)
}
