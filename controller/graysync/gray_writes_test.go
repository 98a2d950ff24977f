package graysync

import (
	"testing"

	"github.com/kubegray/kubectl-gray/internal/testutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// TestGrayFullRolloutWrites rolls web (10 replicas, hold points 20 and 50) to the end, resumed
// twice, and pins the writes it takes: 23 in 12 syncs, the first of which creates the canary,
// records the target before it (a status write), sizes the old ReplicaSet, takes the hold and
// reports. Issue 50's restructuring is to keep the requests at most these (docs/design.md: One
// gray sync, step by step); a change that adds a write fails here, one that saves a write
// lowers the figure.
func TestGrayFullRolloutWrites(t *testing.T) {
	w := startGray(t, testutil.GrayWeb(10, "20,50"))
	w.perSync = nil
	w.setImage("v2")
	w.settle()
	w.wantState(grayapi.PhaseHeld, true)
	for range 2 {
		w.setAnnotation(grayapi.ResumeAnnotation, "2:next")
		w.settle()
	}
	w.wantSizes(sz("v1", 0, "v2", 10))
	w.wantState(grayapi.PhaseComplete, false)
	var all syncWrites
	for _, n := range w.perSync {
		all.deployment += n.deployment
		all.held += n.held
		all.status += n.status
		all.created += n.created
		all.resized += n.resized
		all.other += n.other
	}
	want := syncWrites{deployment: 4, held: 2, status: 10, created: 1, resized: 6, other: 2}
	if all != want {
		t.Errorf("the rollout wrote %+v (%d writes in %d syncs), want %+v (%d): %+v", all, all.total(), len(w.perSync), want, want.total(), w.perSync)
	}
}
