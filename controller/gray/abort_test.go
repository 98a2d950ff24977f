package gray

import (
	"testing"

	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

func TestDecideAbort(t *testing.T) {
	held := grayapi.Status{Revision: 3, StableRevision: 2, Step: 0, Percent: 20, Phase: grayapi.PhaseHeld}
	failure := &grayapi.Failure{Reason: grayapi.ReasonProgressDeadlineExceeded, Message: "0 of 2 available"}
	degraded := held
	degraded.Phase, degraded.Failure = grayapi.PhaseDegraded, failure
	complete := grayapi.Status{Revision: 3, StableRevision: 3, Step: 1, Percent: 100, Phase: grayapi.PhaseComplete}
	abortPolicy := grayapi.Policy{OnFailure: grayapi.OnFailureAbort}
	tests := []struct {
		name string
		f    abortFacts
		want abortDecision
	}{
		{name: "nothing asked, nothing failed", f: abortFacts{Status: held, Prev: held, HasPrev: true, HasNewRS: true, StableRS: true}},
		{name: "on-failure abort acts on a Degraded status already read",
			f:    abortFacts{Status: degraded, Prev: degraded, HasPrev: true, Policy: abortPolicy, HasNewRS: true, StableRS: true},
			want: abortDecision{What: abortStart, Failure: failure}},
		{name: "on-failure abort waits until the Degraded status was written",
			f: abortFacts{Status: degraded, Prev: held, HasPrev: true, Policy: abortPolicy, HasNewRS: true, StableRS: true}},
		{name: "on-failure hold never aborts",
			f: abortFacts{Status: degraded, Prev: degraded, HasPrev: true, Policy: grayapi.Policy{OnFailure: grayapi.OnFailureHold}, HasNewRS: true, StableRS: true}},
		{name: "on-failure abort without a stable replica set stays Degraded",
			f: abortFacts{Status: degraded, Prev: degraded, HasPrev: true, Policy: abortPolicy, HasNewRS: true}},
		{name: "a person's abort of a held canary records Aborted",
			f: abortFacts{Status: held, Prev: held, HasPrev: true, Request: grayapi.Resume{Revision: 3, Abort: true}, HasNewRS: true, StableRS: true},
			want: abortDecision{What: abortStart, Consume: true,
				Failure: &grayapi.Failure{Reason: grayapi.ReasonAborted, Message: "revision 3 was aborted at 20% on request"}}},
		{name: "a person's abort of a Degraded canary keeps its failure",
			f:    abortFacts{Status: degraded, Prev: degraded, HasPrev: true, Request: grayapi.Resume{Revision: 3, Abort: true}, HasNewRS: true, StableRS: true},
			want: abortDecision{What: abortStart, Consume: true, Failure: failure}},
		{name: "an abort of another revision is dropped",
			f:    abortFacts{Status: held, Prev: held, HasPrev: true, Request: grayapi.Resume{Revision: 2, Abort: true}, HasNewRS: true, StableRS: true},
			want: abortDecision{Consume: true, Ignored: "revision 2 is not the rollout in flight (revision 3)"}},
		{name: "an abort of a complete rollout is dropped",
			f:    abortFacts{Status: complete, Prev: complete, HasPrev: true, Request: grayapi.Resume{Revision: 3, Abort: true}, HasNewRS: true, StableRS: true},
			want: abortDecision{Consume: true, Ignored: "revision 3 has no rollout in flight to abort (phase Complete, stable revision 3)"}},
		{name: "an abort without a stable replica set is dropped",
			f:    abortFacts{Status: held, Prev: held, HasPrev: true, Request: grayapi.Resume{Revision: 3, Abort: true}, HasNewRS: true},
			want: abortDecision{Consume: true, Ignored: "no replica set of stable revision 2 is left to go back to"}},
		{name: "an abort of an aborted rollout is dropped, saying so",
			f:    abortFacts{Status: held, Prev: held, HasPrev: true, Request: grayapi.Resume{Revision: 3, Abort: true}, Aborted: true, HasNewRS: true, StableRS: true},
			want: abortDecision{Consume: true, Ignored: "revision 3 is already aborted; kubectl gray retry, or a new template, starts it again"}},
		{name: "a retry of an aborted rollout",
			f:    abortFacts{Status: held, Prev: held, HasPrev: true, Request: grayapi.Resume{Revision: 3, Retry: true}, Aborted: true, HasNewRS: true, StableRS: true},
			want: abortDecision{What: abortRetry, Consume: true}},
		{name: "a retry of a rollout that is not aborted is dropped",
			f:    abortFacts{Status: held, Prev: held, HasPrev: true, Request: grayapi.Resume{Revision: 3, Retry: true}, HasNewRS: true, StableRS: true},
			want: abortDecision{Consume: true, Ignored: "revision 3 is not aborted (phase Held)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := decideAbort(tt.f)
			if got.What != tt.want.What || got.Consume != tt.want.Consume || got.Ignored != tt.want.Ignored ||
				(got.Failure == nil) != (tt.want.Failure == nil) || (got.Failure != nil && *got.Failure != *tt.want.Failure) {
				t.Fatalf("decideAbort = %+v (failure %+v), want %+v (failure %+v)", got, got.Failure, tt.want, tt.want.Failure)
			}
		})
	}
}
