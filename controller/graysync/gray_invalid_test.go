package graysync

import (
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubegray/kubectl-gray/internal/testutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// An invalid annotation freezes a rollout's progress, never its replica count: a Complete
// Deployment scales as upstream would (everything on its one ReplicaSet).
func TestScaleWhileInvalidComplete(t *testing.T) {
	for key, value := range map[string]string{grayapi.PercentAnnotation: "abc", grayapi.HoldForAnnotation: "10", grayapi.OnFailureAnnotation: "Rollback"} {
		t.Run(key, func(t *testing.T) {
			w := startGray(t, testutil.GrayWeb(10, "20"))
			w.setAnnotation(key, value)
			w.settle()
			w.wantState(grayapi.PhaseInvalid, false)
			for _, replicas := range []int32{15, 4} {
				w.edit(func(d *appsv1.Deployment) { d.Spec.Replicas = ptrInt32(replicas) })
				w.settle()
				w.wantSizes(sz("v1", int(replicas)))
				w.wantState(grayapi.PhaseInvalid, false)
			}
		})
	}
}

// A held rollout scales with its share kept while Invalid: 20% of 15 is 3, of 4 is 1.
func TestScaleWhileInvalidHeld(t *testing.T) {
	w := startGray(t, testutil.GrayWeb(10, "20"))
	w.setImage("v2")
	w.settle()
	w.wantState(grayapi.PhaseHeld, true)
	w.setAnnotation(grayapi.PercentAnnotation, "20%%")
	w.settle()
	for _, c := range []struct{ replicas, stable, canary int32 }{{15, 12, 3}, {4, 3, 1}} {
		w.edit(func(d *appsv1.Deployment) { d.Spec.Replicas = ptrInt32(c.replicas) })
		w.settle()
		w.wantSizes(sz("v1", int(c.stable), "v2", int(c.canary)))
		w.wantState(grayapi.PhaseInvalid, true)
		if st := w.status(); st.Target != c.canary || st.HeldAt == nil {
			t.Fatalf("status %+v at %d replicas, want target %d and the hold kept", st, c.replicas, c.canary)
		}
	}
}

// A resume or undo request cannot be served while Invalid: it is dropped at once with the
// reason, so that fixing the annotation later does not carry it out by surprise.
func TestRequestsWhileInvalidAreDroppedAtOnce(t *testing.T) {
	for _, action := range []string{"undo", "next", "retry"} {
		t.Run(action, func(t *testing.T) {
			w := startGray(t, testutil.GrayWeb(10, "20,50"))
			w.setImage("v2")
			w.settle()
			w.setAnnotation(grayapi.PercentAnnotation, "x")
			w.settle()
			w.takeEvents()
			w.setAnnotation(grayapi.ResumeAnnotation, "2:"+action)
			w.settle()
			if _, ok := w.deployment().Annotations[grayapi.ResumeAnnotation]; ok {
				t.Fatalf("the %s request was kept while Invalid", action)
			}
			w.wantEvents("GrayResumeIgnored", "the rollout is Invalid")
			w.setAnnotation(grayapi.PercentAnnotation, "20,50")
			w.settle()
			w.wantState(grayapi.PhaseHeld, true)
			w.wantSizes(sz("v1", 8, "v2", 2))
		})
	}
}

// An abort needs no hold point: it is carried out while Invalid.
func TestAbortWhileInvalid(t *testing.T) {
	w := startGray(t, testutil.GrayWeb(10, "20"))
	w.setImage("v2")
	w.settle()
	w.setAnnotation(grayapi.PercentAnnotation, "x")
	w.settle()
	w.setAnnotation(grayapi.ResumeAnnotation, "2:abort")
	w.settle()
	w.wantSizes(sz("v1", 10, "v2", 0))
	if st := w.status(); st.Phase != grayapi.PhaseAborted {
		t.Fatalf("phase %s after an abort while Invalid, want Aborted", st.Phase)
	}
}

// The Warning that says a request was dropped while Invalid follows the write that drops it.
// When that write loses to the person who fixes the annotation (a conflict), the next sync finds
// a valid rollout and serves the request: a Warning sent before the write would have said
// "ignored" of a request that was then carried out (seen in make test: an undo done after its
// GrayResumeIgnored).
func TestRequestDroppedWhileInvalidIsReportedOnceDropped(t *testing.T) {
	worlds := map[string]struct {
		start func(t *testing.T) *grayWorld
		write string // the verb of the write that drops the request
	}{
		"instead": {func(t *testing.T) *grayWorld { return startGray(t, testutil.GrayWeb(10, "20,50")) }, "update"},
		"alongside": {func(t *testing.T) *grayWorld {
			w := newAlongsideWorld(t, testutil.GrayWeb(10, "20,50"), grayapi.TakeoverAdmission)
			w.step()
			return w
		}, "patch"},
	}
	for name, world := range worlds {
		t.Run(name, func(t *testing.T) {
			w := world.start(t)
			if name == "alongside" {
				w.takeOverAsPolicy("v2", savedDefault)
			} else {
				w.setImage("v2")
			}
			w.settle()
			wantPhase(t, w, grayapi.PhaseHeld)
			w.setAnnotation(grayapi.PercentAnnotation, "x")
			w.settle()
			w.takeEvents()
			w.setAnnotation(grayapi.ResumeAnnotation, "2:undo")
			fixed := false
			w.f.client.PrependReactor(world.write, "deployments", func(clienttesting.Action) (bool, runtime.Object, error) {
				if !fixed {
					fixed = true
					w.setAnnotation(grayapi.PercentAnnotation, "20,50") // lands first: the write in flight conflicts
				}
				return false, nil, nil
			})
			w.allowConflicts = true
			w.sync()
			if !fixed {
				t.Fatal("the sync wrote no Deployment: nothing dropped the request")
			}
			if events := w.takeEvents(); slices.ContainsFunc(events, func(e string) bool { return strings.Contains(e, "GrayResumeIgnored") }) {
				t.Fatalf("a GrayResumeIgnored Warning for a request still on the Deployment: %q", events)
			}
			w.settle()
			// The undo was served: the template is v1's again, a revision of its own.
			w.wantSizes(sz("v1", 10, "v2", 0))
			wantPhase(t, w, grayapi.PhaseComplete)
			if image := w.deployment().Spec.Template.Spec.Containers[0].Image; image != "v1" {
				t.Fatalf("template image %s after the undo, want v1", image)
			}
			for _, e := range w.takeEvents() {
				if strings.Contains(e, "GrayResumeIgnored") {
					t.Fatalf("the undo was carried out and reported ignored: %q", e)
				}
			}
		})
	}
}

// wantPhase checks the phase alone: in alongside mode the rest of the status is the built-in
// controller's, which this harness does not run.
func wantPhase(t *testing.T, w *grayWorld, phase grayapi.Phase) {
	t.Helper()
	if st := w.status(); st.Phase != phase {
		t.Fatalf("phase %s (%s), want %s", st.Phase, st.Message, phase)
	}
}
