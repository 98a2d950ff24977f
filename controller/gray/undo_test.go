package gray

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// TestDecideUndo pins which "<revision>:undo" requests are served. Revision 3 is held at 20%
// over stable revision 1.
func TestDecideUndo(t *testing.T) {
	held := grayapi.Status{Revision: 3, StableRevision: 1, Step: 0, Percent: 20, Target: 2, Phase: grayapi.PhaseHeld}
	canary, stable := planRS(3, 2, 2, 10), planRS(1, 8, 8, 10)
	tests := []struct {
		name    string
		f       undoFacts
		to      string
		ignored string
	}{{
		name: "no undo asked",
		f:    undoFacts{Status: held, Request: grayapi.Resume{Revision: 3}, NewRS: canary, OldRSs: []*appsv1.ReplicaSet{stable}},
	}, {
		name: "3:undo goes back to revision 1",
		f:    undoFacts{Status: held, Request: grayapi.Resume{Revision: 3, Undo: true}, NewRS: canary, OldRSs: []*appsv1.ReplicaSet{stable}},
		to:   "web-1",
	}, {
		name:    "2:undo names another rollout",
		f:       undoFacts{Status: held, Request: grayapi.Resume{Revision: 2, Undo: true}, NewRS: canary, OldRSs: []*appsv1.ReplicaSet{stable}},
		ignored: "revision 2 is not the rollout in flight (revision 3)",
	}, {
		name:    "a first rollout has nothing to go back to",
		f:       undoFacts{Status: grayapi.Status{Revision: 1, StableRevision: 1, Step: 2}, Request: grayapi.Resume{Revision: 1, Undo: true}, NewRS: planRS(1, 10, 10, 10)},
		ignored: "revision 1 is the stable one: nothing to roll back to",
	}, {
		name:    "revision 1's ReplicaSet deleted",
		f:       undoFacts{Status: held, Request: grayapi.Resume{Revision: 3, Undo: true}, NewRS: canary, OldRSs: []*appsv1.ReplicaSet{planRS(2, 0, 0, 10)}},
		ignored: "no replica set of stable revision 1 is left",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dec := decideUndo(tt.f)
			to := ""
			if dec.To != nil {
				to = dec.To.Name
			}
			if to != tt.to || dec.Ignored != tt.ignored {
				t.Errorf("decideUndo = to %q, ignored %q; want to %q, ignored %q", to, dec.Ignored, tt.to, tt.ignored)
			}
		})
	}
}
