package gray

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
)

// TestDecideHold pins what becomes of our pause before the ReplicaSets are written, for a
// canary of 2 replicas at step 1 of 2.
func TestDecideHold(t *testing.T) {
	canary := planRS(2, 2, 2, 10)
	ours := func(target int32, edit func(*HoldFacts)) HoldFacts {
		f := HoldFacts{PausedByUs: true, NewRS: canary, Step: 0, Steps: 2, Target: target}
		if edit != nil {
			edit(&f)
		}
		return f
	}
	tests := []struct {
		name string
		f    HoldFacts
		want HoldChange
	}{
		{"the user's pause is not ours to change", ours(2, func(f *HoldFacts) { f.PausedByUs = false }), HoldUnchanged},
		{"our hold at the canary's target stays", ours(2, nil), HoldUnchanged},
		{"a new rollout leaves a former rollout's hold", ours(2, func(f *HoldFacts) { f.NewRollout = true }), HoldLeft},
		{"past the last hold point", ours(10, func(f *HoldFacts) { f.Step = 2 }), HoldLeft},
		{"no new ReplicaSet", ours(2, func(f *HoldFacts) { f.NewRS = nil }), HoldLeft},
		{"resumed to a higher target", ours(5, func(f *HoldFacts) { f.Resumed = true }), HoldLeft},
		{"resumed to a target the canary already has", ours(2, func(f *HoldFacts) { f.Resumed = true }), HoldAgain},
		{"a scaling event raised the target: the hold keeps its share", ours(4, func(f *HoldFacts) { f.Scaling = true }), HoldUnchanged},
		{"a scaling event and a resume together", ours(4, func(f *HoldFacts) { f.Scaling, f.Resumed = true, true }), HoldLeft},
		{"the hold points edited upward", ours(4, nil), HoldLeft},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := DecideHold(tc.f); got != tc.want {
				t.Errorf("decideHold = %d, want %d", got, tc.want)
			}
		})
	}
	for _, tc := range []struct {
		name   string
		paused bool
		newRS  *appsv1.ReplicaSet
		step   int32
		want   bool
	}{
		{"at its target", false, canary, 0, true},
		{"already paused", true, canary, 0, false},
		{"below its target", false, planRS(2, 1, 1, 10), 0, false},
		{"past the last hold point", false, canary, 2, false},
		{"no new ReplicaSet", false, nil, 0, false},
	} {
		if got := HoldReached(tc.paused, tc.newRS, tc.step, 2, 2); got != tc.want {
			t.Errorf("holdReached %s = %t, want %t", tc.name, got, tc.want)
		}
	}
}
