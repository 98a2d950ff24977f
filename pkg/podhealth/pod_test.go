package podhealth

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestOf reads what the pods gate counts from a pod's status.
func TestOf(t *testing.T) {
	oom := metav1.NewTime(time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC))
	ready := metav1.NewTime(oom.Add(time.Minute))
	p := Of(&corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning,
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: ready}},
		ContainerStatuses: []corev1.ContainerStatus{
			{Name: "app", RestartCount: 2, LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "OOMKilled", FinishedAt: oom}}},
			{Name: "sidecar", RestartCount: 1, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}},
		}}})
	want := Pod{Restarts: 3, LastOOMKill: oom.Time, CrashLooping: true, Ready: true, ReadyChanged: ready.Time}
	if p != want {
		t.Errorf("Of = %+v, want %+v", p, want)
	}
	if failed := Of(&corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted"}}); !failed.Failed {
		t.Errorf("an evicted pod read as %+v, want Failed", failed)
	}
}
