package testutil

import (
	"maps"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// ReplicaSetOption changes a ReplicaSet that ReplicaSet builds.
type ReplicaSetOption func(*appsv1.ReplicaSet)

// ReplicaSet builds a bare default/<name> with UID "uid-<name>" and spec.replicas replicas:
// no owner, labels, template or status, an empty selector; opts change it, in order.
func ReplicaSet(name string, replicas int32, opts ...ReplicaSetOption) *appsv1.ReplicaSet {
	rs := &appsv1.ReplicaSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "ReplicaSet"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: metav1.NamespaceDefault, UID: types.UID("uid-" + name)},
		Spec:       appsv1.ReplicaSetSpec{Replicas: ptr.To(replicas), Selector: &metav1.LabelSelector{}},
	}
	for _, o := range opts {
		o(rs)
	}
	return rs
}

// RSOwnedBy makes d the controller of the ReplicaSet, running d's template with d's selector,
// labelled with d's selector labels, in d's namespace.
func RSOwnedBy(d *appsv1.Deployment) ReplicaSetOption {
	return func(rs *appsv1.ReplicaSet) {
		rs.Namespace = d.Namespace
		rs.Labels = maps.Clone(d.Spec.Selector.MatchLabels)
		rs.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(d, appsv1.SchemeGroupVersion.WithKind("Deployment"))}
		rs.Spec.Selector = d.Spec.Selector.DeepCopy()
		rs.Spec.Template = *d.Spec.Template.DeepCopy()
	}
}

// RSCreatedAt sets the creation timestamp.
func RSCreatedAt(created time.Time) ReplicaSetOption {
	return func(rs *appsv1.ReplicaSet) { rs.CreationTimestamp = metav1.NewTime(created) }
}

// RSAnnotation sets one annotation.
func RSAnnotation(key, value string) ReplicaSetOption {
	return func(rs *appsv1.ReplicaSet) { rs.Annotations = withKey(rs.Annotations, key, value) }
}

// RSRevision sets deployment.kubernetes.io/revision.
func RSRevision(revision int64) ReplicaSetOption {
	return RSAnnotation(RevisionAnnotation, strconv.FormatInt(revision, 10))
}

// RSImage sets the image of the template's first container (an older template, say).
func RSImage(image string) ReplicaSetOption {
	return func(rs *appsv1.ReplicaSet) { rs.Spec.Template.Spec.Containers[0].Image = image }
}

// RSAvailable sets a status that has observed the spec, with available of its replicas available.
func RSAvailable(available int32) ReplicaSetOption {
	return func(rs *appsv1.ReplicaSet) {
		rs.Status.Replicas = *rs.Spec.Replicas
		rs.Status.AvailableReplicas = available
	}
}

// RSReplicasAnnotations sets the desired-replicas and max-replicas annotations a Deployment
// controller writes on the ReplicaSets it sizes.
func RSReplicasAnnotations(desired, maxReplicas int32) ReplicaSetOption {
	return func(rs *appsv1.ReplicaSet) {
		RSAnnotation("deployment.kubernetes.io/desired-replicas", strconv.Itoa(int(desired)))(rs)
		RSAnnotation("deployment.kubernetes.io/max-replicas", strconv.Itoa(int(maxReplicas)))(rs)
	}
}
