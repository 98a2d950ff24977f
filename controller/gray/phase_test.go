package gray

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegray/kubectl-gray/internal/testutil"
	"github.com/kubegray/kubectl-gray/pkg/deployutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// TestDecidePhase pins the phase and message of each case of DecidePhase for web at 20% of 10
// replicas (T = 2), revision 2 over stable revision 1; the messages are what kubectl gray status
// and the GrayHeld condition show.
func TestDecidePhase(t *testing.T) {
	heldAt := metav1.NewTime(testNow)
	rollout := func(step int32, held bool) grayapi.Status {
		st := grayapi.Status{Revision: 2, StableRevision: 1, Step: step, Percent: 20, Target: 2}
		if step > 0 {
			st.Percent, st.Target = 100, 10
		}
		if held {
			st.HeldAt = &heldAt
		}
		return st
	}
	web := func(paused bool) *appsv1.Deployment {
		d := testutil.GrayWeb(10, "20")
		d.Spec.Paused = paused
		return d
	}
	// pods sets a ReplicaSet's pods: status.replicas and available.
	pods := func(rs *appsv1.ReplicaSet, replicas, available int32) *appsv1.ReplicaSet {
		rs.Status.Replicas, rs.Status.AvailableReplicas = replicas, available
		return rs
	}
	resized := func(rs *appsv1.ReplicaSet) *appsv1.ReplicaSet {
		rs.Generation = 2
		return rs
	}
	// ourHold is web held by us at 20%, with these ReplicaSets.
	ourHold := func(canary, old *appsv1.ReplicaSet) PhaseFacts {
		return PhaseFacts{Status: rollout(0, true), Steps: 1, Deployment: web(true), NewRS: canary, OldRSs: []*appsv1.ReplicaSet{old}}
	}
	const held = "held at 2 of 10 replicas (20%) on revision 2; run kubectl gray resume"
	const oldSettling = "holding revision 2 at 2 of 10 replicas (20%); waiting for the old replicas to settle at 8"
	reported := ourHold(planRS(2, 2, 2, 10), pods(planRS(1, 8, 8, 10), 9, 8))
	reported.HeldBefore = true
	rollback := testutil.ReplicaSet("web-4", 10, testutil.RSRevision(4), testutil.RSAnnotation(deployutil.RevisionHistoryAnnotation, "1"))
	tests := []struct {
		name    string
		f       PhaseFacts
		phase   grayapi.Phase
		message string
	}{{
		name:  "the last step complete",
		f:     PhaseFacts{Status: rollout(1, false), Steps: 1, Deployment: web(false), Complete: true, NewRS: planRS(2, 10, 10, 10)},
		phase: grayapi.PhaseComplete, message: "all 10 replicas run revision 2",
	}, {
		name:  "our hold settled: 2 canaries available, 8 old pods",
		f:     ourHold(planRS(2, 2, 2, 10), planRS(1, 8, 8, 10)),
		phase: grayapi.PhaseHeld, message: held,
	}, {
		name:  "our hold while an old pod still terminates",
		f:     ourHold(planRS(2, 2, 2, 10), pods(planRS(1, 8, 8, 10), 9, 8)),
		phase: grayapi.PhaseProgressing, message: oldSettling,
	}, {
		name:  "the same, already reported Held in this generation: Held stays",
		f:     reported,
		phase: grayapi.PhaseHeld, message: held,
	}, {
		name:    "our hold with a canary not yet available",
		f:       ourHold(planRS(2, 2, 1, 10), planRS(1, 8, 8, 10)),
		phase:   grayapi.PhaseProgressing,
		message: "holding revision 2 at 2 of 10 replicas (20%); waiting for its replicas to become available: 1 of 2 are",
	}, {
		name:  "our hold on a resize the ReplicaSet controller has not observed",
		f:     ourHold(planRS(2, 2, 2, 10), resized(planRS(1, 8, 8, 10))),
		phase: grayapi.PhaseProgressing, message: oldSettling,
	}, {
		name:  "the stable revision coming back as revision 4",
		f:     PhaseFacts{Status: grayapi.Status{Revision: 4, StableRevision: 1, Step: 1, Percent: 100, Target: 10}, Steps: 1, Deployment: web(false), NewRS: rollback},
		phase: grayapi.PhaseRolledBack, message: "rolling back to stable revision 1",
	}, {
		// identify only skips the hold points for a rollback; one still at a hold point is rolling.
		name: "a renumbered ReplicaSet still at a hold point is not rolling back",
		f: PhaseFacts{Status: grayapi.Status{Revision: 4, StableRevision: 1, Percent: 20, Target: 2}, Steps: 1, Deployment: web(false),
			NewRS: rollback},
		phase: grayapi.PhaseProgressing, message: "rolling revision 4 to 2 of 10 replicas (20%)",
	}, {
		name: "paused by the user, not by us",
		f: PhaseFacts{Status: rollout(0, false), Steps: 1, Deployment: web(true),
			NewRS: planRS(2, 1, 1, 10), OldRSs: []*appsv1.ReplicaSet{planRS(1, 9, 9, 10)}},
		phase: grayapi.PhaseProgressing, message: "paused by the user while rolling revision 2 to 2 of 10 replicas (20%)",
	}, {
		name: "rolling to the hold point",
		f: PhaseFacts{Status: rollout(0, false), Steps: 1, Deployment: web(false),
			NewRS: planRS(2, 1, 0, 10), OldRSs: []*appsv1.ReplicaSet{planRS(1, 10, 10, 10)}},
		phase: grayapi.PhaseProgressing, message: "rolling revision 2 to 2 of 10 replicas (20%)",
	}, {
		name:  "rolling past the last hold point",
		f:     PhaseFacts{Status: rollout(1, false), Steps: 1, Deployment: web(false), NewRS: planRS(2, 5, 5, 10), OldRSs: []*appsv1.ReplicaSet{planRS(1, 5, 5, 10)}},
		phase: grayapi.PhaseProgressing, message: "rolling revision 2 to all 10 replicas",
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := DecidePhase(tc.f)
			if st.Phase != tc.phase || st.Message != tc.message {
				t.Errorf("decidePhase = %s %q, want %s %q", st.Phase, st.Message, tc.phase, tc.message)
			}
			if st.Phase == grayapi.PhaseComplete && (st.StableRevision != st.Revision || st.HeldAt != nil) {
				t.Errorf("Complete status %+v: want its revision stable and no hold", st)
			}
		})
	}
}
