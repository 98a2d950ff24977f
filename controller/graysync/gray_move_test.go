package graysync

// Leaving a hold: kubegray.io/resume next and full, a plain unpause, resume requests that are
// ignored, and a pause of the user's own. Scenarios and sizes as described in gray_test.go.

import (
	"reflect"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kubegray/kubectl-gray/internal/testutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

func TestGrayResumeFull(t *testing.T) {
	w := startGray(t, testutil.GrayWeb(10, "10,30,60"))
	w.cap = 1
	w.setImage("v2")
	w.step()
	w.step()
	w.wantState(grayapi.PhaseHeld, true)
	w.wantSizes(sz("v1", 9, "v2", 1))

	w.cap = 10
	w.setAnnotation(grayapi.ResumeAnnotation, "2:full")
	w.step()
	// Full: v2 1 → 1+min(13−10, 9) = 4, never held again.
	w.wantSizes(sz("v1", 9, "v2", 4))
	w.wantState(grayapi.PhaseProgressing, false)
	w.wantEvents("GrayResumed", "resumed at 10%: moving on to all replicas")
	w.settle()
	w.wantSizes(sz("v1", 0, "v2", 10))
	w.wantState(grayapi.PhaseComplete, false)
	for _, e := range w.takeEvents() {
		if strings.Contains(e, "GrayHeld") {
			t.Fatalf("held again after resume full: %q", e)
		}
	}
	w.noFlapping()
}

func TestGrayPlainUnpauseIsNext(t *testing.T) {
	w := startGray(t, testutil.GrayWeb(10, "10,30,60"))
	w.cap = 1
	w.setImage("v2")
	w.step()
	w.step()
	w.wantState(grayapi.PhaseHeld, true)

	// kubectl rollout resume.
	w.cap = 3
	w.edit(func(d *appsv1.Deployment) { d.Spec.Paused = false })
	actions := w.sync()
	if got, want := verbsOf(actions), []string{
		"update deployments/status", // step 1, target 3 recorded before v2 grows
		"update replicasets",        // v2 1 → 3
		"update deployments",        // held again at 30%
		"update deployments/status",
	}; !reflect.DeepEqual(got, want) {
		t.Fatalf("actions = %v, want %v", got, want)
	}
	w.wantSizes(sz("v1", 9, "v2", 3))
	w.wantState(grayapi.PhaseProgressing, true)
	if st := w.status(); st.Step != 1 || st.Target != 3 || st.HeldAt == nil {
		t.Fatalf("status = %+v, want held at step 1 with target 3", st)
	}
	w.wantEvents("GrayResumed", "unpaused at 10%: moving on to 30%", "GrayHolding", "reached 3/10 (30%)")
	w.ready()
	w.settle()
	w.wantSizes(sz("v1", 7, "v2", 3))
	w.wantState(grayapi.PhaseHeld, true)
}

func TestGrayResumeWithUnpauseInOneWrite(t *testing.T) {
	w := startGray(t, testutil.GrayWeb(10, "10,30,60"))
	w.cap = 1
	w.setImage("v2")
	w.settle()
	w.wantState(grayapi.PhaseHeld, true)

	// A client that unpauses and asks for "full" in one write gets one resume, to the end.
	w.cap = 10
	w.edit(func(d *appsv1.Deployment) {
		d.Spec.Paused = false
		d.Annotations[grayapi.ResumeAnnotation] = "2:full"
	})
	w.step()
	w.wantState(grayapi.PhaseProgressing, false)
	if st := w.status(); st.Step != 3 {
		t.Fatalf("step %d, want 3 (full)", st.Step)
	}
	if _, ok := w.deployment().Annotations[grayapi.ResumeAnnotation]; ok {
		t.Fatal("the resume request was not consumed")
	}
	w.settle()
	w.wantState(grayapi.PhaseComplete, false)
}

func TestGrayResumeIgnored(t *testing.T) {
	tests := []struct {
		name  string
		value string
		held  bool
		want  string
	}{
		{name: "stale revision", value: "1:next", held: true, want: "revision 1 is not the rollout in flight (revision 2)"},
		{name: "unparsable", value: "next", held: true, want: `the ":" is missing`},
		{name: "not held", value: "2:next", held: false, want: "revision 2 is not held"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := startGray(t, testutil.GrayWeb(10, "20", testutil.WithRollingUpdate(intstr.FromInt32(0), intstr.FromInt32(1))))
			w.cap = 2
			w.setImage("v2")
			if tc.held {
				w.settle()
				w.wantState(grayapi.PhaseHeld, true)
			} else {
				w.step() // v1 9, v2 0: progressing
			}
			before := w.status()
			w.takeEvents()
			w.setAnnotation(grayapi.ResumeAnnotation, tc.value)
			w.sync()
			if _, ok := w.deployment().Annotations[grayapi.ResumeAnnotation]; ok {
				t.Fatal("the ignored request was left in place")
			}
			w.wantEvents("Warning GrayResumeIgnored", tc.want)
			if st := w.status(); st.Step != before.Step {
				t.Fatalf("step moved %d → %d on an ignored request", before.Step, st.Step)
			}
			if tc.held && !w.deployment().Spec.Paused {
				t.Fatal("an ignored request unpaused the hold")
			}
		})
	}
}

func TestGrayUserPauseRespected(t *testing.T) {
	w := startGray(t, testutil.GrayWeb(10, "20", testutil.WithRollingUpdate(intstr.FromInt32(0), intstr.FromInt32(1))))
	w.cap = 2
	w.setImage("v2")
	w.step()
	w.wantSizes(sz("v1", 9, "v2", 0))

	w.edit(func(d *appsv1.Deployment) { d.Spec.Paused = true })
	for range 2 {
		actions := w.step()
		if n := len(updatedReplicaSets(actions)); n != 0 {
			t.Fatalf("the user's pause was not respected: %d ReplicaSet writes", n)
		}
	}
	w.wantSizes(sz("v1", 9, "v2", 0)) // no top-up to R+surge either
	w.wantState(grayapi.PhaseProgressing, true)
	if st := w.status(); st.HeldAt != nil || !strings.Contains(st.Message, "paused by the user") {
		t.Fatalf("status = %+v, want a user pause without heldAt", st)
	}

	// The user's unpause is just an unpause: no step is skipped.
	w.edit(func(d *appsv1.Deployment) { d.Spec.Paused = false })
	w.settle()
	w.wantSizes(sz("v1", 8, "v2", 2))
	w.wantState(grayapi.PhaseHeld, true)
	if st := w.status(); st.Step != 0 {
		t.Fatalf("step %d, want 0", st.Step)
	}
}
