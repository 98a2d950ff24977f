package gray

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/kubegray/kubectl-gray/internal/testutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// TestDecide pins what the one decision of a sync makes of the status read before anything reads
// it, and that an unreadable annotation decides nothing else. web is at 20% of 10: revision 2
// held at 2 (spec.paused) over stable revision 1's 8.
func TestDecide(t *testing.T) {
	held := heldAt20()
	facts := func(edit func(*Facts)) Facts {
		d := testutil.GrayWeb(10, "20")
		d.Generation, d.Spec.Paused = 5, true
		held := held
		held.ObservedGeneration = 5
		canary, stable := planRS(2, 2, 2, 10), planRS(1, 8, 8, 10)
		f := Facts{Prev: held, HasPrev: true, Points: []int32{20}, Deployment: d, NewRS: canary, OldRSs: []*appsv1.ReplicaSet{stable},
			Cached: []*appsv1.ReplicaSet{canary, stable}, Now: testNow}
		if edit != nil {
			edit(&f)
		}
		return f
	}
	tests := []struct {
		name     string
		f        Facts
		distrust Distrust
		trusted  bool
		// heldByUs: the rollout as identified is held by us (re-derived when the status is set aside).
		heldByUs bool
	}{
		{name: "our own status of the rollout in flight is taken as it is", f: facts(nil), trusted: true, heldByUs: true},
		{name: "kubectl annotate wrote the status of the rollout in flight: set aside, the hold re-derived from the canary at its target",
			f: facts(func(f *Facts) { f.ForeignWriter = "kubectl-annotate" }), distrust: DistrustForeign, heldByUs: true},
		{name: "someone else wrote a status of another revision: left to trustStatus, which finds the rollout renumbered",
			f: facts(func(f *Facts) {
				f.ForeignWriter, f.Prev.Revision = "kubectl-annotate", 7
				f.NewRS.Annotations["deployment.kubernetes.io/revision-history"] = "7"
			}), distrust: DistrustRenumbered, trusted: true, heldByUs: true},
		{name: "a status of another revision copied in, the canary unchanged since the sync read it: dropped",
			f: facts(func(f *Facts) { f.Prev.Revision, f.Deployment.Generation = 4, 6 }), distrust: DistrustCopied, heldByUs: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Decide(context.Background(), tt.f)
			if p.Invalid != nil || p.Distrust != tt.distrust || p.HasPrev != tt.trusted {
				t.Fatalf("Decide: invalid %v, distrust %d, trusted %t; want no invalid, distrust %d, trusted %t", p.Invalid, p.Distrust, p.HasPrev,
					tt.distrust, tt.trusted)
			}
			if p.Identity.Status.Revision != 2 || p.Identity.HeldByUs(p.Prev, p.HasPrev) != tt.heldByUs {
				t.Errorf("Decide identified revision %d, held by us %t; want revision 2, held by us %t", p.Identity.Status.Revision,
					p.Identity.HeldByUs(p.Prev, p.HasPrev), tt.heldByUs)
			}
		})
	}

	t.Run("an unreadable annotation decides what the rollout still does, and nothing else", func(t *testing.T) {
		p := Decide(context.Background(), facts(func(f *Facts) { f.Problem = `kubegray.io/percent "ten": not a number` }))
		if p.Invalid == nil || p.Invalid.Status.Phase != grayapi.PhaseInvalid || p.Sync.Course.Course != CourseMove || p.Sync.Move.Sizes.Kind != SizesKept ||
			p.Identity.Status.Revision != 0 || !p.HasPrev {
			t.Errorf("Decide = %+v, want only the Invalid decision, the status read kept", p)
		}
	})
}
