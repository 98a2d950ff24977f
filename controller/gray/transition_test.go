package gray

import (
	"testing"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// TestTransitions pins each move of the status: what it sets, what it clears, what it keeps.
// The start is revision 3 held (settled) at 20% of 10, step 0, with a failure and clocks.
func TestTransitions(t *testing.T) {
	now := metav1.NewTime(testNow)
	before := metav1.NewTime(testNow.Add(-time.Minute))
	failure := &grayapi.Failure{Reason: grayapi.ReasonProgressDeadlineExceeded, Message: "web-3 has 1 of 2 replicas available"}
	held := func() grayapi.Status {
		return grayapi.Status{Revision: 3, StableRevision: 1, Step: 0, Percent: 20, Target: 2, Phase: grayapi.PhaseHeld,
			Message: "held", HeldAt: &before, SettledAt: &before, Failure: failure,
			Progress: &grayapi.Progress{At: metav1.NewMicroTime(before.Time), Available: 1}}
	}
	with := func(change func(*grayapi.Status)) grayapi.Status {
		st := held()
		change(&st)
		return st
	}
	rolledBack := with(func(st *grayapi.Status) { st.Phase = grayapi.PhaseRolledBack })
	tests := []struct {
		name string
		got  grayapi.Status
		want grayapi.Status
	}{
		{"HoldTaken stamps heldAt and is Progressing until it settles", HoldTaken(held(), now),
			with(func(st *grayapi.Status) { st.HeldAt, st.Phase = &now, grayapi.PhaseProgressing })},
		{"HoldGone clears heldAt and is Progressing", HoldGone(held()),
			with(func(st *grayapi.Status) { st.HeldAt, st.Phase = nil, grayapi.PhaseProgressing })},
		{"HoldGone keeps RolledBack", HoldGone(rolledBack),
			with(func(st *grayapi.Status) { st.HeldAt, st.Phase = nil, grayapi.PhaseRolledBack })},
		{"Resumed moves the step, leaves the hold and restarts the step's clocks", Resumed(held(), 1),
			with(func(st *grayapi.Status) {
				st.Step, st.HeldAt, st.Phase = 1, nil, grayapi.PhaseProgressing
				st.SettledAt, st.Progress = nil, nil
			})},
		{"Retargeted takes Held back, saying why", Retargeted(held(), 10),
			with(func(st *grayapi.Status) {
				st.Phase = grayapi.PhaseProgressing
				st.Message = "resizing revision 3 to its hold target 2 of 10 replicas (20%)"
			})},
		{"Retargeted keeps any other phase", Retargeted(rolledBack, 10), rolledBack},
		{"Retried starts again at the first hold point, failure and clocks cleared",
			Retried(with(func(st *grayapi.Status) { st.Step, st.Phase = 1, grayapi.PhaseAborted })),
			with(func(st *grayapi.Status) {
				st.Step, st.Phase = 0, grayapi.PhaseProgressing
				st.Failure, st.Progress, st.SettledAt, st.HeldAt = nil, nil, nil, nil
			})},
		{"Aborted keeps the failure, drops the target, hold and clocks", Aborted(held(), "web-3"),
			with(func(st *grayapi.Status) {
				st.Phase, st.Target = grayapi.PhaseAborted, 0
				st.HeldAt, st.Progress, st.SettledAt = nil, nil, nil
			})},
		{"Aborted without a failure re-derives it from the record",
			Aborted(with(func(st *grayapi.Status) { st.Failure = nil }), "web-3"),
			with(func(st *grayapi.Status) {
				st.Phase, st.Target = grayapi.PhaseAborted, 0
				st.HeldAt, st.Progress, st.SettledAt = nil, nil, nil
				st.Failure = &grayapi.Failure{Reason: grayapi.ReasonAborted, Message: "replica set web-3 carries kubegray.io/aborted=3"}
			})},
		{"Degraded records the failure and says it", Degraded(held(), failure, "revision 3 missed its progress deadline"),
			with(func(st *grayapi.Status) {
				st.Phase, st.Message = grayapi.PhaseDegraded, "revision 3 missed its progress deadline"
			})},
		{"Invalid keeps where the rollout stood", Invalid(held(), `kubegray.io/percent "x": not a number`),
			with(func(st *grayapi.Status) {
				st.Phase, st.Message = grayapi.PhaseInvalid, `kubegray.io/percent "x": not a number`
			})},
		{"Completed is the whole revision, stable, its kept failure kept", Completed(4, 2, 10, failure),
			grayapi.Status{Revision: 4, StableRevision: 4, Step: 2, Percent: grayapi.FullPercent, Target: 10,
				Phase: grayapi.PhaseComplete, Message: "all 10 replicas run revision 4", Failure: failure}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !apiequality.Semantic.DeepEqual(tt.got, tt.want) {
				t.Errorf("\n got %s\nwant %s", asJSON(t, tt.got), asJSON(t, tt.want))
			}
		})
	}
}
