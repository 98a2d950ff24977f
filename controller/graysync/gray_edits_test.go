package graysync

// Edits to a gray Deployment during a rollout: scaling, a new template or a rollback while held,
// and invalid, changed or removed hold points. Scenarios and sizes as described in gray_test.go.

import (
	"reflect"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/kubegray/kubectl-gray/internal/testutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

func TestGrayScaleWhileHeld(t *testing.T) {
	w := startGray(t, testutil.GrayWeb(10, "20"))
	w.cap = 2
	w.setImage("v2")
	w.settle()
	w.wantSizes(sz("v1", 8, "v2", 2))
	w.wantState(grayapi.PhaseHeld, true)

	for _, tc := range []struct {
		replicas int32
		cap      int32
		want     map[string]int32
	}{
		{replicas: 20, cap: 4, want: sz("v1", 16, "v2", 4)}, // T(20) = 4, old 20−4
		{replicas: 3, cap: 1, want: sz("v1", 2, "v2", 1)},   // T(3) = ceil(0.6) = 1
	} {
		w.cap = tc.cap
		heldAt := w.status().HeldAt
		w.edit(func(d *appsv1.Deployment) { d.Spec.Replicas = &tc.replicas })
		actions := w.step()
		w.wantSizes(tc.want)
		// The hold stays as it is: no unpause and re-pause, no new hold.
		for _, v := range verbsOf(actions) {
			if v == "update deployments" {
				t.Fatalf("scaling to %d rewrote the Deployment: %v", tc.replicas, verbsOf(actions))
			}
		}
		if st := w.status(); st.HeldAt == nil || !st.HeldAt.Equal(heldAt) {
			t.Fatalf("heldAt %v after scaling, want %v", st.HeldAt, heldAt)
		}
		// One write per ReplicaSet, the new one first, both re-annotated with the new size.
		written := updatedReplicaSets(actions)
		if len(written) != 2 || written[0].Spec.Template.Spec.Containers[0].Image != "v2" {
			t.Fatalf("scaling to %d wrote %d ReplicaSets", tc.replicas, len(written))
		}
		for _, rs := range written {
			if rs.Annotations["deployment.kubernetes.io/desired-replicas"] != strconv.Itoa(int(tc.replicas)) {
				t.Errorf("%s annotated desired %s, want %d", rs.Name, rs.Annotations["deployment.kubernetes.io/desired-replicas"], tc.replicas)
			}
		}
		w.settle()
		w.wantSizes(tc.want)
		w.wantState(grayapi.PhaseHeld, true)
		if st := w.status(); st.Target != tc.cap {
			t.Fatalf("recorded target %d, want %d", st.Target, tc.cap)
		}
	}
}

func TestGrayNewTemplateWhileHeld(t *testing.T) {
	w := startGray(t, testutil.GrayWeb(10, "20"))
	w.cap = 2
	w.setImage("v2")
	w.settle()
	w.wantState(grayapi.PhaseHeld, true)

	// v3 while held: the hold is released and the rollout starts again at 20%. v3 is created
	// at 2; the old ReplicaSets may lose min(12−8−2, 10−8) = 2 and the abandoned canary v2
	// goes first, so the stable v1 keeps its 8.
	w.setImage("v3")
	w.step()
	w.wantSizes(sz("v1", 8, "v2", 0, "v3", 2))
	w.wantState(grayapi.PhaseProgressing, true)
	st := w.status()
	if st.Revision != 3 || st.StableRevision != 1 || st.Step != 0 || st.Target != 2 {
		t.Fatalf("status = %+v, want revision 3, stable 1, step 0, target 2", st)
	}
	w.wantEvents("GrayHeld", "holds 2/10 (20%)") // held again at the first point
	w.step()
	w.wantState(grayapi.PhaseHeld, true)
	w.wantSizes(sz("v1", 8, "v2", 0, "v3", 2))
}

func TestGrayRollbackToStableWhileHeld(t *testing.T) {
	w := startGray(t, testutil.GrayWeb(10, "20"))
	w.cap = 2
	w.setImage("v2")
	w.settle()
	w.wantState(grayapi.PhaseHeld, true)

	// Back to v1 (what kubectl gray undo does): revision 1 becomes revision 3, and since it
	// served the stable revision every hold point is skipped.
	w.noFlapping()
	w.rsWrites = nil // v1 grows back from here on: a rollback, not a fight
	w.cap = 10
	w.setImage("v1")
	w.step()
	// v1 8 → 8+min(13−10, 2) = 10.
	w.wantSizes(sz("v1", 10, "v2", 2))
	w.wantState(grayapi.PhaseRolledBack, false)
	w.wantEvents("GrayRolledBack", "stable revision 1")
	if st := w.status(); st.Revision != 3 || st.StableRevision != 1 || st.Percent != 100 {
		t.Fatalf("status = %+v, want revision 3 rolling back to stable 1", st)
	}
	w.step()
	w.wantSizes(sz("v1", 10, "v2", 0))
	w.step()
	w.wantState(grayapi.PhaseComplete, false)
	if st := w.status(); st.StableRevision != 3 {
		t.Fatalf("stable revision %d after the rollback, want 3", st.StableRevision)
	}
	w.wantEvents("GrayComplete")
	w.noFlapping()
}

func TestGrayInvalidPercent(t *testing.T) {
	for _, value := range []string{"abc", "150", "-5", "30,10", "20%%", ""} {
		t.Run(value, func(t *testing.T) {
			w := startGray(t, testutil.GrayWeb(10, "20"))
			w.cap = 0 // frozen: not a single new pod
			w.edit(func(d *appsv1.Deployment) {
				d.Annotations[grayapi.PercentAnnotation] = value
				d.Spec.Template.Spec.Containers[0].Image = "v2"
			})
			actions := w.step()
			if got, want := verbsOf(actions), []string{"update deployments/status"}; !reflect.DeepEqual(got, want) {
				t.Fatalf("frozen sync actions = %v, want %v", got, want)
			}
			w.wantSizes(sz("v1", 10))
			w.wantState(grayapi.PhaseInvalid, false)
			quoted := `"` + value + `"`
			w.wantEvents("Warning GrayInvalid", quoted, "strictly increasing integers 0-99")
			if st := w.status(); !strings.Contains(st.Message, quoted) {
				t.Fatalf("message %q does not quote %s", st.Message, quoted)
			}
			// Still frozen, and the same bad value is not reported twice.
			if n := writes(w.step()); n != 0 {
				t.Fatalf("second frozen sync made %d writes", n)
			}
			if e := w.takeEvents(); len(e) != 0 {
				t.Fatalf("second frozen sync emitted %q", e)
			}

			// Fixing it continues where the rollout stood.
			w.cap = 2
			w.setAnnotation(grayapi.PercentAnnotation, "20")
			w.step()
			w.wantSizes(sz("v1", 8, "v2", 2))
			w.step()
			w.wantState(grayapi.PhaseHeld, true)
		})
	}
}

// TestGrayInvalidPercentHuge pins the size of what a huge bad kubegray.io/percent turns into: the
// status message and the GrayInvalid event stay a few hundred bytes that still name the key, the
// rule and the value's length, and nothing is resized.
func TestGrayInvalidPercentHuge(t *testing.T) {
	w := startGray(t, testutil.GrayWeb(10, "20"))
	w.cap = 0
	w.edit(func(d *appsv1.Deployment) {
		d.Annotations[grayapi.PercentAnnotation] = strings.Repeat("5", 250000)
		d.Spec.Template.Spec.Containers[0].Image = "v2"
	})
	w.step()
	w.wantSizes(sz("v1", 10))
	w.wantState(grayapi.PhaseInvalid, false)
	wants := []string{`invalid kubegray.io/percent "555`, "(250000 bytes)", "strictly increasing integers 0-99"}
	check := func(what, msg string, limit int) {
		t.Helper()
		if len(msg) > limit {
			t.Errorf("%s is %d bytes, want at most %d: %.200s...", what, len(msg), limit, msg)
		}
		for _, want := range wants {
			if !strings.Contains(msg, want) {
				t.Errorf("%s lacks %q: %.600s", what, want, msg)
			}
		}
	}
	check("the status message", w.status().Message, 512)
	events := w.takeEvents()
	if len(events) != 1 {
		t.Fatalf("events %d, want the one GrayInvalid", len(events))
	}
	check("the GrayInvalid event", events[0], 600)
}

func TestGrayInvalidWhileHeld(t *testing.T) {
	w := startGray(t, testutil.GrayWeb(10, "20"))
	w.cap = 2
	w.setImage("v2")
	w.settle()
	w.wantState(grayapi.PhaseHeld, true)

	w.setAnnotation(grayapi.PercentAnnotation, "30,10")
	if got, want := verbsOf(w.step()), []string{"update deployments/status"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("frozen sync actions = %v, want %v", got, want)
	}
	w.wantSizes(sz("v1", 8, "v2", 2))
	w.wantState(grayapi.PhaseInvalid, true)
	if st := w.status(); st.HeldAt == nil || st.Revision != 2 {
		t.Fatalf("the hold was forgotten while frozen: %+v", st)
	}

	w.setAnnotation(grayapi.PercentAnnotation, "20")
	w.settle()
	w.wantSizes(sz("v1", 8, "v2", 2))
	w.wantState(grayapi.PhaseHeld, true)
}

func TestGrayAnnotationRemoved(t *testing.T) {
	w := startGray(t, testutil.GrayWeb(10, "20", testutil.WithProgressDeadline(600)))
	w.cap = 2
	w.setImage("v2")
	w.settle()
	w.wantState(grayapi.PhaseHeld, true)

	w.cap = 10
	// Upstream's own double status write in one sync (paused condition, then rollout status)
	// conflicts on a real API server too; the next sync redoes the work.
	w.allowConflicts = true
	w.edit(func(d *appsv1.Deployment) { delete(d.Annotations, grayapi.PercentAnnotation) })
	actions := w.step()
	if got := verbsOf(actions)[:2]; !reflect.DeepEqual(got, []string{"update deployments", "update deployments/status"}) {
		t.Fatalf("release actions = %v", verbsOf(actions))
	}
	w.wantEvents("GrayResumed", "released")
	d := w.deployment()
	if d.Spec.Paused {
		t.Fatal("still paused after the annotation was removed")
	}
	if _, ok := d.Annotations[grayapi.StatusAnnotation]; ok {
		t.Fatal("kubegray.io/status left behind")
	}
	if c := deployutilCondition(d, grayapi.ConditionGrayHeld); c != nil {
		t.Fatalf("GrayHeld condition left behind: %+v", c)
	}
	// Upstream takes over from 8/2 in the same sync: v2 2 → 2+min(13−10, 8) = 5.
	w.wantSizes(sz("v1", 8, "v2", 5))
	w.settle()
	w.wantSizes(sz("v1", 0, "v2", 10))
	d = w.deployment()
	if c := deployutilCondition(d, appsv1.DeploymentProgressing); c == nil || c.Reason != "NewReplicaSetAvailable" {
		t.Fatalf("Progressing = %+v, want NewReplicaSetAvailable", c)
	}
}

// TestGrayLeftoversRemovedWithoutHold: removing kubegray.io/percent from a Deployment that is not
// held removes our status and GrayHeld in one status write, takes the opt-in off its
// ReplicaSets, and then leaves the plain Deployment alone.
func TestGrayLeftoversRemovedWithoutHold(t *testing.T) {
	w := startGray(t, testutil.GrayWeb(10, "20"))
	w.edit(func(d *appsv1.Deployment) { delete(d.Annotations, grayapi.PercentAnnotation) })
	actions := w.sync()
	if got, want := verbsOf(actions), []string{
		"update deployments/status", // kubegray.io/status and GrayHeld removed
		"patch replicasets",         // kubegray.io/percent off v1 (gray_record.go)
		"update deployments/status", // upstream: the generation bumped by the user's edit observed
	}; !reflect.DeepEqual(got, want) {
		t.Fatalf("actions = %v, want %v", got, want)
	}
	d := w.deployment()
	if _, ok := d.Annotations[grayapi.StatusAnnotation]; ok || deployutilCondition(d, grayapi.ConditionGrayHeld) != nil {
		t.Fatalf("gray leftovers not removed: %v %v", d.Annotations, d.Status.Conditions)
	}
	if n := writes(w.step()); n != 0 {
		t.Fatalf("a plain Deployment kept being written: %d writes", n)
	}
}

func TestGrayHoldPointsEditedWhileHeld(t *testing.T) {
	w := startGray(t, testutil.GrayWeb(10, "50"))
	w.cap = 5
	w.setImage("v2")
	w.settle()
	w.wantSizes(sz("v1", 5, "v2", 5))
	w.wantState(grayapi.PhaseHeld, true)

	// Lowered to 20% (T = 2), within maxSurge 3 and maxUnavailable 2: the old share grows to
	// 8 at once while the canary loses only 2 of its 5 available pods (8 stay available), then
	// the last surplus canary pod goes once the old pods are up.
	w.cap = 2
	w.setAnnotation(grayapi.PercentAnnotation, "20")
	w.step()
	w.wantSizes(sz("v1", 8, "v2", 3))
	w.step()
	w.wantSizes(sz("v1", 8, "v2", 2))
	w.settle()
	w.wantState(grayapi.PhaseHeld, true)
	if st := w.status(); st.Percent != 20 || st.Target != 2 {
		t.Fatalf("status = %+v, want 20%% / 2", st)
	}

	// Raised to 40%: the hold is left and the rollout moves on to T = 4, where it holds again.
	w.cap = 4
	w.setAnnotation(grayapi.PercentAnnotation, "40")
	w.step()
	w.wantSizes(sz("v1", 8, "v2", 4))
	w.wantState(grayapi.PhaseProgressing, true)
	w.settle()
	w.wantSizes(sz("v1", 6, "v2", 4))
	w.wantState(grayapi.PhaseHeld, true)
}

func ptrInt32(v int32) *int32 { return &v }
