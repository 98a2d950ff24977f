package podhealth

import (
	"reflect"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

func pod(name string, owner types.UID, status corev1.PodStatus) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: []metav1.OwnerReference{{UID: owner, Controller: ptr.To(true)}}},
		Status:     status,
	}
}

func waiting(reason, message string, restarts int32) corev1.PodStatus {
	return corev1.PodStatus{
		Phase:      corev1.PodPending,
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}},
		ContainerStatuses: []corev1.ContainerStatus{{Name: "app", RestartCount: restarts,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: message}}}},
	}
}

func TestSummarize(t *testing.T) {
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{UID: "new"}}
	rs.Status.Conditions = []appsv1.ReplicaSetCondition{{Type: appsv1.ReplicaSetReplicaFailure, Status: corev1.ConditionTrue,
		Reason: "FailedCreate", Message: `pods "web-x" is forbidden: exceeded quota`}}
	unschedulable := corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{
		{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: "0/3 nodes are available: 3 Insufficient cpu."}}}
	readyPod := corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
	pods := []*corev1.Pod{
		pod("web-c", "new", waiting("CrashLoopBackOff", "back-off 20s", 4)),
		pod("web-a", "new", waiting("CrashLoopBackOff", "back-off 10s", 2)),
		pod("web-b", "new", waiting("ImagePullBackOff", `Back-off pulling image "web:nope"`, 0)),
		pod("web-d", "new", unschedulable),
		pod("web-e", "new", readyPod),
		pod("other", "old", waiting("ErrImagePull", "", 0)),
	}
	got := Summarize(rs, pods)
	want := Summary{NotReady: 4, Reasons: []Reason{
		{Reason: "CrashLoopBackOff", Message: "back-off 10s", Pods: 2, Restarts: 6},
		{Reason: "ImagePullBackOff", Message: `Back-off pulling image "web:nope"`, Pods: 1},
		{Reason: "Unschedulable", Message: "0/3 nodes are available: 3 Insufficient cpu.", Pods: 1},
		{Reason: "ReplicaFailure", Message: `FailedCreate: pods "web-x" is forbidden: exceeded quota`},
	}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Summarize =\n%+v\nwant\n%+v", got, want)
	}
	if top, want := got.Top(), "2 pods CrashLoopBackOff (back-off 10s), 6 restarts"; top != want {
		t.Fatalf("Top = %q, want %q", top, want)
	}
}

func TestTopOfNothing(t *testing.T) {
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{UID: "new"}}
	if top := Summarize(rs, nil).Top(); top != "" {
		t.Fatalf("Top of no pods = %q", top)
	}
	only := Summary{Reasons: []Reason{{Reason: "ReplicaFailure", Message: "FailedCreate: quota"}}}
	if top, want := only.Top(), "ReplicaFailure (FailedCreate: quota)"; top != want {
		t.Fatalf("Top = %q, want %q", top, want)
	}
}

func TestRunningButNotReady(t *testing.T) {
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{UID: "new"}}
	st := corev1.PodStatus{Phase: corev1.PodRunning,
		Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}},
		ContainerStatuses: []corev1.ContainerStatus{{Name: "app", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}
	got := Summarize(rs, []*corev1.Pod{pod("web-a", "new", st)})
	if len(got.Reasons) != 1 || got.Reasons[0].Reason != "NotReady" || got.Reasons[0].Message != "container app is running but not ready" {
		t.Fatalf("Summarize = %+v", got)
	}
}
