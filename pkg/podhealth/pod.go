package podhealth

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Pod is what the gray pods gate (pkg/gates) reads of one pod's health, which the controller's
// pod cache keeps (and little else) for every pod: a few dozen bytes.
type Pod struct {
	// Restarts sums its containers' restart counts.
	Restarts int64
	// LastOOMKill is when a container last ended OOMKilled (zero if none did).
	LastOOMKill time.Time
	// CrashLooping: a container waits in CrashLoopBackOff.
	CrashLooping bool
	// Ready is the Ready condition, ReadyChanged its last transition.
	Ready        bool
	ReadyChanged time.Time
	// Failed: the pod is Failed (evicted, or a container that will not restart failed).
	Failed bool
}

// Of is what the pods gate reads of p.
func Of(p *corev1.Pod) Pod {
	out := Pod{Failed: p.Status.Phase == corev1.PodFailed}
	for _, c := range p.Status.ContainerStatuses {
		out.Restarts += int64(c.RestartCount)
		if t := c.LastTerminationState.Terminated; t != nil && t.Reason == "OOMKilled" && t.FinishedAt.After(out.LastOOMKill) {
			out.LastOOMKill = t.FinishedAt.Time
		}
		if w := c.State.Waiting; w != nil && w.Reason == "CrashLoopBackOff" {
			out.CrashLooping = true
		}
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			out.Ready, out.ReadyChanged = c.Status == corev1.ConditionTrue, c.LastTransitionTime.Time
		}
	}
	return out
}
