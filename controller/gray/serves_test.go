package gray

import (
	"context"
	"math/rand/v2"
	"reflect"
	"testing"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// TestServes pins what a rollout serves in each state, worked by hand from the requests' rules:
// web is revision 2 at 20% of 10 over stable revision 1. Each row is what the tools offer there.
func TestServes(t *testing.T) {
	facts := func(edit func(*Facts)) Facts {
		f := heldFacts()
		if edit != nil {
			edit(&f)
		}
		return f
	}
	progressing := func(f *Facts) {
		f.Deployment.Spec.Paused = false
		f.Prev.Phase, f.Prev.HeldAt, f.Prev.SettledAt = grayapi.PhaseProgressing, nil, nil
		f.NewRS.Status.AvailableReplicas, f.NewRS.Status.ReadyReplicas = 1, 1
	}
	tests := []struct {
		name    string
		f       Facts
		unpause Unpause
		want    string
	}{
		{name: "held, instead mode: every way on or back, and an unpause moves it on",
			f: facts(nil), want: "next, full, abort, undo, unpause"},
		{name: "held, taken over: an unpause reaches nothing but the user's pause, and there is none",
			f: facts(nil), unpause: UnpauseReachesUserPause, want: "next, full, abort, undo"},
		{name: "held, taken over, paused by its user too: the unpause ends that pause",
			f: facts(func(f *Facts) { f.ModePaused = true }), unpause: UnpauseReachesUserPause, want: "next, full, abort, undo, unpause"},
		{name: "on its way to the hold: no hold to leave, but the way back",
			f: facts(progressing), want: "abort, undo"},
		{name: "on its way, paused by its user (no hold recorded): the unpause ends the user's pause",
			f: facts(func(f *Facts) { progressing(f); f.Deployment.Spec.Paused = true }), want: "abort, undo, unpause"},
		{name: "aborted: started again, or its template undone",
			f: facts(func(f *Facts) {
				f.Deployment.Spec.Paused = false
				f.Prev.Phase, f.Prev.HeldAt, f.Prev.SettledAt = grayapi.PhaseAborted, nil, nil
				f.NewRS.Labels = map[string]string{grayapi.AbortedLabel: "2"}
				f.NewRS.Spec.Replicas, f.OldRSs[0].Spec.Replicas = new(int32(0)), new(int32(10))
			}), want: "undo, retry"},
		{name: "Invalid with its canary in flight: an abort, nothing else (the hold is ours, so no unpause)",
			f: facts(func(f *Facts) { f.Problem = `kubegray.io/percent "ten": not a number` }), want: "abort"},
		{name: "held with the stable ReplicaSet gone: on to the end only, nothing to go back to",
			f: facts(func(f *Facts) { f.OldRSs, f.Cached = nil, []*appsv1.ReplicaSet{f.NewRS} }), want: "next, full, unpause"},
		{name: "complete: nothing",
			f: facts(func(f *Facts) {
				done := planRS(2, 10, 10, 10)
				done.Labels = map[string]string{grayapi.StableLabel: grayapi.StableLabelValue}
				f.Deployment.Spec.Paused = false
				f.Prev = grayapi.Status{Revision: 2, StableRevision: 2, Step: 1, Percent: 100, Target: 10, Phase: grayapi.PhaseComplete, ObservedGeneration: 5}
				f.NewRS, f.OldRSs, f.Cached = done, nil, []*appsv1.ReplicaSet{done}
			}), want: "nothing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := deepCopyFacts(tt.f)
			if got := Serves(context.Background(), tt.f, tt.unpause); got.String() != tt.want {
				t.Errorf("Serves = %s, want %s", got, tt.want)
			}
			if !reflect.DeepEqual(before, tt.f) {
				t.Errorf("Serves changed its facts")
			}
		})
	}
}

// TestServesLeavesItsFactsAlone asks Serves of random syncs' facts (TestDecideProperties'): it
// decides on copies, never on what the sync gathered, and answers the same twice.
func TestServesLeavesItsFactsAlone(t *testing.T) {
	r := rand.New(rand.NewPCG(20261206, 52))
	for i := range 2000 {
		f := randomFacts(r)
		before := deepCopyFacts(f)
		unpause := Unpause(r.IntN(2))
		first := Serves(context.Background(), f, unpause)
		if !reflect.DeepEqual(before, f) {
			t.Fatalf("sync %d: Serves changed its facts", i)
		}
		if again := Serves(context.Background(), f, unpause); again.String() != first.String() {
			t.Fatalf("sync %d: Serves = %s, then %s", i, first, again)
		}
	}
}
