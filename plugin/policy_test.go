package plugin

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

func TestPolicyView(t *testing.T) {
	settled := heldAt(6 * time.Minute)
	tests := []struct {
		name        string
		annotations map[string]string
		settledAt   bool
		// phase is the recorded phase when settledAt; Held if empty.
		phase grayapi.Phase
		// step is the recorded step, recorded the duration the status recorded as the hold
		// settled (0: a status written before durations were recorded).
		step            int32
		recorded        time.Duration
		recordedUntimed bool
		takenOver       bool
		want            PolicyView
		wantResume      time.Duration // from now; 0 for none
	}{
		{name: "defaults", want: PolicyView{OnFailure: "hold"}},
		{name: "abort, timed, not held",
			annotations: map[string]string{grayapi.OnFailureAnnotation: "abort", grayapi.HoldForAnnotation: "600s"},
			want:        PolicyView{OnFailure: "abort", HoldFor: "10m0s"}},
		{name: "rollback is read as abort",
			annotations: map[string]string{grayapi.OnFailureAnnotation: "rollback"},
			want:        PolicyView{OnFailure: "abort"}},
		{name: "timed and held", annotations: map[string]string{grayapi.HoldForAnnotation: "10m"}, settledAt: true,
			want: PolicyView{OnFailure: "hold", HoldFor: "10m0s", CurrentHoldFor: "10m0s"}, wantResume: 4 * time.Minute},
		{name: "timed, settled once, Progressing again: no resume is due",
			annotations: map[string]string{grayapi.HoldForAnnotation: "10m"}, settledAt: true, phase: grayapi.PhaseProgressing,
			want: PolicyView{OnFailure: "hold", HoldFor: "10m0s"}},
		{name: "timed, held, paused by its user while taken over",
			annotations: map[string]string{grayapi.HoldForAnnotation: "10m", grayapi.PausedAnnotation: "true"}, settledAt: true, takenOver: true,
			want: PolicyView{OnFailure: "hold", HoldFor: "10m0s", CurrentHoldFor: "10m0s", UserPaused: true}},
		{name: "kubegray.io/paused means nothing unless taken over",
			annotations: map[string]string{grayapi.HoldForAnnotation: "10m", grayapi.PausedAnnotation: "true"}, settledAt: true,
			want: PolicyView{OnFailure: "hold", HoldFor: "10m0s", CurrentHoldFor: "10m0s"}, wantResume: 4 * time.Minute},
		{name: "the hold point's own duration times the hold, without hold-for",
			annotations: map[string]string{grayapi.PercentAnnotation: "10@8m,50"}, settledAt: true,
			want: PolicyView{OnFailure: "hold", CurrentHoldFor: "8m0s"}, wantResume: 2 * time.Minute},
		{name: "the hold point's own duration wins over hold-for",
			annotations: map[string]string{grayapi.PercentAnnotation: "10,50@8m", grayapi.HoldForAnnotation: "1h"}, settledAt: true, step: 1,
			want: PolicyView{OnFailure: "hold", HoldFor: "1h0m0s", CurrentHoldFor: "8m0s"}, wantResume: 2 * time.Minute},
		{name: "hold-for times a hold point without a duration of its own",
			annotations: map[string]string{grayapi.PercentAnnotation: "10@8m,50", grayapi.HoldForAnnotation: "10m"}, settledAt: true, step: 1,
			want: PolicyView{OnFailure: "hold", HoldFor: "10m0s", CurrentHoldFor: "10m0s"}, wantResume: 4 * time.Minute},
		{name: "the duration recorded as the hold settled wins over an edit since",
			annotations: map[string]string{grayapi.PercentAnnotation: "10@1m,50", grayapi.HoldForAnnotation: "1m"}, settledAt: true, recorded: 10 * time.Minute,
			want: PolicyView{OnFailure: "hold", HoldFor: "1m0s", CurrentHoldFor: "10m0s"}, wantResume: 4 * time.Minute},
		{name: "a recorded duration times the hold after hold-for was removed",
			annotations: map[string]string{grayapi.PercentAnnotation: "10"}, settledAt: true, recorded: 10 * time.Minute,
			want: PolicyView{OnFailure: "hold", CurrentHoldFor: "10m0s"}, wantResume: 4 * time.Minute},
		{name: "a hold that settled untimed stays untimed after hold-for is added",
			annotations: map[string]string{grayapi.PercentAnnotation: "10,50", grayapi.HoldForAnnotation: "1m"}, settledAt: true, recordedUntimed: true,
			want: PolicyView{OnFailure: "hold", HoldFor: "1m0s", CurrentHoldFor: "0s"}},
		{name: "a point's own duration, held, paused by its user while taken over",
			annotations: map[string]string{grayapi.PercentAnnotation: "10@8m", grayapi.PausedAnnotation: "true"}, settledAt: true, takenOver: true,
			want: PolicyView{OnFailure: "hold", CurrentHoldFor: "8m0s", UserPaused: true}},
		{name: "both invalid: each is reported",
			annotations: map[string]string{grayapi.OnFailureAnnotation: "", grayapi.HoldForAnnotation: "-5m"}, settledAt: true,
			want: PolicyView{
				OnFailureError: `invalid kubegray.io/on-failure "": must be "hold" or "abort" ("rollback" is read as "abort")`,
				HoldForError:   `invalid kubegray.io/hold-for "-5m": must be a Go duration from 1s to 744h, e.g. "10m" or "1h30m"; -5m0s is shorter than 1s`,
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var st *grayapi.Status
			if tt.settledAt {
				st = &grayapi.Status{Phase: grayapi.PhaseHeld, Step: tt.step, SettledAt: settled}
				if tt.recorded != 0 || tt.recordedUntimed {
					st.HoldFor = &metav1.Duration{Duration: tt.recorded}
				}
				if tt.phase != "" {
					st.Phase = tt.phase
				}
			}
			got := policyView(tt.annotations, st, tt.takenOver)
			resumesAt := got.ResumesAt
			got.ResumesAt = nil
			if *got != tt.want {
				t.Errorf("policyView() = %+v, want %+v", *got, tt.want)
			}
			switch {
			case tt.wantResume == 0 && resumesAt != nil:
				t.Errorf("resumesAt %v, want none", resumesAt)
			case tt.wantResume != 0 && (resumesAt == nil || !resumesAt.Equal(heldAt(-tt.wantResume))):
				t.Errorf("resumesAt %v, want %v", resumesAt, now.Add(tt.wantResume))
			}
		})
	}
}

func TestPolicyText(t *testing.T) {
	const invalid = `invalid kubegray.io/hold-for "10": must be a Go duration from 1s to 744h, e.g. "10m" or "1h30m"; missing unit in duration "10"`
	resumes := func(d time.Duration) *PolicyView {
		return &PolicyView{OnFailure: "hold", HoldFor: "10m0s", CurrentHoldFor: "10m0s", ResumesAt: heldAt(-d)}
	}
	tests := []struct {
		name    string
		policy  *PolicyView
		message string
		// pointsTimed: some hold point names a duration of its own.
		pointsTimed bool
		want        string
	}{
		{name: "no timed hold", policy: &PolicyView{OnFailure: "hold"}, want: "until 'kubectl gray resume'"},
		{name: "timed, not held", policy: &PolicyView{HoldFor: "10m0s"}, want: "10m0s"},
		{name: "time left", policy: resumes(250 * time.Second), want: "10m0s, resumes by itself in 4m10s"},
		{name: "due", policy: resumes(-time.Second), want: "10m0s, resume due now"},
		{name: "paused by its user", policy: &PolicyView{HoldFor: "10m0s", UserPaused: true}, want: "10m0s, but not while you keep it paused (kubegray.io/paused)"},
		{name: "this hold's own duration", policy: &PolicyView{CurrentHoldFor: "5m0s", ResumesAt: heldAt(-250 * time.Second)},
			want: "5m0s for this hold, resumes by itself in 4m10s"},
		{name: "this hold's own duration, hold-for elsewhere", policy: &PolicyView{HoldFor: "1h0m0s", CurrentHoldFor: "5m0s", ResumesAt: heldAt(-250 * time.Second)}, pointsTimed: true,
			want: "5m0s for this hold, resumes by itself in 4m10s; 1h0m0s where a hold point names no duration"},
		{name: "this hold's own duration, due", policy: &PolicyView{CurrentHoldFor: "5m0s", ResumesAt: heldAt(time.Second)},
			want: "5m0s for this hold, resume due now"},
		{name: "this hold's own duration, paused by its user", policy: &PolicyView{CurrentHoldFor: "5m0s", UserPaused: true},
			want: "5m0s for this hold, but not while you keep it paused (kubegray.io/paused)"},
		{name: "paused by its user, held", policy: &PolicyView{HoldFor: "10m0s", CurrentHoldFor: "10m0s", UserPaused: true}, want: "10m0s, but not while you keep it paused (kubegray.io/paused)"},
		{name: "hold points with durations, paused by its user", policy: &PolicyView{UserPaused: true}, pointsTimed: true,
			want: "until 'kubectl gray resume' where a hold point names no duration, but not while you keep it paused (kubegray.io/paused)"},
		{name: "this hold settled untimed, hold-for added since", policy: &PolicyView{HoldFor: "10m0s", CurrentHoldFor: "0s"},
			want: "until 'kubectl gray resume' for this hold; 10m0s"},
		{name: "this hold settled untimed, points timed", policy: &PolicyView{CurrentHoldFor: "0s"}, pointsTimed: true,
			want: "until 'kubectl gray resume' for this hold"},
		{name: "this hold settled untimed, nothing timed", policy: &PolicyView{CurrentHoldFor: "0s"},
			want: "until 'kubectl gray resume'"},
		{name: "hold points with durations, not held", policy: &PolicyView{OnFailure: "hold"}, pointsTimed: true,
			want: "until 'kubectl gray resume' where a hold point names no duration"},
		{name: "hold points with durations and hold-for, not held", policy: &PolicyView{HoldFor: "10m0s"}, pointsTimed: true,
			want: "10m0s where a hold point names no duration"},
		{name: "invalid", policy: &PolicyView{HoldForError: invalid}, want: invalid},
		{name: "invalid, and the controller says so", policy: &PolicyView{HoldForError: invalid}, message: invalid, want: "invalid (see Message)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := holdForText(tt.policy, tt.message, tt.pointsTimed, now); got != tt.want {
				t.Fatalf("holdForText() = %q, want %q", got, tt.want)
			}
		})
	}
}
