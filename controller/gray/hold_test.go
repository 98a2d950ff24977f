package gray

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// TestDecideHold pins what becomes of our pause before the ReplicaSets are written, for a
// canary of 2 replicas at step 1 of 2.
func TestDecideHold(t *testing.T) {
	canary := planRS(2, 2, 2, 10)
	ours := func(target int32, edit func(*holdFacts)) holdFacts {
		f := holdFacts{PausedByUs: true, NewRS: canary, Step: 0, Steps: 2, Target: target}
		if edit != nil {
			edit(&f)
		}
		return f
	}
	tests := []struct {
		name string
		f    holdFacts
		want HoldChange
	}{
		{"the user's pause is not ours to change", ours(2, func(f *holdFacts) { f.PausedByUs = false }), HoldUnchanged},
		{"our hold at the canary's target stays", ours(2, nil), HoldUnchanged},
		{"a new rollout leaves a former rollout's hold", ours(2, func(f *holdFacts) { f.NewRollout = true }), HoldLeft},
		{"past the last hold point", ours(10, func(f *holdFacts) { f.Step = 2 }), HoldLeft},
		{"no new ReplicaSet", ours(2, func(f *holdFacts) { f.NewRS = nil }), HoldLeft},
		{"resumed to a higher target", ours(5, func(f *holdFacts) { f.Resumed = true }), HoldLeft},
		{"resumed to a target the canary already has", ours(2, func(f *holdFacts) { f.Resumed = true }), HoldAgain},
		{"a scaling event raised the target: the hold keeps its share", ours(4, func(f *holdFacts) { f.Scaling = true }), HoldUnchanged},
		{"a scaling event and a resume together", ours(4, func(f *holdFacts) { f.Scaling, f.Resumed = true, true }), HoldLeft},
		{"the hold points edited upward", ours(4, nil), HoldLeft},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := decideHold(tc.f); got != tc.want {
				t.Errorf("decideHold = %d, want %d", got, tc.want)
			}
		})
	}
}

// TestPauseAfter pins when our hold follows a move's ReplicaSet writes, for hold points 20 and
// 50 of 10 replicas (targets 2 and 5) and a canary read at 1 of target 2.
func TestPauseAfter(t *testing.T) {
	canary := planRS(2, 1, 1, 10)
	move := func(step, target int32, kind SizeKind, newSize int32) Move {
		return Move{Status: grayapi.Status{Step: step, Target: target}, Sizes: SizePlan{Kind: kind, NewSize: newSize}}
	}
	paused := move(0, 2, SizesRolled, 2)
	paused.Paused = true
	for _, tc := range []struct {
		name   string
		m      Move
		canary *appsv1.ReplicaSet
		want   bool
	}{
		{"a step brings the canary from 1 to its target 2", move(0, 2, SizesRolled, 2), canary, true},
		{"a step brings it to 2 of target 5", move(1, 5, SizesRolled, 2), canary, false},
		{"a scaling event sizes it at its target", move(0, 2, SizesScaled, 2), canary, true},
		{"caps restored to the target", move(0, 2, SizesRestored, 2), canary, true},
		{"the sizes kept, the canary read at its target", move(0, 1, SizesKept, 0), canary, true},
		{"the sizes kept, the canary read below its target", move(0, 2, SizesKept, 0), canary, false},
		{"already paused", paused, canary, false},
		{"past the last hold point", move(2, 10, SizesRolled, 10), canary, false},
		{"no canary yet, created and rolled to its target 2", move(0, 2, SizesCreateFirst, 2), nil, true},
		{"no canary yet, created at 1 of its target 2", move(0, 2, SizesCreateFirst, 1), nil, false},
	} {
		if got := pauseAfter(tc.m, tc.canary, 2); got != tc.want {
			t.Errorf("pauseAfter, %s = %t, want %t", tc.name, got, tc.want)
		}
	}
}
