package plugin

import (
	"testing"
	"time"

	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

func TestPolicyView(t *testing.T) {
	settled := heldAt(6 * time.Minute)
	tests := []struct {
		name        string
		annotations map[string]string
		settledAt   bool
		// phase is the recorded phase when settledAt; Held if empty.
		phase      grayapi.Phase
		takenOver  bool
		want       PolicyView
		wantResume time.Duration // from now; 0 for none
	}{
		{name: "defaults", want: PolicyView{OnFailure: "hold"}},
		{name: "abort, timed, not held",
			annotations: map[string]string{grayapi.OnFailureAnnotation: "abort", grayapi.HoldForAnnotation: "600s"},
			want:        PolicyView{OnFailure: "abort", HoldFor: "10m0s"}},
		{name: "rollback is read as abort",
			annotations: map[string]string{grayapi.OnFailureAnnotation: "rollback"},
			want:        PolicyView{OnFailure: "abort"}},
		{name: "timed and held", annotations: map[string]string{grayapi.HoldForAnnotation: "10m"}, settledAt: true,
			want: PolicyView{OnFailure: "hold", HoldFor: "10m0s"}, wantResume: 4 * time.Minute},
		{name: "timed, settled once, Progressing again: no resume is due",
			annotations: map[string]string{grayapi.HoldForAnnotation: "10m"}, settledAt: true, phase: grayapi.PhaseProgressing,
			want: PolicyView{OnFailure: "hold", HoldFor: "10m0s"}},
		{name: "timed, held, paused by its user while taken over",
			annotations: map[string]string{grayapi.HoldForAnnotation: "10m", grayapi.PausedAnnotation: "true"}, settledAt: true, takenOver: true,
			want: PolicyView{OnFailure: "hold", HoldFor: "10m0s", UserPaused: true}},
		{name: "kubegray.io/paused means nothing unless taken over",
			annotations: map[string]string{grayapi.HoldForAnnotation: "10m", grayapi.PausedAnnotation: "true"}, settledAt: true,
			want: PolicyView{OnFailure: "hold", HoldFor: "10m0s"}, wantResume: 4 * time.Minute},
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
				st = &grayapi.Status{Phase: grayapi.PhaseHeld, SettledAt: settled}
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
		return &PolicyView{OnFailure: "hold", HoldFor: "10m0s", ResumesAt: heldAt(-d)}
	}
	tests := []struct {
		name    string
		policy  *PolicyView
		message string
		want    string
	}{
		{name: "no timed hold", policy: &PolicyView{OnFailure: "hold"}, want: "until 'kubectl gray resume'"},
		{name: "timed, not held", policy: &PolicyView{HoldFor: "10m0s"}, want: "10m0s"},
		{name: "time left", policy: resumes(250 * time.Second), want: "10m0s, resumes by itself in 4m10s"},
		{name: "due", policy: resumes(-time.Second), want: "10m0s, resume due now"},
		{name: "paused by its user", policy: &PolicyView{HoldFor: "10m0s", UserPaused: true}, want: "10m0s, but not while you keep it paused (kubegray.io/paused)"},
		{name: "invalid", policy: &PolicyView{HoldForError: invalid}, want: invalid},
		{name: "invalid, and the controller says so", policy: &PolicyView{HoldForError: invalid}, message: invalid, want: "invalid (see Message)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := holdForText(tt.policy, tt.message, now); got != tt.want {
				t.Fatalf("holdForText() = %q, want %q", got, tt.want)
			}
		})
	}
}
