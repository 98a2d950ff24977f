package gray

import (
	"testing"
	"time"

	"github.com/kubegray/kubectl-gray/pkg/grayapi"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestDecideDeadline pins the step's clock for revision 2 at step 0 (target 4) with a deadline
// of 20 s: when it starts, restarts, stops, and when the step is past it.
func TestDecideDeadline(t *testing.T) {
	now := testNow
	at := func(ago time.Duration, available int32) *grayapi.Progress {
		return &grayapi.Progress{At: metav1.NewMicroTime(now.Add(-ago)), Available: available}
	}
	settled := metav1.NewTime(now.Add(-time.Minute))
	status := func(phase grayapi.Phase, progress *grayapi.Progress) grayapi.Status {
		return grayapi.Status{Revision: 2, StableRevision: 1, Step: 0, Percent: 40, Target: 4, Phase: phase, Progress: progress}
	}
	facts := func(st grayapi.Status, prevProgress *grayapi.Progress, available int32) DeadlineFacts {
		prev := status(grayapi.PhaseProgressing, prevProgress)
		return DeadlineFacts{Status: st, Prev: prev, HasPrev: true, Deadline: 20 * time.Second, Available: available, Now: now}
	}
	rollbackFailure := &grayapi.Failure{Reason: grayapi.ReasonProgressDeadlineExceeded, RolledBackFrom: 3, Message: "revision 3 failed"}
	tests := []struct {
		name       string
		f          DeadlineFacts
		progress   *grayapi.Progress
		checkAfter time.Duration
		missed     bool
	}{{
		name: "a new step starts the clock",
		f: func() DeadlineFacts {
			f := facts(status(grayapi.PhaseProgressing, nil), nil, 1)
			f.HasPrev = false
			return f
		}(),
		progress: at(0, 1), checkAfter: 20*time.Second + DeadlineSlack,
	}, {
		name:     "more available than ever in the step restarts it",
		f:        facts(status(grayapi.PhaseProgressing, at(15*time.Second, 1)), at(15*time.Second, 1), 2),
		progress: at(0, 2), checkAfter: 20*time.Second + DeadlineSlack,
	}, {
		name:     "a pod that flapped back does not restart it",
		f:        facts(status(grayapi.PhaseProgressing, at(15*time.Second, 2)), at(15*time.Second, 2), 2),
		progress: at(15*time.Second, 2), checkAfter: 5*time.Second + DeadlineSlack,
	}, {
		name:     "past the deadline",
		f:        facts(status(grayapi.PhaseProgressing, at(25*time.Second, 2)), at(25*time.Second, 2), 1),
		progress: at(25*time.Second, 2), missed: true,
	}, {
		name:     "every canary available: no clock to watch",
		f:        facts(status(grayapi.PhaseProgressing, at(25*time.Second, 3)), at(25*time.Second, 3), 4),
		progress: at(0, 4),
	}, {
		name: "the user's pause stops it",
		f: func() DeadlineFacts {
			f := facts(status(grayapi.PhaseProgressing, at(25*time.Second, 2)), at(25*time.Second, 2), 1)
			f.ClockStopped = true
			return f
		}(),
	}, {
		name: "Held runs no clock",
		f:    facts(status(grayapi.PhaseHeld, at(25*time.Second, 2)), at(25*time.Second, 2), 1),
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := DecideDeadline(tc.f)
			if !apiequality.Semantic.DeepEqual(got.Status.Progress, tc.progress) || got.CheckAfter != tc.checkAfter || got.Missed != tc.missed {
				t.Errorf("decideDeadline = progress %+v, check after %v, missed %t; want %+v, %v, %t",
					got.Status.Progress, got.CheckAfter, got.Missed, tc.progress, tc.checkAfter, tc.missed)
			}
		})
	}

	t.Run("Held records when the step first settled, and keeps it", func(t *testing.T) {
		first := DecideDeadline(facts(status(grayapi.PhaseHeld, nil), nil, 4)).Status.SettledAt
		if first == nil || !first.Time.Equal(now) {
			t.Errorf("first Held: SettledAt = %v, want %v", first, now)
		}
		f := facts(status(grayapi.PhaseHeld, nil), nil, 4)
		f.Prev.SettledAt, f.Status.SettledAt = &settled, &settled
		if again := DecideDeadline(f).Status.SettledAt; again == nil || !again.Time.Equal(settled.Time) {
			t.Errorf("Held again: SettledAt = %v, want %v", again, settled)
		}
	})
	t.Run("Complete keeps only the failure an on-failure rollback recorded", func(t *testing.T) {
		st := status(grayapi.PhaseComplete, at(0, 4))
		st.Failure = rollbackFailure
		if got := DecideDeadline(facts(st, nil, 4)).Status; got.Failure != rollbackFailure || got.Progress != nil {
			t.Errorf("Complete after a rollback: %+v, want its rollback failure and no clock", got)
		}
		st.Failure = &grayapi.Failure{Reason: grayapi.ReasonProgressDeadlineExceeded, Message: "slow"}
		if got := DecideDeadline(facts(st, nil, 4)).Status; got.Failure != nil {
			t.Errorf("Complete: failure %+v kept, want none", got.Failure)
		}
	})
}
