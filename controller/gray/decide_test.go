package gray

import (
	"context"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegray/kubectl-gray/internal/testutil"
	"github.com/kubegray/kubectl-gray/pkg/deployutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// TestDecide pins what the one decision of a sync makes of the status read before anything reads
// it, and that an unreadable annotation decides nothing else. web is at 20% of 10: revision 2
// held at 2 (spec.paused) over stable revision 1's 8.
func TestDecide(t *testing.T) {
	facts := func(edit func(*Facts)) Facts {
		f := heldFacts()
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

// TestDecideProperties decides random syncs through the one entry (TestDecideSyncSettles's
// rollouts and requests; a sixth with no canary yet, a sixth whose status someone else wrote, a
// sixth with a status copied from another revision, a tenth with an unreadable annotation; hold
// points with durations of their own, and holds that recorded one). Decide
// changes none of its facts, and decides the same plan from the same facts; no plan sizes the
// canary past its target (nor creates it past its target): the move's, the Invalid rollout's
// rescale (which keeps the last valid share), or the aborted sync's (which only shrinks it); a course
// that ends the sync decides no move, and an Invalid plan nothing else; a timed hold never leaves
// before its duration has run since it settled, nor with an enforcing gate pending, nor by a
// status the sync does not trust. Every kind must be reached.
func TestDecideProperties(t *testing.T) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(20261206, 50))
	seen := map[string]int{}
	for i := range 5000 {
		f := randomFacts(r)
		before := deepCopyFacts(f)
		p := Decide(ctx, f)
		if !reflect.DeepEqual(before, f) {
			t.Fatalf("case %d: Decide modified its facts", i)
		}
		if again := Decide(ctx, deepCopyFacts(before)); !reflect.DeepEqual(again, p) {
			t.Fatalf("case %d: the same facts decided twice differ:\n%+v\n%+v", i, p, again)
		}
		if m := p.Sync.Move; strings.Contains(m.Resume.Resumed, " held at ") {
			seen["timed"]++
			// A timed hold leaves only once its duration has run since it settled, with every
			// enforcing gate passed.
			settled, holdFor := p.Prev.SettledAt, f.Policy.HeldFor(p.Prev)
			if !p.HasPrev || settled == nil || holdFor <= 0 || f.Now.Before(settled.Add(holdFor)) || len(p.Sync.Gates.Pending) > 0 {
				t.Fatalf("case %d: a timed hold left early: %q (settled %v, hold %v, now %v, gates pending %v)", i, m.Resume.Resumed, settled,
					holdFor, f.Now, p.Sync.Gates.Pending)
			}
		}
		current := int32(0)
		if f.NewRS != nil {
			current = *f.NewRS.Spec.Replicas
		}
		widens := func(plan SizePlan, target int32) bool {
			return plan.resizes() && (plan.Created > max(target, 0) || (plan.NewSize > current && plan.NewSize > target))
		}
		switch {
		case p.Invalid != nil:
			seen["invalid"]++
			if !apiequality.Semantic.DeepEqual(p.Sync, SyncDecision{}) || !apiequality.Semantic.DeepEqual(p.Identity, Identity{}) {
				t.Fatalf("case %d: an Invalid plan decided more: %+v", i, p)
			}
			if p.Invalid.Sizes != nil && f.HasPrev && widens(*p.Invalid.Sizes, p.Invalid.Status.Target) {
				t.Fatalf("case %d: the Invalid rescale sizes the canary %d → %d, past its target %d", i, current, p.Invalid.Sizes.NewSize,
					p.Invalid.Status.Target)
			}
		case p.Sync.Course.Course == CourseAbort || p.Sync.Course.Course == CourseAborted:
			seen["aborted"]++
			if sizes := p.Sync.Course.Aborted.Sizes; sizes != nil && sizes.NewSize > current {
				t.Fatalf("case %d: the aborted sync grows the canary %d → %d", i, current, sizes.NewSize)
			}
			if !apiequality.Semantic.DeepEqual(p.Sync.Move, Move{}) {
				t.Fatalf("case %d: an aborted sync decided a move %+v", i, p.Sync.Move)
			}
		case p.Sync.Course.Course == CourseUndo:
			seen["undo"]++
			if !apiequality.Semantic.DeepEqual(p.Sync.Move, Move{}) {
				t.Fatalf("case %d: an undo decided a move %+v", i, p.Sync.Move)
			}
		default:
			m := p.Sync.Move
			if m.Sizes.Kind == SizesCreateFirst {
				seen["create"]++
			}
			if p.Distrust != DistrustNone {
				seen["distrusted"]++
			}
			if widens(m.Sizes, m.Status.Target) {
				t.Fatalf("case %d: the move sizes the canary %d → %d (created at %d), past its target %d", i, current, m.Sizes.NewSize,
					m.Sizes.Created, m.Status.Target)
			}
		}
	}
	t.Logf("plans: %v", seen)
	for _, kind := range []string{"invalid", "aborted", "undo", "create", "distrusted", "timed"} {
		if seen[kind] < 20 {
			t.Errorf("only %d of 5000 random syncs decided %s: %v", seen[kind], kind, seen)
		}
	}
}

// randomFacts is randomSyncFacts as the facts a sync gathers (see TestDecideProperties).
func randomFacts(r *rand.Rand) Facts {
	s := randomSyncFacts(r)
	f := Facts{Prev: s.Prev, HasPrev: s.HasPrev, Points: s.Points, Policy: s.Policy, Request: s.Request, Deployment: s.Deployment,
		NewRS: s.NewRS, OldRSs: s.OldRSs, Scaling: s.Scaling, ModePaused: s.ModePaused, Now: s.Now}
	switch r.IntN(6) {
	case 0:
		f.NewRS = nil
	case 1:
		f.ForeignWriter = "kubectl-edit"
	case 2:
		f.Prev.Revision = 5
	}
	// Hold points with durations of their own, and a hold that recorded one when it settled.
	f.Policy.PointHoldFor = make([]time.Duration, len(f.Points))
	for i := range f.Points {
		f.Policy.PointHoldFor[i] = []time.Duration{0, 10 * time.Second, 5 * time.Minute}[r.IntN(3)]
	}
	if f.Prev.SettledAt != nil && r.IntN(2) == 0 {
		f.Prev.HoldFor = &metav1.Duration{Duration: time.Duration(r.IntN(60)) * time.Second}
	}
	f.Cached = deployutil.WithNewRS(f.OldRSs, f.NewRS)
	if r.IntN(10) == 0 {
		f.Problem = `kubegray.io/percent "ten": not a number`
	}
	return f
}

// deepCopyFacts copies f's objects, so that a change Decide made to them would show.
func deepCopyFacts(f Facts) Facts {
	c := f
	c.Deployment = f.Deployment.DeepCopy()
	c.NewRS = f.NewRS.DeepCopy()
	c.OldRSs, c.Cached = copyReplicaSets(f.OldRSs), copyReplicaSets(f.Cached)
	return c
}

// copyReplicaSets deep-copies rss, nil staying nil.
func copyReplicaSets(rss []*appsv1.ReplicaSet) []*appsv1.ReplicaSet {
	if rss == nil {
		return nil
	}
	out := make([]*appsv1.ReplicaSet, len(rss))
	for i, rs := range rss {
		out[i] = rs.DeepCopy()
	}
	return out
}

// TestDecideNoTimedResumeFromAnUntrustedStatus: a status the sync does not trust (written by
// someone else, or copied in) says the hold settled two hours ago with a one-second hold. The
// hold is re-derived from the canary at its target, and it must not move on by the clocks of a
// status nobody trusts: only a status the controller recorded times a hold. It used to: the timed
// hold read the status read whatever its trust.
func TestDecideNoTimedResumeFromAnUntrustedStatus(t *testing.T) {
	for _, distrust := range []string{"foreign", "copied"} {
		t.Run(distrust, func(t *testing.T) {
			d := testutil.GrayWeb(10, "20,50")
			d.Generation, d.Spec.Paused = 5, true
			forged := heldAt20()
			forged.SettledAt = new(metav1.NewTime(testNow.Add(-2 * time.Hour)))
			forged.HoldFor = &metav1.Duration{Duration: time.Second}
			forged.ObservedGeneration = 5
			canary, stable := planRS(2, 2, 2, 10), planRS(1, 8, 8, 10)
			f := Facts{Prev: forged, HasPrev: true, Points: []int32{20, 50}, Deployment: d, NewRS: canary,
				OldRSs: []*appsv1.ReplicaSet{stable}, Cached: []*appsv1.ReplicaSet{canary, stable}, Now: testNow}
			if distrust == "foreign" {
				f.ForeignWriter = "kubectl-annotate"
			} else {
				// A status of revision 4 copied onto revision 2's Deployment, renumbered to look current.
				f.Prev.Revision, f.Deployment.Generation = 4, 6
			}
			p := Decide(context.Background(), f)
			if p.HasPrev {
				t.Fatalf("the %s status was trusted", distrust)
			}
			if m := p.Sync.Move; m.Resume.Resumed != "" || m.Status.Step != 0 || m.Hold == HoldLeft {
				t.Errorf("the hold moved on by an untrusted status' clocks: %+v", m)
			}
		})
	}
}
