package graysync

import (
	"cmp"
	"errors"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2/ktesting"

	"github.com/kubegray/kubectl-gray/controller/gray"
	"github.com/kubegray/kubectl-gray/internal/testutil"
	"github.com/kubegray/kubectl-gray/pkg/deployutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// kubectlKeeps are the annotations `kubectl rollout undo` keeps from the Deployment; every
// other annotation is replaced by the target ReplicaSet's.
var kubectlKeeps = []string{
	deployutil.LastAppliedAnnotation, deployutil.RevisionAnnotation, deployutil.RevisionHistoryAnnotation,
	deployutil.DesiredReplicasAnnotation, deployutil.MaxReplicasAnnotation, deployutil.RollbackToAnnotation,
}

// rolloutUndoTo does what `kubectl rollout undo` does to the Deployment: the template of the
// ReplicaSet running image, and its annotations in place of the Deployment's own.
func (w *grayWorld) rolloutUndoTo(image string) {
	w.t.Helper()
	var target *appsv1.ReplicaSet
	for _, rs := range w.replicaSets() {
		if rs.Spec.Template.Spec.Containers[0].Image == image {
			target = rs
		}
	}
	if target == nil {
		w.t.Fatalf("no ReplicaSet runs %s", image)
	}
	w.edit(func(d *appsv1.Deployment) {
		template := target.Spec.Template.DeepCopy()
		delete(template.Labels, appsv1.DefaultDeploymentUniqueLabelKey)
		d.Spec.Template = *template
		annotations := map[string]string{}
		for _, k := range kubectlKeeps {
			if v, ok := d.Annotations[k]; ok {
				annotations[k] = v
			}
		}
		for k, v := range target.Annotations {
			if _, kept := annotations[k]; !kept && !contains(kubectlKeeps, k) {
				annotations[k] = v
			}
		}
		d.Annotations = annotations
	})
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func (w *grayWorld) stableMarks() map[string]bool {
	out := map[string]bool{}
	for _, rs := range w.replicaSets() {
		if rs.Labels[grayapi.StableLabel] == grayapi.StableLabelValue {
			out[rs.Spec.Template.Spec.Containers[0].Image] = true
		}
	}
	return out
}

// `kubectl rollout undo` to the stable revision while a resumed gray rollout
// is unpaused wipes the status; the stable ReplicaSet is still known from its label, so the
// undo is a rollback to stable (holds skipped), not a new canary of the largest old one.
func TestGrayRolloutUndoDuringRolloutFindsTheStableOne(t *testing.T) {
	w := startGray(t, testutil.GrayWeb(10, "20,60"))
	if got := w.stableMarks(); !got["v1"] || len(got) != 1 {
		t.Fatalf("stable marks %v, want v1 alone", got)
	}
	w.cap = 2
	w.setImage("v2")
	w.settle()
	w.cap = 6
	w.setAnnotation(grayapi.ResumeAnnotation, "2:next")
	w.settle()
	w.wantSizes(sz("v1", 4, "v2", 6))
	w.cap = 10
	w.setAnnotation(grayapi.ResumeAnnotation, "2:full")
	w.step()
	w.step()
	if s := w.sizes(); s["v2"] <= 6 || s["v2"] == 10 && s["v1"] == 0 {
		t.Fatalf("sizes %v: want v2 past 6 and the rollout not complete", s)
	}

	w.rsWrites = nil // v1 grows back from here on: a rollback, not a fight
	w.rolloutUndoTo("v1")
	if _, ok := w.deployment().Annotations[grayapi.StatusAnnotation]; ok {
		t.Fatal("the emulated undo kept kubegray.io/status; kubectl replaces it")
	}
	w.step()
	if st := w.status(); st.StableRevision != 1 || int(st.Step) != 2 {
		t.Fatalf("status after the undo = %+v, want stable revision 1 and every hold point skipped", st)
	}
	w.settle()
	w.wantSizes(sz("v1", 10, "v2", 0))
	w.wantState(grayapi.PhaseComplete, false)
	if got := w.stableMarks(); !got["v1"] || len(got) != 1 {
		t.Fatalf("stable marks %v after the rollback, want v1 alone", got)
	}
	if v := w.deployment().Annotations[grayapi.PercentAnnotation]; v != "20,60" {
		t.Fatalf("%s = %q after the undo, want 20,60", grayapi.PercentAnnotation, v)
	}
}

// An undo to a revision from before the Deployment became gray keeps the
// opt-in, because every ReplicaSet carries the current hold points.
func TestGrayRolloutUndoToAPreGrayRevisionKeepsThePercent(t *testing.T) {
	plain := testutil.GrayWeb(10, "")
	delete(plain.Annotations, grayapi.PercentAnnotation)
	w := newGrayWorld(t, plain)
	w.settle()
	// v1 predates the opt-in: `kubectl gray set web 20,60 --image v2` in one write.
	w.cap = 2
	w.edit(func(d *appsv1.Deployment) {
		d.Annotations[grayapi.PercentAnnotation] = "20,60"
		d.Spec.Template.Spec.Containers[0].Image = "v2"
	})
	w.settle()
	w.wantState(grayapi.PhaseHeld, true)
	for _, rs := range w.replicaSets() {
		if v := rs.Annotations[grayapi.PercentAnnotation]; v != "20,60" {
			t.Fatalf("%s carries %s=%q, want the Deployment's 20,60", rs.Name, grayapi.PercentAnnotation, v)
		}
	}
	w.cap = 10
	w.setAnnotation(grayapi.ResumeAnnotation, "2:full")
	w.settle()
	w.wantState(grayapi.PhaseComplete, false)

	w.rolloutUndoTo("v1")
	if v := w.deployment().Annotations[grayapi.PercentAnnotation]; v != "20,60" {
		t.Fatalf("%s = %q after the undo, want 20,60", grayapi.PercentAnnotation, v)
	}
	// v1 is not the stable revision (v2 is): its rollout holds at the first point.
	w.cap = 2
	w.settle()
	w.wantSizes(sz("v1", 2, "v2", 8))
	w.wantState(grayapi.PhaseHeld, true)
}

// The status lost or garbled while held (a hand edit, a GitOps tool) does not
// turn our hold into the user's pause: it is recognised and resumable.
func TestGrayStatusLostWhileHeldStaysOurHold(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(d *appsv1.Deployment)
	}{
		{name: "deleted", damage: func(d *appsv1.Deployment) { delete(d.Annotations, grayapi.StatusAnnotation) }},
		{name: "garbage", damage: func(d *appsv1.Deployment) { d.Annotations[grayapi.StatusAnnotation] = "{" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := startGray(t, testutil.GrayWeb(10, "20,50"))
			w.cap = 2
			w.setImage("v2")
			w.settle()
			w.wantState(grayapi.PhaseHeld, true)

			w.edit(tc.damage)
			w.settle()
			w.wantSizes(sz("v1", 8, "v2", 2))
			w.wantState(grayapi.PhaseHeld, true)
			if st := w.status(); st.Step != 0 || st.StableRevision != 1 || st.HeldAt == nil {
				t.Fatalf("status %+v, want step 0, stable 1, held", st)
			}

			w.cap = 5
			w.setAnnotation(grayapi.ResumeAnnotation, "2:next")
			w.settle()
			w.wantSizes(sz("v1", 5, "v2", 5))
			w.wantState(grayapi.PhaseHeld, true)
		})
	}
}

// A status copied in from an earlier rollout (another revision, while the rollout
// in flight has not changed) is not trusted: the hold and the stable revision stay.
func TestGrayCopiedStatusIsNotTrusted(t *testing.T) {
	w := startGray(t, testutil.GrayWeb(10, "20,50"))
	old := w.deployment().Annotations[grayapi.StatusAnnotation] // revision 1, Complete
	w.cap = 2
	w.setImage("v2")
	w.settle()
	w.wantState(grayapi.PhaseHeld, true)

	w.setAnnotation(grayapi.StatusAnnotation, old)
	w.settle()
	w.wantSizes(sz("v1", 8, "v2", 2))
	w.wantState(grayapi.PhaseHeld, true)
	if st := w.status(); st.Revision != 2 || st.Step != 0 || st.StableRevision != 1 {
		t.Fatalf("status %+v, want revision 2 held at step 0 with stable 1", st)
	}
}

// A sync that renumbered the stable ReplicaSet for `kubectl gray undo` and stopped before
// writing the status leaves a status of the previous revision next to a ReplicaSet already in
// flight: the rollback still goes ahead, and the hold recorded in that status is not taken
// for the user's pause.
func TestGrayUndoInterruptedAfterTheRenumberingStillRollsBack(t *testing.T) {
	w := startGray(t, testutil.GrayWeb(10, "20,60"))
	w.cap = 2
	w.setImage("v2")
	w.settle()
	w.wantState(grayapi.PhaseHeld, true)

	w.cap = 10       // a rollback to the stable revision skips every hold point
	w.setImage("v1") // kubectl gray undo: the stable template, still paused
	for _, rs := range w.replicaSets() {
		if rs.Spec.Template.Spec.Containers[0].Image == "v1" {
			rs.Annotations[deployutil.RevisionAnnotation] = "3"
			rs.Annotations[deployutil.RevisionHistoryAnnotation] = "1"
			w.put(rs)
		}
	}
	w.settle()
	w.wantSizes(sz("v1", 10, "v2", 0))
	w.wantState(grayapi.PhaseComplete, false)
}

// The stable mark moves before the status reports Complete: a controller that stops between
// the two writes must not leave a Complete status next to a mark on the previous revision,
// which the next rollout would take as its stable one.
func TestGrayStableMarkedBeforeCompleteIsReported(t *testing.T) {
	w := startGray(t, testutil.GrayWeb(10, "20"))
	w.cap = 2
	w.setImage("v2")
	w.settle()
	w.cap = 10
	w.setAnnotation(grayapi.ResumeAnnotation, "2:full")
	failed := false
	w.f.client.PrependReactor("update", "deployments", func(action clienttesting.Action) (bool, runtime.Object, error) {
		d := action.(clienttesting.UpdateAction).GetObject().(*appsv1.Deployment)
		st, err := grayapi.ParseStatus(d.Annotations[grayapi.StatusAnnotation])
		if action.GetSubresource() == "status" && err == nil && st.Phase == grayapi.PhaseComplete && !failed {
			failed = true
			return true, nil, errors.New("controller stopped")
		}
		return false, nil, nil
	})
	for range 20 {
		w.refreshCaches()
		_ = w.f.dc.Sync(w.f.ctx, grayKey)
		w.ready()
		if failed {
			break
		}
	}
	if !failed {
		t.Fatal("the rollout never reported Complete")
	}
	if got := w.stableMarks(); !got["v2"] || len(got) != 1 {
		t.Fatalf("stable marks %v when Complete was about to be reported, want v2 alone", got)
	}
}

// A status naming another revision than the one in flight is a copy, unless the new ReplicaSet
// is that status's stable revision renumbered by a rollback (the built-in controller renumbers
// before our sync in alongside mode), or the status's own rollout renumbered while the
// Deployment did not change (the built-in controller's revision bookkeeping on a stale cache).
// Every status here was written for generation 4; the Deployment is at 5 unless said otherwise.
func TestGrayCopiedStatusAndRenumberedRollback(t *testing.T) {
	rs := func(rev, history string) *appsv1.ReplicaSet {
		r := testutil.ReplicaSet("web-new", 2, testutil.RSRevision(0))
		r.Annotations[deployutil.RevisionAnnotation] = rev
		if history != "" {
			r.Annotations[deployutil.RevisionHistoryAnnotation] = history
		}
		return r
	}
	tests := []struct {
		name string
		prev grayapi.Status
		// generation is the Deployment's, 5 when 0.
		generation int64
		newRS      *appsv1.ReplicaSet
		wantTrust  bool
	}{
		{name: "rollback to the stable revision, renumbered 1 → 3", prev: grayapi.Status{Revision: 2, StableRevision: 1},
			newRS: rs("3", "1"), wantTrust: true},
		{name: "rollback to a renumbered stable, renumbered again 1,3 → 5", prev: grayapi.Status{Revision: 4, StableRevision: 3},
			newRS: rs("5", "1,3"), wantTrust: true},
		{name: "kubectl rollout undo to revision 2, which carries the status of its own rollout", prev: grayapi.Status{Revision: 2, StableRevision: 1},
			newRS: rs("4", "2"), wantTrust: false},
		{name: "status of another revision, nothing renumbered", prev: grayapi.Status{Revision: 5, StableRevision: 4},
			newRS: rs("3", ""), wantTrust: false},
		{name: "status of the revision in flight", prev: grayapi.Status{Revision: 3, StableRevision: 1},
			newRS: rs("3", "1"), wantTrust: true},
		{name: "its own rollout renumbered 3 → 5 while the Deployment stayed at generation 4", prev: grayapi.Status{Revision: 3, StableRevision: 1},
			generation: 4, newRS: rs("5", "1,3"), wantTrust: true},
		{name: "the same numbers after the Deployment changed", prev: grayapi.Status{Revision: 3, StableRevision: 1},
			newRS: rs("5", "1,3"), wantTrust: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			d := newDeployment("web", 2)
			d.Generation = cmp.Or(tt.generation, 5)
			prev := tt.prev
			prev.ObservedGeneration = 4
			plan := gray.Decide(ctx, gray.Facts{Prev: prev, HasPrev: true, Points: []int32{20}, Deployment: d, NewRS: tt.newRS,
				Cached: []*appsv1.ReplicaSet{tt.newRS}})
			if plan.HasPrev != tt.wantTrust {
				t.Errorf("status %+v with the new ReplicaSet at revision %s (history %q) trusted %t, want %t", tt.prev,
					tt.newRS.Annotations[deployutil.RevisionAnnotation], tt.newRS.Annotations[deployutil.RevisionHistoryAnnotation], plan.HasPrev, tt.wantTrust)
			}
		})
	}
}
