package plugin

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubegray/kubectl-gray/internal/testutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// failedMessage is gray-controller's Failure message for degradedWeb, and
// degradedMessage its Message.
const (
	failedMessage   = `replica set web-7c9d5f8b6 has 0 of 3 replicas available, 10s after the step last progressed (progressDeadlineSeconds): 2 pods ImagePullBackOff (Back-off pulling image "nginx:nope")`
	degradedMessage = "revision 2 missed its progress deadline: " + failedMessage
)

// waitingPod is a pod of rs whose container waits for reason, as the kubelet
// reports an image that cannot be pulled or a container that keeps crashing.
func waitingPod(rs *appsv1.ReplicaSet, suffix string, phase corev1.PodPhase, reason, message string, restarts int32) *corev1.Pod {
	p := pod(rs, suffix, false, restarts, time.Minute)
	p.Status.Phase = phase
	p.Status.ContainerStatuses[0].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: message}}
	return p
}

// unschedulablePod is a pod of rs the scheduler found no node for.
func unschedulablePod(rs *appsv1.ReplicaSet, suffix string) *corev1.Pod {
	p := pod(rs, suffix, false, 0, time.Minute)
	p.Status = corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{
		Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
		Message: "0/3 nodes are available: 3 Insufficient cpu.",
	}}}
	return p
}

// degradedWeb is "web" stuck rolling to 30% of 10 on a bad image: none of
// the 3 new pods ever became ready, and the step missed its deadline.
func degradedWeb(t *testing.T) []runtime.Object {
	d := deployment("web",
		testutil.WithImage("nginx:nope"), testutil.WithRevision(2), testutil.WithGeneration(4, 4),
		withCounts(11, 3, 8, 8),
		withGray(t, "30,60", &grayapi.Status{
			Serves: servesInFlight, Mode: grayapi.ModeInstead, Revision: 2, StableRevision: 1, Step: 0, Percent: 30, Target: 3,
			Phase: grayapi.PhaseDegraded, Message: degradedMessage, ObservedGeneration: 4,
			Progress: &grayapi.Progress{At: metav1.MicroTime(ago(time.Minute)), Available: 0},
			Failure:  &grayapi.Failure{Reason: grayapi.ReasonProgressDeadlineExceeded, Message: failedMessage},
		}),
		withCondition(grayapi.ConditionGrayHeld, corev1.ConditionFalse, grayapi.ReasonProgressDeadlineExceeded, degradedMessage, 50*time.Second),
	)
	newRS := replicaSet(d, "2", "7c9d5f8b6", "nginx:nope", 3, 0, time.Minute)
	stableRS := replicaSet(d, "1", "5f7d8c6b9", "nginx:1.26", 8, 8, 48*time.Hour)
	return []runtime.Object{d, newRS, stableRS,
		waitingPod(newRS, "aaaaa", corev1.PodPending, "ImagePullBackOff", `Back-off pulling image "nginx:nope"`, 0),
		waitingPod(newRS, "bbbbb", corev1.PodPending, "ImagePullBackOff", `Back-off pulling image "nginx:nope"`, 0),
		waitingPod(newRS, "ccccc", corev1.PodPending, "ErrImagePull", `failed to pull and unpack image "docker.io/library/nginx:nope": not found`, 0),
		pod(stableRS, "s0", true, 0, 47*time.Hour),
		grayEvent(d, "e1", corev1.EventTypeWarning, grayapi.ReasonGrayDegraded, "Revision 2 at 30%: "+failedMessage, 1, 50*time.Second),
	}
}

// quotaWeb is "web" Degraded at 30% with a crash-looping pod, an
// unschedulable one, and a third the quota keeps the ReplicaSet from creating.
func quotaWeb(t *testing.T) []runtime.Object {
	d := deployment("web", testutil.WithImage("nginx:1.27"), testutil.WithRevision(2), testutil.WithGeneration(4, 4), withCounts(10, 2, 8, 8),
		testutil.WithAnnotation(grayapi.OnFailureAnnotation, "hold"),
		withGray(t, "30", &grayapi.Status{
			Serves: servesInFlight, Mode: grayapi.ModeInstead, Revision: 2, StableRevision: 1, Percent: 30, Target: 3,
			Phase: grayapi.PhaseDegraded, Message: "revision 2 missed its progress deadline at 30%", ObservedGeneration: 4,
			Failure: &grayapi.Failure{Reason: grayapi.ReasonProgressDeadlineExceeded, Message: `ReplicaSet "web-7c9d5f8b6" has 0 of 3 replicas available after the progress deadline of 10s`},
		}))
	newRS := replicaSet(d, "2", "7c9d5f8b6", "nginx:1.27", 3, 0, time.Minute)
	newRS.Status.Conditions = []appsv1.ReplicaSetCondition{{
		Type: appsv1.ReplicaSetReplicaFailure, Status: corev1.ConditionTrue, Reason: "FailedCreate",
		Message: `pods "web-7c9d5f8b6-zzzzz" is forbidden: exceeded quota: compute, requested: cpu=500m, used: cpu=2, limited: cpu=2`,
	}}
	stableRS := replicaSet(d, "1", "5f7d8c6b9", "nginx:1.26", 8, 8, 48*time.Hour)
	return []runtime.Object{d, newRS, stableRS,
		waitingPod(newRS, "aaaaa", corev1.PodRunning, "CrashLoopBackOff", "back-off 40s restarting failed container=app pod=web-7c9d5f8b6-aaaaa", 4),
		unschedulablePod(newRS, "bbbbb"),
	}
}

// autoRolledBackWeb is "web" after an older gray-controller's
// kubegray.io/on-failure: rollback wrote the stable template over the failed
// revision 2: revision 3 (revision 1's template) is complete.
func autoRolledBackWeb(t *testing.T) []runtime.Object {
	d := deployment("web", testutil.WithRevision(3), testutil.WithGeneration(6, 6),
		testutil.WithAnnotation(grayapi.OnFailureAnnotation, "rollback"),
		withGray(t, "30,60", &grayapi.Status{
			Serves: grayapi.Serves{}, Mode: grayapi.ModeInstead, Revision: 3, StableRevision: 3, Step: 2, Percent: 100, Target: 10,
			Phase: grayapi.PhaseComplete, Message: "all 10 replicas run revision 3", ObservedGeneration: 6,
			Failure: &grayapi.Failure{Reason: grayapi.ReasonProgressDeadlineExceeded, Message: failedMessage, RolledBackFrom: 2},
		}))
	stableRS := replicaSet(d, "3", "5f7d8c6b9", "nginx:1.26", 10, 10, 48*time.Hour)
	failedRS := replicaSet(d, "2", "7c9d5f8b6", "nginx:nope", 0, 0, 5*time.Minute)
	objs := []runtime.Object{d, stableRS, failedRS,
		grayEvent(d, "e1", corev1.EventTypeWarning, grayapi.ReasonGrayDegraded, "Revision 2 at 30%: "+failedMessage, 1, 4*time.Minute),
		grayEvent(d, "e2", corev1.EventTypeNormal, grayapi.ReasonGrayRolledBack,
			"Rolling back to stable revision 3 (replica set web-5f7d8c6b9): hold points skipped after revision 2 failed (kubegray.io/on-failure=rollback): "+failedMessage, 1, 4*time.Minute),
	}
	for _, s := range []string{"s0", "s1"} {
		objs = append(objs, pod(stableRS, s, true, 0, 47*time.Hour))
	}
	return objs
}

// abortedMessage is gray-controller's Message for abortedWeb.
const abortedMessage = "revision 2 aborted: replica set web-7c9d5f8b6 scaled to 0, stable revision 1 back to 10 replicas, template kept"

// abortedWeb is degradedWeb after kubegray.io/on-failure: abort: the
// canary's ReplicaSet at 0 and labelled aborted, the stable one back at all
// 10 replicas, the template (nginx:nope, revision 2) as it was written.
func abortedWeb(t *testing.T) []runtime.Object {
	d := deployment("web",
		testutil.WithImage("nginx:nope"), testutil.WithRevision(2), testutil.WithGeneration(4, 4),
		withCounts(10, 0, 10, 10),
		testutil.WithAnnotation(grayapi.OnFailureAnnotation, "abort"),
		withGray(t, "30,60", &grayapi.Status{
			Serves: servesAborted, Mode: grayapi.ModeInstead, Revision: 2, StableRevision: 1, Step: 0, Percent: 30, Target: 3,
			Phase: grayapi.PhaseAborted, Message: abortedMessage, ObservedGeneration: 4,
			Failure: &grayapi.Failure{Reason: grayapi.ReasonProgressDeadlineExceeded, Message: failedMessage},
		}),
		withCondition(grayapi.ConditionGrayHeld, corev1.ConditionFalse, grayapi.ReasonAborted, abortedMessage, 40*time.Second),
		withCondition(grayapi.ConditionStalled, corev1.ConditionTrue, grayapi.ReasonAborted, abortedMessage, 40*time.Second),
	)
	newRS := replicaSet(d, "2", "7c9d5f8b6", "nginx:nope", 0, 0, time.Minute)
	newRS.Labels[grayapi.AbortedLabel] = "2"
	stableRS := replicaSet(d, "1", "5f7d8c6b9", "nginx:1.26", 10, 10, 48*time.Hour)
	objs := []runtime.Object{d, newRS, stableRS,
		grayEvent(d, "e1", corev1.EventTypeWarning, grayapi.ReasonGrayDegraded, "Revision 2 at 30%: "+failedMessage, 1, 50*time.Second),
		grayEvent(d, "e2", corev1.EventTypeWarning, grayapi.ReasonGrayAborted, "Revision 2 aborted (kubegray.io/on-failure: abort): "+failedMessage, 1, 40*time.Second),
	}
	for _, s := range []string{"s0", "s1", "s2"} {
		objs = append(objs, pod(stableRS, s, true, 0, 47*time.Hour))
	}
	return objs
}

// abortedByHandWeb is heldWeb after a person aborted it before it failed
// ("2:abort") under the default policy: the canary's ReplicaSet at 0 and
// labelled aborted, the stable one back at all 10 replicas.
func abortedByHandWeb(t *testing.T) []runtime.Object {
	const message = "revision 2 aborted by 2:abort: replica set web-7c9d5f8b6 scaled to 0, stable revision 1 back to 10 replicas, template kept"
	d := deployment("web",
		testutil.WithImage("nginx:1.27"), testutil.WithRevision(2), testutil.WithGeneration(4, 4),
		withCounts(10, 0, 10, 10),
		withGray(t, "10,30,60", &grayapi.Status{
			Serves: servesAborted, Mode: grayapi.ModeInstead, Revision: 2, StableRevision: 1, Step: 0, Percent: 10, Target: 1,
			Phase: grayapi.PhaseAborted, Message: message, ObservedGeneration: 4,
			Failure: &grayapi.Failure{Reason: grayapi.ReasonAborted, Message: "aborted by 2:abort while held at 10%"},
		}),
		withCondition(grayapi.ConditionGrayHeld, corev1.ConditionFalse, grayapi.ReasonAborted, message, time.Minute),
		withCondition(grayapi.ConditionStalled, corev1.ConditionTrue, grayapi.ReasonAborted, message, time.Minute),
	)
	newRS := replicaSet(d, "2", "7c9d5f8b6", "nginx:1.27", 0, 0, 8*time.Minute)
	newRS.Labels[grayapi.AbortedLabel] = "2"
	stableRS := replicaSet(d, "1", "5f7d8c6b9", "nginx:1.26", 10, 10, 48*time.Hour)
	objs := []runtime.Object{d, newRS, stableRS,
		grayEvent(d, "e1", corev1.EventTypeNormal, grayapi.ReasonGrayHeld, "held at 10%: 1 of 10 replicas on revision 2", 1, 5*time.Minute),
		grayEvent(d, "e2", corev1.EventTypeWarning, grayapi.ReasonGrayAborted, "Revision 2 aborted by 2:abort", 1, time.Minute),
	}
	for _, s := range []string{"s0", "s1"} {
		objs = append(objs, pod(stableRS, s, true, 0, 47*time.Hour))
	}
	return objs
}

// timedHoldWeb is heldWeb with kubegray.io/hold-for and on-failure abort,
// its hold first settled settled ago (before HeldAt, as after a scale while
// held): settled 5m50s ago, a 10m hold has 4m10s left.
func timedHoldWeb(holdFor string, settled time.Duration) func(t *testing.T) []runtime.Object {
	return func(t *testing.T) []runtime.Object {
		objs := heldWeb(t)
		d := objs[0].(*appsv1.Deployment)
		st, err := grayapi.ParseStatus(d.Annotations[grayapi.StatusAnnotation])
		if err != nil {
			t.Fatal(err)
		}
		st.SettledAt = heldAt(settled)
		withGray(t, "10,30,60", &st)(d)
		d.Annotations[grayapi.HoldForAnnotation] = holdFor
		d.Annotations[grayapi.OnFailureAnnotation] = "abort"
		return objs
	}
}

// pointHoldsWeb is heldWeb whose hold points name durations of their own, with
// kubegray.io/hold-for for the one that names none: its first hold (5m, recorded as it
// settled 3m ago) has 2m left.
func pointHoldsWeb(t *testing.T) []runtime.Object {
	objs := heldWeb(t)
	d := objs[0].(*appsv1.Deployment)
	st, err := grayapi.ParseStatus(d.Annotations[grayapi.StatusAnnotation])
	if err != nil {
		t.Fatal(err)
	}
	st.SettledAt = heldAt(3 * time.Minute)
	st.HoldFor = &metav1.Duration{Duration: 5 * time.Minute}
	withGray(t, "10@5m,30,60@1h30m", &st)(d)
	d.Annotations[grayapi.HoldForAnnotation] = "10m"
	return objs
}

func TestStatusFailureOutput(t *testing.T) {
	tests := []struct {
		name    string
		objects func(t *testing.T) []runtime.Object
		output  string
	}{
		{name: "degraded", objects: degradedWeb},
		{name: "degraded-json", objects: degradedWeb, output: "json"},
		{name: "degraded-quota", objects: quotaWeb},
		{name: "rolled-back", objects: autoRolledBackWeb},
		{name: "aborted", objects: abortedWeb},
		{name: "aborted-json", objects: abortedWeb, output: "json"},
		{name: "aborted-by-hand", objects: abortedByHandWeb},
		{name: "timed-hold", objects: timedHoldWeb("10m", 5*time.Minute+50*time.Second)},
		{name: "timed-hold-json", objects: timedHoldWeb("10m", 5*time.Minute+50*time.Second), output: "json"},
		{name: "timed-hold-due", objects: timedHoldWeb("5m", 5*time.Minute+50*time.Second)},
		{name: "point-holds", objects: pointHoldsWeb},
		{name: "point-holds-json", objects: pointHoldsWeb, output: "json"},
		{
			name: "invalid-policy",
			objects: func(t *testing.T) []runtime.Object {
				objs := heldWeb(t)
				d := objs[0].(*appsv1.Deployment)
				d.Annotations[grayapi.OnFailureAnnotation] = "Rollback"
				d.Annotations[grayapi.HoldForAnnotation] = "10"
				return objs
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := fake.NewClientset(tt.objects(t)...)
			out, errOut, err := statusRun(context.Background(), cs, []string{"web"}, func(o *StatusOptions) { *o.PrintFlags.OutputFormat = tt.output })
			if err != nil {
				t.Fatal(err)
			}
			if errOut != "" {
				t.Errorf("unexpected stderr %q", errOut)
			}
			checkGolden(t, "status", tt.name, out)
		})
	}
}

// TestStatusReadsPodsOnce checks that the failure view costs no API call
// beyond the one pod List the tree already makes.
func TestStatusReadsPodsOnce(t *testing.T) {
	cs := fake.NewClientset(degradedWeb(t)...)
	if _, _, err := statusRun(context.Background(), cs, []string{"web"}, nil); err != nil {
		t.Fatal(err)
	}
	lists := 0
	for _, a := range cs.Actions() {
		if a.GetVerb() == "list" && a.GetResource().Resource == "pods" {
			lists++
		}
	}
	if lists != 1 {
		t.Fatalf("listed pods %d times, want once", lists)
	}
}

func TestNotReadyView(t *testing.T) {
	objs := quotaWeb(t)
	newRS := objs[1].(*appsv1.ReplicaSet)
	var pods []*corev1.Pod
	for _, o := range objs {
		if p, ok := o.(*corev1.Pod); ok {
			pods = append(pods, p)
		}
	}
	// A ready pod of the new ReplicaSet and a pod of another one are not counted.
	pods = append(pods, pod(newRS, "ready", true, 9, time.Minute), pod(objs[2].(*appsv1.ReplicaSet), "old", false, 3, time.Hour))
	v := notReadyView(newRS, pods)
	if v == nil || v.ReplicaSet != "web-7c9d5f8b6" || v.Pods != 2 {
		t.Fatalf("notReadyView = %+v, want 2 pods of web-7c9d5f8b6", v)
	}
	var got []string
	for _, r := range v.Reasons {
		got = append(got, r.Reason)
	}
	if want := "CrashLoopBackOff,Unschedulable,ReplicaFailure"; strings.Join(got, ",") != want {
		t.Errorf("reasons %v, want %s", got, want)
	}
	if v.Reasons[0].Restarts != 4 || v.Top != "1 pod CrashLoopBackOff (back-off 40s restarting failed container=app pod=web-7c9d5f8b6-aaaaa), 4 restarts" {
		t.Errorf("top %q, restarts %d", v.Top, v.Reasons[0].Restarts)
	}

	if v := notReadyView(nil, pods); v != nil {
		t.Errorf("no new ReplicaSet: %+v, want nil", v)
	}
	if v := notReadyView(newRS.DeepCopy(), []*corev1.Pod{pod(newRS, "ready", true, 0, time.Minute)}); v == nil || len(v.Reasons) != 1 || v.Reasons[0].Pods != 0 {
		t.Errorf("all ready but ReplicaFailure: %+v, want the condition alone", v)
	}
	healthy := newRS.DeepCopy()
	healthy.Status.Conditions = nil
	if v := notReadyView(healthy, []*corev1.Pod{pod(newRS, "ready", true, 0, time.Minute)}); v != nil {
		t.Errorf("all ready: %+v, want nil", v)
	}
}

func TestFailureError(t *testing.T) {
	degraded := func(onFailure string, top string) StatusView {
		v := StatusView{Namespace: ns, Name: "web", Gray: true, Phase: grayapi.PhaseDegraded, Message: "phase message", StableRevision: 1,
			Policy:  &PolicyView{OnFailure: onFailure},
			Failure: &FailureView{Reason: grayapi.ReasonProgressDeadlineExceeded, Message: "0 of 3 available: 2 pods ImagePullBackOff"}}
		if top != "" {
			v.NotReady = &NotReadyView{Top: top}
		}
		return v
	}
	rolledBack := func(phase grayapi.Phase) StatusView {
		return StatusView{Namespace: ns, Name: "web", Gray: true, Phase: phase, Revision: 3,
			Failure:  &FailureView{Reason: grayapi.ReasonProgressDeadlineExceeded, Message: "0 of 3 available", RolledBackFrom: 2},
			NotReady: &NotReadyView{Top: "1 pod Pending"}, Policy: &PolicyView{OnFailure: string(grayapi.OnFailureAbort)}}
	}
	undone := func(reason string) StatusView {
		v := rolledBack(grayapi.PhaseComplete)
		v.Policy = &PolicyView{OnFailure: string(grayapi.OnFailureHold)}
		v.Failure.Reason = reason
		return v
	}
	aborted := func(onFailure, reason string) StatusView {
		return StatusView{Namespace: ns, Name: "web", Gray: true, Phase: grayapi.PhaseAborted, Revision: 2, StableRevision: 1,
			Message: "phase message", Policy: &PolicyView{OnFailure: onFailure},
			Failure: &FailureView{Reason: reason, Message: "0 of 3 available"}}
	}
	const again = "'kubectl gray retry web', or a new template, starts again; 'kubectl gray undo web' writes the stable template back"
	tests := []struct {
		name string
		view StatusView
		want string
	}{
		{name: "degraded, hold", view: degraded("hold", "2 pods ImagePullBackOff"),
			want: "deployment default/web is Degraded: 0 of 3 available: 2 pods ImagePullBackOff; see 'kubectl gray status web', then size it back to the stable revision with 'kubectl gray abort web' (template kept) or roll back with 'kubectl gray undo web'"},
		{name: "degraded, pods changed since the controller's message", view: degraded("hold", "3 pods ImagePullBackOff"),
			want: "deployment default/web is Degraded: 0 of 3 available: 2 pods ImagePullBackOff; not ready: 3 pods ImagePullBackOff; see 'kubectl gray status web', then size it back to the stable revision with 'kubectl gray abort web' (template kept) or roll back with 'kubectl gray undo web'"},
		{name: "degraded, abort", view: degraded("abort", ""),
			want: "deployment default/web is Degraded: 0 of 3 available: 2 pods ImagePullBackOff; kubegray.io/on-failure: abort aborts it, back to stable revision 1 with the template kept; see 'kubectl gray status web'"},
		{name: "degraded, abort, but no stable revision to go back to", view: func() StatusView {
			v := degraded("abort", "")
			v.StableRevision = 0
			return v
		}(),
			want: "deployment default/web is Degraded: 0 of 3 available: 2 pods ImagePullBackOff; see 'kubectl gray status web', then size it back to the stable revision with 'kubectl gray abort web' (template kept) or roll back with 'kubectl gray undo web'"},
		{name: "degraded without a failure", view: StatusView{Namespace: ns, Name: "web", Phase: grayapi.PhaseDegraded},
			want: "deployment default/web is Degraded: (no message); see 'kubectl gray status web', then size it back to the stable revision with 'kubectl gray abort web' (template kept) or roll back with 'kubectl gray undo web'"},
		{name: "rolling back", view: rolledBack(grayapi.PhaseRolledBack),
			want: "deployment default/web rolled back revision 2 to the stable revision after it failed: 0 of 3 available"},
		{name: "rolled back and complete", view: rolledBack(grayapi.PhaseComplete),
			want: "deployment default/web rolled back revision 2 to the stable revision after it failed: 0 of 3 available"},
		{name: "a failed canary undone by hand", view: undone(grayapi.ReasonProgressDeadlineExceeded),
			want: "deployment default/web rolled back revision 2 to the stable revision after it failed: 0 of 3 available"},
		{name: "aborted by on-failure", view: aborted("abort", grayapi.ReasonProgressDeadlineExceeded),
			want: "deployment default/web is Aborted: 0 of 3 available; aborted revision 2 automatically (kubegray.io/on-failure: abort); " + again},
		{name: "a failed canary aborted by hand", view: aborted("hold", grayapi.ReasonProgressDeadlineExceeded),
			want: "deployment default/web is Aborted: 0 of 3 available; aborted revision 2 on request after it failed; " + again},
		{name: "a healthy canary aborted by hand still ends the wait", view: aborted("abort", grayapi.ReasonAborted),
			want: "deployment default/web is Aborted: 0 of 3 available; aborted revision 2 on request before it failed; " + again},
		{name: "aborted without a recorded failure", view: func() StatusView {
			v := aborted("hold", "")
			v.Failure = nil
			return v
		}(),
			want: "deployment default/web is Aborted: phase message; aborted revision 2; " + again},
		{name: "a healthy canary undone by hand is no failure", view: undone(grayapi.ReasonRolledBack)},
		{name: "failure kept, nothing rolled back, not degraded", view: StatusView{Phase: grayapi.PhaseHeld, Failure: &FailureView{Message: "old"}}},
		{name: "progressing", view: StatusView{Phase: grayapi.PhaseProgressing, NotReady: &NotReadyView{Top: "1 pod Pending"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := failureError(tt.view)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("failureError() = %v, want nil", err)
			case tt.want != "" && (err == nil || err.Error() != tt.want):
				t.Fatalf("failureError() = %v\nwant %s", err, tt.want)
			}
		})
	}
}

func TestStatusUntilFailed(t *testing.T) {
	tests := []struct {
		name    string
		objects func(t *testing.T) []runtime.Object
		until   string
		want    string
	}{
		{name: "degraded", objects: degradedWeb, until: "held",
			// The controller's message names the top reason already: it is said once.
			want: "deployment default/web is Degraded: " + failedMessage + "; see 'kubectl gray status web', then size it back to the stable revision with 'kubectl gray abort web' (template kept) or roll back with 'kubectl gray undo web'"},
		{name: "rolled back, complete on the stable revision", objects: autoRolledBackWeb, until: "complete",
			want: "deployment default/web rolled back revision 2 to the stable revision after it failed: " + failedMessage},
		{name: "aborted, waiting for the hold", objects: abortedWeb, until: "held",
			want: "deployment default/web is Aborted: " + failedMessage + "; aborted revision 2 automatically (kubegray.io/on-failure: abort)" +
				"; 'kubectl gray retry web', or a new template, starts again; 'kubectl gray undo web' writes the stable template back"},
		{name: "aborted by hand, waiting for the end", objects: abortedByHandWeb, until: "complete",
			want: "deployment default/web is Aborted: aborted by 2:abort while held at 10%; aborted revision 2 on request before it failed" +
				"; 'kubectl gray retry web', or a new template, starts again; 'kubectl gray undo web' writes the stable template back"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := fake.NewClientset(tt.objects(t)...)
			out, _, err := statusRun(context.Background(), cs, []string{"web"}, func(o *StatusOptions) { o.Until = tt.until })
			if err == nil || err.Error() != tt.want || ExitCode(err) != ExitFailure {
				t.Fatalf("err = %v (exit %d)\nwant %s (exit 1)", err, ExitCode(err), tt.want)
			}
			if out != "" {
				t.Errorf("printed %q; the reason is the error", out)
			}
		})
	}
}

// TestStatusUntilWaitsAfterRetry checks that an Aborted status does not end
// the wait while a retry request is pending: the rollout it starts is the one
// awaited.
func TestStatusUntilWaitsAfterRetry(t *testing.T) {
	objs := abortedWeb(t)
	objs[0].(*appsv1.Deployment).Annotations[grayapi.ResumeAnnotation] = "2:retry"
	cs := fake.NewClientset(objs...)
	_, _, err := statusRun(context.Background(), cs, []string{"web"}, func(o *StatusOptions) {
		o.Until, o.Timeout = "held", 50*time.Millisecond
	})
	if ExitCode(err) != ExitTimeout {
		t.Fatalf("err = %v (exit %d), want a timeout (exit 2)", err, ExitCode(err))
	}
}

// TestStatusUntilWaitsForNewRollout checks that the Failure of the last
// rollout, kept in the status, does not end the wait for the next one
// before gray-controller has seen it.
func TestStatusUntilWaitsForNewRollout(t *testing.T) {
	objs := autoRolledBackWeb(t)
	objs[0].(*appsv1.Deployment).Generation = 7
	cs := fake.NewClientset(objs...)
	_, _, err := statusRun(context.Background(), cs, []string{"web"}, func(o *StatusOptions) {
		o.Until, o.Timeout = "held", 50*time.Millisecond
	})
	if ExitCode(err) != ExitTimeout {
		t.Fatalf("err = %v (exit %d), want a timeout (exit 2)", err, ExitCode(err))
	}
}
