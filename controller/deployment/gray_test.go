package deployment

import (
	"reflect"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// Every scenario below starts from "web" fully rolled out on image v1 (revision 1), syncs once
// so the controller records it as Complete, then changes the image. Sizes are written as
// {image: spec.replicas} and were computed by hand from the rules of gray-design.md, with
// R=10 and maxSurge/maxUnavailable 25%/25% (surge 3, unavailable 2) unless noted.

// startGray builds the world and takes the first sync: a complete Deployment seen for the first
// time is Complete, with itself as stable revision, and nothing is scaled.
func startGray(t *testing.T, d *appsv1.Deployment) *grayWorld {
	t.Helper()
	w := newGrayWorld(t, d)
	w.step()
	w.wantState(grayapi.PhaseComplete, false)
	if st := w.status(); st.Revision != 1 || st.StableRevision != 1 || st.Percent != 100 {
		t.Fatalf("first status = %+v, want revision 1, stable 1, percent 100", st)
	}
	if len(w.rsWrites) != 1 || w.rsWrites[0].replicas != *d.Spec.Replicas {
		t.Fatalf("first sync wrote ReplicaSets %v, want only the annotation sync of v1", w.rsWrites)
	}
	// First sight of a complete Deployment completes nothing.
	for _, e := range w.takeEvents() {
		if strings.Contains(e, grayapi.ReasonGrayComplete) {
			t.Fatalf("first sync emitted %q", e)
		}
	}
	return w
}

func sz(pairs ...any) map[string]int32 {
	out := map[string]int32{}
	for i := 0; i < len(pairs); i += 2 {
		out[pairs[i].(string)] = int32(pairs[i+1].(int))
	}
	return out
}

func TestGraySingleHold(t *testing.T) {
	w := startGray(t, grayDeployment(10, "20", withProgressDeadline(600)))
	w.cap = 2 // ceil(10·20/100)
	w.setImage("v2")

	// Sync 1: the status moves to revision 2 first, v2 is created at min(3 surge, T 2) = 2,
	// v1 goes to 8 (min(12−8−2, 10−8) = 2 may go), and the rollout is paused in the same sync.
	actions := w.sync()
	if got, want := verbsOf(actions), []string{
		"update deployments/status", // gray status: revision 2, target 2
		"create replicasets",        // v2 at 2
		"update replicasets",        // v1 10 → 8
		"update deployments",        // paused, heldAt
		"update deployments/status", // counts, conditions, phase
	}; !reflect.DeepEqual(got, want) {
		t.Fatalf("sync 1 actions = %v, want %v", got, want)
	}
	w.wantSizes(sz("v1", 8, "v2", 2))
	w.wantState(grayapi.PhaseProgressing, true)
	w.wantEvents("Scaled up replica set", "GrayHeld web-", "holds 2/10 (20%)")
	st := w.status()
	if st.Revision != 2 || st.StableRevision != 1 || st.Step != 0 || st.Percent != 20 || st.Target != 2 || st.HeldAt == nil {
		t.Fatalf("status after sync 1 = %+v", st)
	}
	if c := deployutilCondition(w.deployment(), appsv1.DeploymentProgressing); c == nil || c.Reason != "DeploymentPaused" {
		t.Fatalf("Progressing = %+v, want Unknown/DeploymentPaused while held", c)
	}
	w.ready()

	// Sync 2: the new pods are available and v1 is at 8 = R−T: Held, nothing to scale (the
	// held Deployment is not topped up to R+surge).
	if n := writes(w.step()); n != 1 {
		t.Fatalf("sync 2 made %d writes, want only the status", n)
	}
	w.wantSizes(sz("v1", 8, "v2", 2))
	w.wantState(grayapi.PhaseHeld, true)
	if c := deployutilCondition(w.deployment(), grayapi.ConditionGrayHeld); c.Message != "2 of 10 replicas (20%) on revision 2; run kubectl gray resume" {
		t.Fatalf("GrayHeld message = %q", c.Message)
	}
	if n := writes(w.step()); n != 0 {
		t.Fatalf("a settled hold made %d writes", n)
	}

	// Resume: the last hold point, so the rest is upstream's rolling update (spec §4.5 numbers).
	w.cap = 10
	w.setAnnotation(grayapi.ResumeAnnotation, "2:next")
	w.step()
	w.wantSizes(sz("v1", 8, "v2", 5))
	w.wantState(grayapi.PhaseProgressing, false)
	if _, ok := w.deployment().Annotations[grayapi.ResumeAnnotation]; ok {
		t.Fatal("the resume request was not consumed")
	}
	w.wantEvents("GrayResumed", "resumed at 20%: moving on to all replicas")
	// As upstream after a resume: Unknown/DeploymentResumed until progress is seen.
	if c := deployutilCondition(w.deployment(), appsv1.DeploymentProgressing); c == nil || c.Reason != "DeploymentResumed" {
		t.Fatalf("Progressing = %+v after resume, want DeploymentResumed", c)
	}
	for _, want := range []map[string]int32{sz("v1", 3, "v2", 5), sz("v1", 3, "v2", 10), sz("v1", 0, "v2", 10)} {
		w.step()
		w.wantSizes(want)
		if c := deployutilCondition(w.deployment(), appsv1.DeploymentProgressing); c == nil || c.Reason != "ReplicaSetUpdated" {
			t.Fatalf("Progressing = %+v while rolling, want ReplicaSetUpdated", c)
		}
	}
	w.step()
	w.wantState(grayapi.PhaseComplete, false)
	if st := w.status(); st.StableRevision != 2 || st.HeldAt != nil {
		t.Fatalf("complete status = %+v, want stable revision 2 and no heldAt", st)
	}
	w.wantEvents("GrayComplete")
	if c := deployutilCondition(w.deployment(), appsv1.DeploymentProgressing); c == nil || c.Reason != "NewReplicaSetAvailable" {
		t.Fatalf("Progressing = %+v when complete, want NewReplicaSetAvailable", c)
	}
	w.noFlapping()
}

func TestGraySteps(t *testing.T) {
	w := startGray(t, grayDeployment(10, "10,30,60"))
	resume := func() {
		t.Helper()
		w.setAnnotation(grayapi.ResumeAnnotation, "2:next")
	}
	w.setImage("v2")
	type stage struct {
		cap      int32
		resume   bool
		want     map[string]int32
		phase    grayapi.Phase
		paused   bool
		step     int32
		resumeTo string
	}
	// T(10%) = 1, T(30%) = 3, T(60%) = 6, then all 10.
	stages := []stage{
		{cap: 1, want: sz("v1", 9, "v2", 1), phase: grayapi.PhaseProgressing, paused: true, step: 0},
		{cap: 1, want: sz("v1", 9, "v2", 1), phase: grayapi.PhaseHeld, paused: true, step: 0},
		// Resume to 30%: unpause, v2 1 → min(1+3, 3) = 3, paused again in the same sync.
		{cap: 3, resume: true, want: sz("v1", 9, "v2", 3), phase: grayapi.PhaseProgressing, paused: true, step: 1, resumeTo: "to 30%"},
		// While held v1 shrinks to R−T = 7 (budget min(12−8, 9−7) = 2), then settles.
		{cap: 3, want: sz("v1", 7, "v2", 3), phase: grayapi.PhaseProgressing, paused: true, step: 1},
		{cap: 3, want: sz("v1", 7, "v2", 3), phase: grayapi.PhaseHeld, paused: true, step: 1},
		// Resume to 60%: v2 3 → min(3+3, 6) = 6, held; v1 7 → 4.
		{cap: 6, resume: true, want: sz("v1", 7, "v2", 6), phase: grayapi.PhaseProgressing, paused: true, step: 2, resumeTo: "to 60%"},
		{cap: 6, want: sz("v1", 4, "v2", 6), phase: grayapi.PhaseProgressing, paused: true, step: 2},
		{cap: 6, want: sz("v1", 4, "v2", 6), phase: grayapi.PhaseHeld, paused: true, step: 2},
		// Resume after the last point: upstream rolling, v2 6 → 9, v1 4 → 0, v2 → 10.
		{cap: 10, resume: true, want: sz("v1", 4, "v2", 9), phase: grayapi.PhaseProgressing, paused: false, step: 3, resumeTo: "to all replicas"},
		{cap: 10, want: sz("v1", 0, "v2", 9), phase: grayapi.PhaseProgressing, paused: false, step: 3},
		{cap: 10, want: sz("v1", 0, "v2", 10), phase: grayapi.PhaseProgressing, paused: false, step: 3},
		{cap: 10, want: sz("v1", 0, "v2", 10), phase: grayapi.PhaseComplete, paused: false, step: 3},
	}
	for i, s := range stages {
		w.cap = s.cap
		if s.resume {
			resume()
		}
		w.step()
		w.wantSizes(s.want)
		w.wantState(s.phase, s.paused)
		if st := w.status(); st.Step != s.step {
			t.Fatalf("stage %d: step %d, want %d", i, st.Step, s.step)
		}
		if s.resumeTo != "" {
			w.wantEvents("GrayResumed", s.resumeTo)
		}
	}
	w.noFlapping()
}

func TestGrayResumeFull(t *testing.T) {
	w := startGray(t, grayDeployment(10, "10,30,60"))
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
	w := startGray(t, grayDeployment(10, "10,30,60"))
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
	w.wantEvents("GrayResumed", "unpaused at 10%: moving on to 30%", "GrayHeld", "holds 3/10 (30%)")
	w.ready()
	w.settle()
	w.wantSizes(sz("v1", 7, "v2", 3))
	w.wantState(grayapi.PhaseHeld, true)
}

func TestGrayResumeWithUnpauseInOneWrite(t *testing.T) {
	w := startGray(t, grayDeployment(10, "10,30,60"))
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

func TestGrayScaleWhileHeld(t *testing.T) {
	w := startGray(t, grayDeployment(10, "20"))
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
			if rs.Annotations["deployment.kubernetes.io/desired-replicas"] != itoa(tc.replicas) {
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

func TestGrayFenceposts(t *testing.T) {
	tests := []struct {
		name        string
		surge       intstr.IntOrString
		unavailable intstr.IntOrString
		// steps lists the sizes after each sync (pods made available between syncs).
		steps []map[string]int32
	}{
		{
			// minAvailable 9: old first (10−9 may go), then new, one at a time.
			name: "maxSurge 0, maxUnavailable 1", surge: intstr.FromInt32(0), unavailable: intstr.FromInt32(1),
			steps: []map[string]int32{sz("v1", 9, "v2", 0), sz("v1", 9, "v2", 1), sz("v1", 8, "v2", 1), sz("v1", 8, "v2", 2)},
		},
		{
			// Surge 10 would allow 10 new pods: capped at T = 2 at creation; unavailable 0
			// keeps v1 at 10 until the two are available.
			name: "maxSurge 100%", surge: intstr.FromString("100%"), unavailable: intstr.FromInt32(0),
			steps: []map[string]int32{sz("v1", 10, "v2", 2), sz("v1", 8, "v2", 2)},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := startGray(t, grayDeployment(10, "20", withFenceposts(tc.surge, tc.unavailable)))
			w.cap = 2
			w.setImage("v2")
			for i, want := range tc.steps {
				w.step()
				if got := w.sizes(); !reflect.DeepEqual(got, want) {
					t.Fatalf("after sync %d: sizes %v, want %v", i+1, got, want)
				}
				// Paused in the very sync in which v2 reaches T, not one later.
				if paused := w.deployment().Spec.Paused; paused != (want["v2"] == 2) {
					t.Fatalf("after sync %d: paused %t with v2 at %d", i+1, paused, want["v2"])
				}
			}
			w.step()
			w.wantState(grayapi.PhaseHeld, true)
			w.noFlapping()
		})
	}
}

func TestGrayDegraded(t *testing.T) {
	w := startGray(t, grayDeployment(10, "20", withProgressDeadline(600),
		withFenceposts(intstr.FromInt32(0), intstr.FromInt32(1))))
	w.cap = 2
	w.setImage("v2")
	w.sync() // v2 created at 0, v1 10 → 9; the pods never become ready
	w.wantSizes(sz("v1", 9, "v2", 0))
	w.f.dc.now = func() time.Time { return testNow.Add(601 * time.Second) }
	w.sync()
	w.wantState(grayapi.PhaseDegraded, false)
	if c := deployutilCondition(w.deployment(), appsv1.DeploymentProgressing); c == nil || c.Reason != "ProgressDeadlineExceeded" {
		t.Fatalf("Progressing = %+v, want ProgressDeadlineExceeded", c)
	}
	// The spec still moved one step (10 − 9 leaves room for one new pod), as upstream's would.
	w.wantSizes(sz("v1", 9, "v2", 1))
}

func TestGraySmallDeployments(t *testing.T) {
	tests := []struct {
		name     string
		replicas int32
		cap      int32
		steps    []map[string]int32
	}{
		// 25%/25% of 1: surge 1, unavailable 0. T(1, 20%) = 1 = R: the hold is at 1/1 with v1 gone.
		{name: "R=1", replicas: 1, cap: 1, steps: []map[string]int32{sz("v1", 1, "v2", 1), sz("v1", 0, "v2", 1)}},
		// Of 2: surge 1, unavailable 0, T = ceil(0.4) = 1.
		{name: "R=2", replicas: 2, cap: 1, steps: []map[string]int32{sz("v1", 2, "v2", 1), sz("v1", 1, "v2", 1)}},
		// Of 3: surge 1, unavailable 0, T = ceil(0.6) = 1.
		{name: "R=3", replicas: 3, cap: 1, steps: []map[string]int32{sz("v1", 3, "v2", 1), sz("v1", 2, "v2", 1)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := startGray(t, grayDeployment(tc.replicas, "20"))
			w.cap = tc.cap
			w.setImage("v2")
			for i, want := range tc.steps {
				w.step()
				if got := w.sizes(); !reflect.DeepEqual(got, want) {
					t.Fatalf("after sync %d: sizes %v, want %v", i+1, got, want)
				}
				if !w.deployment().Spec.Paused {
					t.Fatalf("after sync %d: not paused, the first sync reaches T", i+1)
				}
			}
			w.step()
			w.wantState(grayapi.PhaseHeld, true)

			w.cap = tc.replicas
			w.setAnnotation(grayapi.ResumeAnnotation, "2:next")
			w.settle()
			w.wantSizes(sz("v1", 0, "v2", int(tc.replicas)))
			w.wantState(grayapi.PhaseComplete, false)
			w.noFlapping()
		})
	}
}

func TestGrayZeroPercent(t *testing.T) {
	w := startGray(t, grayDeployment(10, "0"))
	w.cap = 0
	w.setImage("v2")
	// The new ReplicaSet is created at 0 and the rollout paused at once; it is reported Held
	// once the ReplicaSet controller has observed the new ReplicaSet.
	w.step()
	w.wantSizes(sz("v1", 10, "v2", 0))
	w.wantState(grayapi.PhaseProgressing, true)
	w.wantEvents("GrayHeld", "holds 0/10 (0%)")
	w.step()
	w.wantState(grayapi.PhaseHeld, true)
	if n := writes(w.step()); n != 0 {
		t.Fatalf("held at 0%% made %d writes", n)
	}

	w.cap = 10
	w.setAnnotation(grayapi.ResumeAnnotation, "2:next")
	w.settle()
	w.wantSizes(sz("v1", 0, "v2", 10))
	w.wantState(grayapi.PhaseComplete, false)
	w.noFlapping()
}

func TestGrayNewTemplateWhileHeld(t *testing.T) {
	w := startGray(t, grayDeployment(10, "20"))
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
	w := startGray(t, grayDeployment(10, "20"))
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
			w := startGray(t, grayDeployment(10, "20"))
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

func TestGrayInvalidWhileHeld(t *testing.T) {
	w := startGray(t, grayDeployment(10, "20"))
	w.cap = 2
	w.setImage("v2")
	w.settle()
	w.wantState(grayapi.PhaseHeld, true)

	w.setAnnotation(grayapi.PercentAnnotation, "30,10")
	w.edit(func(d *appsv1.Deployment) { d.Spec.Replicas = ptrInt32(20) }) // not even scaling happens
	if got, want := verbsOf(w.step()), []string{"update deployments/status"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("frozen sync actions = %v, want %v", got, want)
	}
	w.wantSizes(sz("v1", 8, "v2", 2))
	w.wantState(grayapi.PhaseInvalid, true)
	if st := w.status(); st.HeldAt == nil || st.Revision != 2 {
		t.Fatalf("the hold was forgotten while frozen: %+v", st)
	}

	w.cap = 4
	w.setAnnotation(grayapi.PercentAnnotation, "20")
	w.settle()
	w.wantSizes(sz("v1", 16, "v2", 4))
	w.wantState(grayapi.PhaseHeld, true)
}

func TestGrayAnnotationRemoved(t *testing.T) {
	w := startGray(t, grayDeployment(10, "20", withProgressDeadline(600)))
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

func TestGrayRestart(t *testing.T) {
	t.Run("while held", func(t *testing.T) {
		w := startGray(t, grayDeployment(10, "20"))
		w.cap = 2
		w.setImage("v2")
		w.settle()
		w.wantState(grayapi.PhaseHeld, true)
		w.restart()
		if n := writes(w.step()); n != 0 {
			t.Fatalf("a fresh controller made %d writes to a settled hold", n)
		}
		w.wantState(grayapi.PhaseHeld, true)
		w.cap = 10
		w.setAnnotation(grayapi.ResumeAnnotation, "2:next")
		w.settle()
		w.wantState(grayapi.PhaseComplete, false)
		w.noFlapping()
	})
	t.Run("while progressing", func(t *testing.T) {
		w := startGray(t, grayDeployment(10, "20", withFenceposts(intstr.FromInt32(0), intstr.FromInt32(1))))
		w.cap = 2
		w.setImage("v2")
		w.step()
		w.step()
		w.wantSizes(sz("v1", 9, "v2", 1))
		w.restart()
		w.step()
		w.wantSizes(sz("v1", 8, "v2", 1))
		w.restart()
		w.step()
		w.wantSizes(sz("v1", 8, "v2", 2))
		w.restart()
		w.step()
		w.wantState(grayapi.PhaseHeld, true)
		w.noFlapping()
	})
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
			w := startGray(t, grayDeployment(10, "20", withFenceposts(intstr.FromInt32(0), intstr.FromInt32(1))))
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
	w := startGray(t, grayDeployment(10, "20", withFenceposts(intstr.FromInt32(0), intstr.FromInt32(1))))
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

func TestGrayStaleCacheWritesNothing(t *testing.T) {
	w := startGray(t, grayDeployment(10, "20"))
	w.setImage("v2")
	w.refreshCaches()
	// The server moves on (here: the user edits again) before the informer sees it.
	d := w.deployment()
	d.Annotations["team"] = "a"
	w.put(d)
	before := len(w.f.client.Actions())
	if err := w.f.dc.syncDeployment(w.f.ctx, grayKey); err != nil {
		t.Fatal(err)
	}
	if got := verbs(w.f.client.Actions()[before:]); !reflect.DeepEqual(got, []string{"get deployments"}) {
		t.Fatalf("actions on a stale cache = %v, want only the live read", got)
	}
}

func TestGrayLeftoversReleasedWithoutHold(t *testing.T) {
	w := startGray(t, grayDeployment(10, "20"))
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

func TestGrayRecreateIsNotGray(t *testing.T) {
	d := grayDeployment(3, "20", withRecreate())
	if isGray(d) {
		t.Fatal("a Recreate Deployment took the gray path")
	}
	d = grayDeployment(3, "20")
	if !isGray(d) {
		t.Fatal("a RollingUpdate Deployment with kubegray.io/percent did not take the gray path")
	}
	delete(d.Annotations, grayapi.PercentAnnotation)
	if isGray(d) {
		t.Fatal("a Deployment without kubegray.io/percent took the gray path")
	}
}

func TestGrayHoldPointsEditedWhileHeld(t *testing.T) {
	w := startGray(t, grayDeployment(10, "50"))
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

func TestGrayFirstSeenMidRollout(t *testing.T) {
	// A plain Deployment half-way from v1 to v2 (v1 5, v2 5) is annotated 20,60: 20% (T 2) is
	// already passed, so it holds at 60% (T 6) instead of shrinking v2.
	d := grayDeployment(10, "20,60")
	w := newGrayWorld(t, d)
	w.step()                // records v1 as Complete
	w.allowConflicts = true // upstream's syncs below write the status twice, see TestGrayAnnotationRemoved
	w.edit(func(d *appsv1.Deployment) {
		delete(d.Annotations, grayapi.PercentAnnotation)
		d.Spec.Template.Spec.Containers[0].Image = "v2"
	})
	w.step() // upstream: v2 3, v1 8
	w.step() // upstream: v2 5 (13−8), v1 8
	w.wantSizes(sz("v1", 8, "v2", 5))
	w.cap = 6
	w.setAnnotation(grayapi.PercentAnnotation, "20,60")
	w.settle()
	w.wantSizes(sz("v1", 4, "v2", 6))
	w.wantState(grayapi.PhaseHeld, true)
	if st := w.status(); st.Step != 1 || st.StableRevision != 1 {
		t.Fatalf("status = %+v, want step 1 (60%%) and stable revision 1", st)
	}
	w.noFlapping()
}

func ptrInt32(v int32) *int32 { return &v }

func TestGraySetWithImageOnAPlainDeployment(t *testing.T) {
	// kubectl gray set web 20 --image c=v2 on a Deployment never seen gray: annotation and
	// template arrive in one write. The running revision is taken as stable.
	d := grayDeployment(10, "20")
	delete(d.Annotations, grayapi.PercentAnnotation)
	w := newGrayWorld(t, d)
	w.step() // plain upstream: nothing to do
	w.cap = 2
	w.edit(func(d *appsv1.Deployment) {
		d.Annotations[grayapi.PercentAnnotation] = "20"
		d.Spec.Template.Spec.Containers[0].Image = "v2"
	})
	w.step()
	w.wantSizes(sz("v1", 8, "v2", 2))
	w.step()
	w.wantState(grayapi.PhaseHeld, true)
	if st := w.status(); st.Revision != 2 || st.StableRevision != 1 || st.Step != 0 {
		t.Fatalf("status = %+v, want revision 2, stable 1, step 0", st)
	}
}

func TestGrayNewDeploymentIsNotHeld(t *testing.T) {
	// Created with the annotation: there is nothing to canary against, so it rolls out fully.
	w := &grayWorld{t: t, f: newFixture(t), created: testNow, cap: 3}
	w.installReactors()
	d := grayDeployment(3, "20")
	w.put(d)
	w.settle()
	w.wantSizes(sz("v1", 3))
	w.wantState(grayapi.PhaseComplete, false)
}

func TestGrayReplicaSetTrustsOnlyCurrentStatus(t *testing.T) {
	rs := func(generation, observed int64, spec, available int32) *appsv1.ReplicaSet {
		return &appsv1.ReplicaSet{
			ObjectMeta: metav1.ObjectMeta{Generation: generation},
			Spec:       appsv1.ReplicaSetSpec{Replicas: &spec},
			Status:     appsv1.ReplicaSetStatus{ObservedGeneration: observed, AvailableReplicas: available},
		}
	}
	tests := []struct {
		name          string
		rs            *appsv1.ReplicaSet
		wantAvailable int32
	}{
		{name: "current status", rs: rs(3, 3, 5, 4), wantAvailable: 4},
		{name: "current status never above spec", rs: rs(3, 3, 2, 4), wantAvailable: 2},
		{name: "resized but not yet observed: stale status counts nothing", rs: rs(4, 3, 2, 4), wantAvailable: 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := grayReplicaSet(tc.rs)
			if got.Available != tc.wantAvailable || got.Spec != *tc.rs.Spec.Replicas {
				t.Errorf("grayReplicaSet = %+v, want available %d spec %d", got, tc.wantAvailable, *tc.rs.Spec.Replicas)
			}
		})
	}
}
