package deployutil

import (
	"context"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// EqualIgnoreHash reports whether two pod templates are semantically equal
// once the pod-template-hash label is removed from both. The hash is not
// trusted for matching because it changes whenever the PodTemplateSpec Go
// struct gains a field, and Deployment templates never carry it.
func EqualIgnoreHash(t1, t2 *corev1.PodTemplateSpec) bool {
	c1, c2 := t1.DeepCopy(), t2.DeepCopy()
	delete(c1.Labels, DefaultPodTemplateHashKey)
	delete(c2.Labels, DefaultPodTemplateHashKey)
	return apiequality.Semantic.DeepEqual(c1, c2)
}

// FindNewReplicaSet returns the oldest ReplicaSet whose template equals the
// Deployment's (ignoring the hash label), or nil. Like upstream it sorts
// rsList in place, oldest first, which fixes the order FindOldReplicaSets
// returns.
func FindNewReplicaSet(d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) *appsv1.ReplicaSet {
	sort.Sort(ReplicaSetsByCreationTimestamp(rsList))
	for _, rs := range rsList {
		if EqualIgnoreHash(&rs.Spec.Template, &d.Spec.Template) {
			return rs
		}
	}
	return nil
}

// FindOldReplicaSets returns the old ReplicaSets (all but the new one,
// compared by UID), oldest first: first those with spec.replicas ≠ 0, then
// all of them. rsList is sorted in place (see FindNewReplicaSet).
func FindOldReplicaSets(d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) ([]*appsv1.ReplicaSet, []*appsv1.ReplicaSet) {
	newRS := FindNewReplicaSet(d, rsList)
	var required, all []*appsv1.ReplicaSet
	for _, rs := range rsList {
		if newRS != nil && rs.UID == newRS.UID {
			continue
		}
		all = append(all, rs)
		if rsReplicas(rs) != 0 {
			required = append(required, rs)
		}
	}
	return required, all
}

// FilterActiveReplicaSets returns the non-nil ReplicaSets with spec > 0.
func FilterActiveReplicaSets(rss []*appsv1.ReplicaSet) []*appsv1.ReplicaSet {
	var out []*appsv1.ReplicaSet
	for _, rs := range rss {
		if rs != nil && rsReplicas(rs) > 0 {
			out = append(out, rs)
		}
	}
	return out
}

// GetDeploymentsForReplicaSet returns the Deployments in the ReplicaSet's
// namespace whose selector matches its labels. A ReplicaSet without labels
// matches nothing, and so do Deployments with an invalid, nil or empty
// selector (an empty selector must not select everything). Only the one named
// by the ReplicaSet's controller ref actually manages it.
func GetDeploymentsForReplicaSet(rs *appsv1.ReplicaSet, deployments []*appsv1.Deployment) []*appsv1.Deployment {
	if len(rs.Labels) == 0 {
		return nil
	}
	var out []*appsv1.Deployment
	for _, d := range deployments {
		if d.Namespace != rs.Namespace {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
		if err != nil || sel.Empty() || !sel.Matches(labels.Set(rs.Labels)) {
			continue
		}
		out = append(out, d)
	}
	return out
}

// ReplicaSetsByCreationTimestamp orders oldest first, ties by name.
type ReplicaSetsByCreationTimestamp []*appsv1.ReplicaSet

func (o ReplicaSetsByCreationTimestamp) Len() int      { return len(o) }
func (o ReplicaSetsByCreationTimestamp) Swap(i, j int) { o[i], o[j] = o[j], o[i] }
func (o ReplicaSetsByCreationTimestamp) Less(i, j int) bool {
	if o[i].CreationTimestamp.Equal(&o[j].CreationTimestamp) {
		return o[i].Name < o[j].Name
	}
	return o[i].CreationTimestamp.Before(&o[j].CreationTimestamp)
}

// ReplicaSetsByRevision orders by revision ascending; when either revision is
// unparsable or both are equal it falls back to ReplicaSetsByCreationTimestamp.
type ReplicaSetsByRevision []*appsv1.ReplicaSet

func (o ReplicaSetsByRevision) Len() int      { return len(o) }
func (o ReplicaSetsByRevision) Swap(i, j int) { o[i], o[j] = o[j], o[i] }
func (o ReplicaSetsByRevision) Less(i, j int) bool {
	r1, err1 := Revision(o[i])
	r2, err2 := Revision(o[j])
	if err1 != nil || err2 != nil || r1 == r2 {
		return ReplicaSetsByCreationTimestamp(o).Less(i, j)
	}
	return r1 < r2
}

// SortNewestFirst sorts rss in place by creationTimestamp descending, ties by
// name descending (the exact reverse of ReplicaSetsByCreationTimestamp).
func SortNewestFirst(rss []*appsv1.ReplicaSet) {
	sort.Sort(sort.Reverse(ReplicaSetsByCreationTimestamp(rss)))
}

// StatusObserved reports whether rs's status describes its latest spec.
func StatusObserved(rs *appsv1.ReplicaSet) bool {
	return rs.Status.ObservedGeneration >= rs.Generation
}

// ReplicasChanged reports whether an active ReplicaSet among rss carries a parseable
// desired-replicas annotation other than d's spec.replicas.
func ReplicasChanged(ctx context.Context, d *appsv1.Deployment, rss []*appsv1.ReplicaSet) bool {
	for _, rs := range FilterActiveReplicaSets(rss) {
		desired, ok := GetDesiredReplicasAnnotation(ctx, rs)
		if !ok {
			continue
		}
		if desired != *d.Spec.Replicas {
			return true
		}
	}
	return false
}

// WithNewRS returns a fresh slice holding oldRSs followed by newRS (if any). Upstream appends a
// possibly nil new ReplicaSet to the old list; leaving the nil out is equivalent for every sum
// and filter, and a fresh slice never aliases the caller's backing array.
func WithNewRS(oldRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) []*appsv1.ReplicaSet {
	all := make([]*appsv1.ReplicaSet, 0, len(oldRSs)+1)
	all = append(all, oldRSs...)
	if newRS != nil {
		all = append(all, newRS)
	}
	return all
}
