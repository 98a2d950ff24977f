package gray

import (
	"strings"
	"testing"
	"time"

	"github.com/kubegray/kubectl-gray/internal/testutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// TestDecideResume pins every answer to a resume request, a plain unpause and a timed hold for
// web held by us at 20% (step 1 of 20,50) on revision 2; the messages are the events people read.
func TestDecideResume(t *testing.T) {
	facts := func(paused bool, request string) resumeFacts {
		d := testutil.GrayWeb(10, "20,50")
		d.Spec.Paused = paused
		if request != "" {
			d.Annotations[grayapi.ResumeAnnotation] = request
		}
		return resumeFacts{Deployment: d, Points: []int32{20, 50}, HeldByUs: true, HoldInPlace: true,
			Status: grayapi.Status{Revision: 2, StableRevision: 1, Step: 0, Percent: 20, Target: 2, Phase: grayapi.PhaseHeld}}
	}
	with := func(f resumeFacts, edit func(*resumeFacts)) resumeFacts {
		edit(&f)
		return f
	}
	tests := []struct {
		name string
		f    resumeFacts
		want ResumeDecision
		// ignoredPrefix is checked instead of want.ignored when set (the parse error is grayapi's).
		ignoredPrefix string
		// maxIgnored, when set, bounds the length of ignored.
		maxIgnored int
	}{{
		name: "our hold unpaused by the user",
		f:    facts(false, ""),
		want: ResumeDecision{Step: 1, Resumed: "Revision 2 unpaused at 20%: moving on to 50%"},
	}, {
		name: "hold-for ran out",
		f: with(facts(true, ""), func(f *resumeFacts) {
			f.HoldFor, f.HoldForKey, f.TimedHoldDue = 30*time.Second, grayapi.HoldForAnnotation, true
		}),
		want: ResumeDecision{Step: 1, Resumed: "Revision 2 held at 20% for 30s (kubegray.io/hold-for): moving on to 50%"},
	}, {
		name: "its hold point's own duration ran out",
		f: with(facts(true, ""), func(f *resumeFacts) {
			f.HoldFor, f.HoldForKey, f.TimedHoldDue = 5*time.Minute, grayapi.PercentAnnotation, true
		}),
		want: ResumeDecision{Step: 1, Resumed: "Revision 2 held at 20% for 5m0s (kubegray.io/percent): moving on to 50%"},
	}, {
		name: "held, nothing asked",
		f:    facts(true, ""),
		want: ResumeDecision{},
	}, {
		name: "next",
		f:    facts(true, "2:next"),
		want: ResumeDecision{Step: 1, Consume: true, Resumed: "Revision 2 resumed at 20%: moving on to 50%"},
	}, {
		name: "full",
		f:    facts(true, "2:full"),
		want: ResumeDecision{Step: 2, Consume: true, Resumed: "Revision 2 resumed at 20%: moving on to all replicas"},
	}, {
		name: "another revision",
		f:    facts(true, "3:next"),
		want: ResumeDecision{Consume: true, Ignored: `Ignored kubegray.io/resume="3:next": revision 3 is not the rollout in flight (revision 2)`},
	}, {
		name: "a rollout that is not held",
		f: with(facts(false, "2:next"), func(f *resumeFacts) {
			f.HeldByUs, f.Status.Phase = false, grayapi.PhaseProgressing
		}),
		want: ResumeDecision{Consume: true, Ignored: `Ignored kubegray.io/resume="2:next": revision 2 is not held (phase Progressing)`},
	}, {
		name:          "unreadable",
		f:             facts(true, "next"),
		want:          ResumeDecision{Consume: true},
		ignoredPrefix: `Ignored kubegray.io/resume: invalid kubegray.io/resume "next": `,
	}, {
		// The event quotes the request capped, however much was pasted into it.
		name:          "unreadable and huge",
		f:             facts(true, strings.Repeat("9", 250000)+":next"),
		want:          ResumeDecision{Consume: true},
		ignoredPrefix: `Ignored kubegray.io/resume: invalid kubegray.io/resume "999`,
		maxIgnored:    512,
	}, {
		name: "undo is takeUndo's: only consumed here",
		f:    facts(true, "2:undo"),
		want: ResumeDecision{Consume: true},
	}, {
		name: "a scaling event still absorbed: the request waits",
		f:    with(facts(true, "2:next"), func(f *resumeFacts) { f.HoldInPlace = false }),
		want: ResumeDecision{Waits: true},
	}, {
		name: "with the stable ReplicaSet gone nothing is absorbed: it moves on",
		f:    with(facts(true, "2:full"), func(f *resumeFacts) { f.HoldInPlace, f.StableGone = false, true }),
		want: ResumeDecision{Step: 2, Consume: true, Resumed: "Revision 2 resumed at 20%: moving on to all replicas"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := decideResume(tc.f)
			if tc.maxIgnored > 0 && len(got.Ignored) > tc.maxIgnored {
				t.Errorf("ignored is %d bytes, want at most %d: %s", len(got.Ignored), tc.maxIgnored, got.Ignored)
			}
			if tc.ignoredPrefix != "" {
				if !strings.HasPrefix(got.Ignored, tc.ignoredPrefix) || len(got.Ignored) == len(tc.ignoredPrefix) {
					t.Errorf("ignored = %q, want %q and the reason", got.Ignored, tc.ignoredPrefix)
				}
				got.Ignored = ""
			}
			if got != tc.want {
				t.Errorf("decideResume = %+v, want %+v", got, tc.want)
			}
		})
	}
}
