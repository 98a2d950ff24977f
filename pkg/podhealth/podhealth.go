// Package podhealth says why the pods of a ReplicaSet are not ready, in the words a person
// looks up next: the container waiting reason (ImagePullBackOff, CrashLoopBackOff, ...), the
// scheduler's PodScheduled=False message, restart counts, and the ReplicaSet's own
// ReplicaFailure condition (quota, admission denial). The controller puts the most common
// reason into a Degraded message; `kubectl gray status` shows them all. Pod (pod.go) is the
// summary of one pod's health the pods gate reads, which the controller's pod cache keeps.
package podhealth

import (
	"fmt"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Reason is one cause of not-ready pods and how many pods it holds back.
type Reason struct {
	// Reason is the short word: a container waiting reason, "Unschedulable", "ReplicaFailure"...
	Reason string `json:"reason"`
	// Message is the longer explanation of one of those pods (the first one, by name).
	Message string `json:"message,omitempty"`
	// Pods counts the pods held back by it (0 for the ReplicaSet's own ReplicaFailure).
	Pods int `json:"pods"`
	// Restarts sums the container restarts of those pods.
	Restarts int32 `json:"restarts,omitempty"`
}

// Summary is why a ReplicaSet's pods are not ready.
type Summary struct {
	// NotReady counts the pods of the ReplicaSet that are not ready.
	NotReady int `json:"notReady"`
	// Reasons are grouped by reason, the most common first.
	Reasons []Reason `json:"reasons,omitempty"`
}

// Summarize groups the not-ready pods of rs among pods (others are ignored: pods are matched
// by their controller reference) by why they are not ready, and adds rs's ReplicaFailure
// condition when it is True. Only rs's not-ready pods are sorted (by name, so that each
// reason's message comes from the same pod every time); pods itself is left as it is.
func Summarize(rs *appsv1.ReplicaSet, pods []*corev1.Pod) Summary {
	var notReady []*corev1.Pod
	for _, pod := range pods {
		if owner := metav1.GetControllerOf(pod); owner != nil && owner.UID == rs.UID && pod.DeletionTimestamp == nil && !ready(pod) {
			notReady = append(notReady, pod)
		}
	}
	sort.Slice(notReady, func(i, j int) bool { return notReady[i].Name < notReady[j].Name })
	s := Summary{NotReady: len(notReady)}
	byReason := map[string]*Reason{}
	for _, pod := range notReady {
		reason, message := whyNotReady(pod)
		r, seen := byReason[reason]
		if !seen {
			r = &Reason{Reason: reason, Message: message}
			byReason[reason] = r
		}
		r.Pods++
		r.Restarts += restarts(pod)
	}
	for _, r := range byReason {
		s.Reasons = append(s.Reasons, *r)
	}
	sort.Slice(s.Reasons, func(i, j int) bool {
		a, b := s.Reasons[i], s.Reasons[j]
		if a.Pods != b.Pods {
			return a.Pods > b.Pods
		}
		return a.Reason < b.Reason
	})
	for _, c := range rs.Status.Conditions {
		if c.Type == appsv1.ReplicaSetReplicaFailure && c.Status == corev1.ConditionTrue {
			s.Reasons = append(s.Reasons, Reason{Reason: string(appsv1.ReplicaSetReplicaFailure), Message: joinReason(c.Reason, c.Message)})
		}
	}
	return s
}

// Top describes the most common reason in one phrase, for an event or a status message:
// `2 pods CrashLoopBackOff (back-off 10s restarting failed container), 7 restarts`. It is
// empty when nothing is known.
func (s Summary) Top() string {
	if len(s.Reasons) == 0 {
		return ""
	}
	r := s.Reasons[0]
	text := r.Reason
	if r.Pods > 0 {
		text = fmt.Sprintf("%d %s %s", r.Pods, plural(r.Pods, "pod", "pods"), r.Reason)
	}
	if r.Message != "" {
		text += " (" + r.Message + ")"
	}
	if r.Restarts > 0 {
		text += fmt.Sprintf(", %d %s", r.Restarts, plural(int(r.Restarts), "restart", "restarts"))
	}
	return text
}

// whyNotReady picks the most telling reason a pod is not ready: a container that waits
// (image pull, crash loop, bad config) or terminated, then the scheduler's verdict, then
// the pod's Ready condition.
func whyNotReady(pod *corev1.Pod) (string, string) {
	statuses := append(append([]corev1.ContainerStatus(nil), pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...)
	for _, cs := range statuses {
		if w := cs.State.Waiting; w != nil && w.Reason != "" && w.Reason != "ContainerCreating" && w.Reason != "PodInitializing" {
			return w.Reason, w.Message
		}
	}
	for _, cs := range statuses {
		if t := cs.State.Terminated; t != nil && t.Reason != "Completed" {
			return orWord(t.Reason, "Terminated"), fmt.Sprintf("exit code %d", t.ExitCode)
		}
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			return orWord(c.Reason, "Unschedulable"), c.Message
		}
	}
	for _, cs := range statuses {
		if cs.State.Running != nil && !cs.Ready {
			return "NotReady", fmt.Sprintf("container %s is running but not ready", cs.Name)
		}
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status != corev1.ConditionTrue && c.Reason != "" {
			return c.Reason, c.Message
		}
	}
	return orWord(string(pod.Status.Phase), "Unknown"), ""
}

func ready(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func restarts(pod *corev1.Pod) int32 {
	var n int32
	for _, cs := range pod.Status.ContainerStatuses {
		n += cs.RestartCount
	}
	return n
}

func joinReason(reason, message string) string {
	switch {
	case reason == "":
		return message
	case message == "":
		return reason
	}
	return reason + ": " + message
}

func orWord(s, fallback string) string {
	if s == "" {
		return fallback
	}
	return s
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
