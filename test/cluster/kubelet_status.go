package cluster

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// podIP is the address of every stand-in pod and of its node: the pods share
// this machine's loopback interface, each on ports of its own.
const podIP = "127.0.0.1"

const (
	// statusWriteAttempts bounds the writes of one status against conflicting
	// writers; the resync tries again later.
	statusWriteAttempts = 5
	// statusResyncInterval is how often a pod worker compares the status it
	// would write with the pod's, to write again what a failed write left out.
	statusResyncInterval = 5 * time.Second
)

// writeStatus writes the pod's status when it differs from what the worker
// knows, re-reading the pod after a conflict.
func (w *podWorker) writeStatus(ctx context.Context) {
	if !w.admitted || w.frozen {
		return
	}
	pods := w.k.cluster.Client.CoreV1().Pods(w.namespace)
	pod := w.pod
	for attempt := 1; ; attempt++ {
		status := w.status(pod)
		if equality.Semantic.DeepEqual(pod.Status, status) {
			w.pod = pod
			return
		}
		update := pod.DeepCopy()
		update.Status = status
		written, err := pods.UpdateStatus(ctx, update, metav1.UpdateOptions{})
		if err == nil {
			w.k.log.Printf("pod %s: status %s", w, summary(status))
			w.pod = written
			return
		}
		if !apierrors.IsConflict(err) || attempt == statusWriteAttempts {
			if ctx.Err() == nil && !apierrors.IsNotFound(err) {
				w.k.log.Printf("pod %s: write status: %v", w, err)
			}
			return
		}
		if pod, err = pods.Get(ctx, w.name, metav1.GetOptions{}); err != nil || pod.UID != w.uid {
			return
		}
	}
}

// status is the pod's status as the worker would report it: the fields a
// kubelet owns are the worker's, the rest (QoS class, other conditions) stay
// as they are in pod.
func (w *podWorker) status(pod *corev1.Pod) corev1.PodStatus {
	now := metav1.Now().Rfc3339Copy()
	s := *pod.Status.DeepCopy()
	s.Phase, s.Reason, s.Message = w.phase, w.reason, w.message
	s.HostIP, s.HostIPs = podIP, []corev1.HostIP{{IP: podIP}}
	s.PodIP, s.PodIPs = podIP, []corev1.PodIP{{IP: podIP}}
	s.StartTime = w.startTime
	if !hasCondition(s.Conditions, corev1.PodScheduled) {
		// A pod bound by spec.nodeName never met the scheduler.
		s.Conditions = append(s.Conditions, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now})
	}
	s.Conditions = setPodCondition(s.Conditions, corev1.PodCondition{Type: corev1.PodInitialized, Status: corev1.ConditionTrue}, now)
	ready := corev1.PodCondition{Status: corev1.ConditionTrue}
	if !w.ready {
		names := make([]string, 0, len(pod.Spec.Containers))
		for _, c := range pod.Spec.Containers {
			names = append(names, c.Name)
		}
		ready = corev1.PodCondition{Status: corev1.ConditionFalse, Reason: "ContainersNotReady",
			Message: fmt.Sprintf("containers with unready status: [%s]", strings.Join(names, " "))}
	}
	for _, kind := range []corev1.PodConditionType{corev1.ContainersReady, corev1.PodReady} {
		ready.Type = kind
		s.Conditions = setPodCondition(s.Conditions, ready, now)
	}
	s.ContainerStatuses = nil
	if !w.refused {
		container := pod.Spec.Containers[0]
		s.ContainerStatuses = []corev1.ContainerStatus{{
			Name: container.Name, Image: container.Image, ImageID: w.imageID(container.Image),
			ContainerID: w.containerID, State: w.state, LastTerminationState: w.lastState,
			Ready: w.ready, Started: ptr.To(w.current != nil), RestartCount: w.restarts,
		}}
	}
	return s
}

func (w *podWorker) imageID(image string) string {
	if !w.imageKnown {
		return ""
	}
	return "standin://" + image
}

func hasCondition(conditions []corev1.PodCondition, kind corev1.PodConditionType) bool {
	for _, c := range conditions {
		if c.Type == kind {
			return true
		}
	}
	return false
}

// setPodCondition sets the condition of cond's type to cond, in place if
// there is one; its transition time is now only when its status changes.
func setPodCondition(conditions []corev1.PodCondition, cond corev1.PodCondition, now metav1.Time) []corev1.PodCondition {
	cond.LastTransitionTime = now
	for i, c := range conditions {
		if c.Type == cond.Type {
			if c.Status == cond.Status {
				cond.LastTransitionTime = c.LastTransitionTime
			}
			conditions[i] = cond
			return conditions
		}
	}
	return append(conditions, cond)
}

// summary is the gist of a status for the kubelet's log.
func summary(s corev1.PodStatus) string {
	out := string(s.Phase)
	for _, c := range s.ContainerStatuses {
		state := "running"
		switch {
		case c.State.Waiting != nil:
			state = "waiting " + c.State.Waiting.Reason
		case c.State.Terminated != nil:
			state = fmt.Sprintf("terminated %d", c.State.Terminated.ExitCode)
		}
		out += fmt.Sprintf(", %s %s ready=%t restarts=%d", c.Name, state, c.Ready, c.RestartCount)
	}
	if s.Message != "" {
		out += ": " + s.Message
	}
	return out
}
