package plugin

// The parts of a StatusView read from the Deployment's related objects: its revisions with
// their pods, and its events.

import (
	"sort"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubegray/kubectl-gray/pkg/deployutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// revisionViews lists rss, newest revision first; newRS is the one running
// the Deployment's template, nil if none does.
func revisionViews(rss []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, pods []*corev1.Pod, stable int64) []RevisionView {
	rss = append([]*appsv1.ReplicaSet(nil), rss...)
	sort.Sort(sort.Reverse(deployutil.ReplicaSetsByRevision(rss)))
	byOwner := map[types.UID][]PodView{}
	for _, p := range pods {
		if ref := metav1.GetControllerOf(p); ref != nil {
			byOwner[ref.UID] = append(byOwner[ref.UID], podView(p))
		}
	}
	views := make([]RevisionView, 0, len(rss))
	for _, rs := range rss {
		rev, _ := deployutil.Revision(rs)
		podViews := byOwner[rs.UID]
		sort.Slice(podViews, func(i, j int) bool { return podViews[i].Name < podViews[j].Name })
		if podViews == nil {
			podViews = []PodView{}
		}
		var replicas int32
		if rs.Spec.Replicas != nil {
			replicas = *rs.Spec.Replicas
		}
		views = append(views, RevisionView{
			Revision:          rev,
			ReplicaSet:        rs.Name,
			New:               rs == newRS,
			Stable:            stable > 0 && rev == stable,
			Aborted:           abortedReplicaSet(rs, rev),
			Replicas:          replicas,
			ReadyReplicas:     rs.Status.ReadyReplicas,
			AvailableReplicas: rs.Status.AvailableReplicas,
			Images:            templateImages(&rs.Spec.Template.Spec),
			Pods:              podViews,
		})
	}
	return views
}

// abortedReplicaSet reports whether rs carries the record of an aborted
// rollout of its own revision rev; a label naming another revision is stale
// (the template came back as a new rollout) and means nothing.
func abortedReplicaSet(rs *appsv1.ReplicaSet, rev int64) bool {
	v, ok := rs.Labels[grayapi.AbortedLabel]
	return ok && rev > 0 && v == strconv.FormatInt(rev, 10)
}

func podView(p *corev1.Pod) PodView {
	v := PodView{Name: p.Name, Phase: string(p.Status.Phase), CreatedAt: p.CreationTimestamp, Containers: int32(len(p.Spec.Containers))}
	if p.DeletionTimestamp != nil {
		v.Phase = "Terminating"
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			v.Ready = true
		}
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Ready {
			v.ReadyContainers++
		}
		v.Restarts += cs.RestartCount
	}
	return v
}

// eventViews keeps the gray events about d, the latest maxEvents, oldest
// first.
func eventViews(d *appsv1.Deployment, events []corev1.Event) []EventView {
	views := grayEventViews(d, events)
	if len(views) > maxEvents {
		views = views[len(views)-maxEvents:]
	}
	return views
}

// grayEventViews keeps every gray event about d, oldest first. Events are matched by UID (or
// name, for events without one) because a field selector is only a hint to some API servers.
func grayEventViews(d *appsv1.Deployment, events []corev1.Event) []EventView {
	var views []EventView
	for _, e := range events {
		ref := e.InvolvedObject
		if ref.Kind != "Deployment" || ref.Name != d.Name || (ref.UID != "" && d.UID != "" && ref.UID != d.UID) || !grayapi.IsEventReason(e.Reason) {
			continue
		}
		ev := EventView{Type: e.Type, Reason: e.Reason, Message: e.Message, Count: e.Count}
		if t := eventTime(e); !t.IsZero() {
			ev.LastSeen = &t
		}
		if ev.Count == 0 {
			ev.Count = 1
		}
		views = append(views, ev)
	}
	sort.SliceStable(views, func(i, j int) bool {
		return views[i].LastSeen.Before(views[j].LastSeen)
	})
	return views
}

// eventTime is when an event was last seen, whichever API wrote it: core/v1
// recorders set LastTimestamp, events.k8s.io/v1 recorders EventTime and
// Series.
func eventTime(e corev1.Event) metav1.Time {
	switch {
	case e.Series != nil && !e.Series.LastObservedTime.IsZero():
		return metav1.NewTime(e.Series.LastObservedTime.Time)
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp
	case !e.EventTime.IsZero():
		return metav1.NewTime(e.EventTime.Time)
	}
	return e.CreationTimestamp
}
