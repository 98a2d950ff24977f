package grayapi

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestParseStatus(t *testing.T) {
	heldAt := metav1.NewTime(time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC))
	tests := []struct {
		name    string
		value   string
		want    Status
		wantErr string // substring of the error
	}{
		{
			name:  "held",
			value: `{"mode":"instead","revision":2,"stableRevision":1,"step":0,"percent":10,"target":1,"phase":"Held","message":"held at 10%","observedGeneration":4,"heldAt":"2026-03-01T10:00:00Z"}`,
			want: Status{Mode: ModeInstead, Revision: 2, StableRevision: 1, Step: 0, Percent: 10, Target: 1,
				Phase: PhaseHeld, Message: "held at 10%", ObservedGeneration: 4, HeldAt: &heldAt},
		},
		{
			name:  "complete without heldAt",
			value: `{"mode":"alongside","revision":3,"stableRevision":3,"step":3,"percent":100,"target":10,"phase":"Complete","observedGeneration":9}`,
			want:  Status{Mode: ModeAlongside, Revision: 3, StableRevision: 3, Step: 3, Percent: 100, Target: 10, Phase: PhaseComplete, ObservedGeneration: 9},
		},
		{
			name:  "unknown fields from a newer controller are ignored",
			value: `{"phase":"Progressing","revision":2,"futureField":{"x":1}}`,
			want:  Status{Phase: PhaseProgressing, Revision: 2},
		},
		{name: "not json", value: `Held`, wantErr: `invalid kubegray.io/status "Held": must be the JSON object gray-controller writes`},
		{name: "empty", value: ``, wantErr: `invalid kubegray.io/status ""`},
		{name: "unknown phase", value: `{"phase":"Paused"}`, wantErr: `phase "Paused" is not one of Progressing, Held, Complete, RolledBack, Degraded, Invalid`},
		{name: "missing phase", value: `{"revision":2}`, wantErr: `phase "" is not one of`},
		{name: "unknown mode", value: `{"phase":"Held","mode":"sideways"}`, wantErr: `mode "sideways" is neither "instead" nor "alongside"`},
		{name: "negative step", value: `{"phase":"Held","step":-1}`, wantErr: `must not be negative`},
		{name: "percent above 100", value: `{"phase":"Held","percent":101}`, wantErr: `percent 101 is not within 0-100`},
		{name: "wrong type", value: `{"phase":"Held","revision":"2"}`, wantErr: `cannot unmarshal string`},
		{name: "bad time", value: `{"phase":"Held","heldAt":"yesterday"}`, wantErr: `invalid kubegray.io/status`},
		{name: "trailing garbage", value: `{"phase":"Held"} x`, wantErr: `invalid character 'x'`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseStatus(tt.value)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseStatus(%q) = %+v, %v; want error containing %q", tt.value, got, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseStatus(%q): %v", tt.value, err)
			}
			if !equality.Semantic.DeepEqual(got, tt.want) {
				t.Fatalf("ParseStatus(%q)\n got %+v\nwant %+v", tt.value, got, tt.want)
			}
		})
	}
}

// TestRecordedStatus pins the three answers a reader of kubegray.io/status acts on: none
// recorded, one recorded and read, one recorded that cannot be read.
func TestRecordedStatus(t *testing.T) {
	tests := []struct {
		name         string
		annotations  map[string]string
		wantRecorded bool
		wantPhase    Phase
		wantErr      bool
	}{
		{name: "none", annotations: map[string]string{PercentAnnotation: "20"}},
		{name: "held", annotations: map[string]string{StatusAnnotation: `{"mode":"instead","revision":2,"phase":"Held"}`},
			wantRecorded: true, wantPhase: PhaseHeld},
		{name: "unreadable", annotations: map[string]string{StatusAnnotation: "{"}, wantRecorded: true, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, recorded, err := RecordedStatus(tt.annotations)
			if recorded != tt.wantRecorded || (err != nil) != tt.wantErr || st.Phase != tt.wantPhase {
				t.Errorf("RecordedStatus() = %+v, %v, %v; want phase %q, recorded %v, error %v", st, recorded, err, tt.wantPhase, tt.wantRecorded, tt.wantErr)
			}
		})
	}
}

func TestFormatStatus(t *testing.T) {
	heldAt := metav1.NewTime(time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC))
	tests := []struct {
		name    string
		status  Status
		want    string
		wantErr string
	}{
		{
			name: "held",
			status: Status{Mode: ModeInstead, Revision: 2, StableRevision: 1, Step: 0, Percent: 10, Target: 1,
				Phase: PhaseHeld, Message: "held at 10%", ObservedGeneration: 4, HeldAt: &heldAt,
				Serves: Serves{RequestNext, RequestFull, RequestAbort, RequestUndo}},
			want: `{"serves":["next","full","abort","undo"],"observedGeneration":4,"mode":"instead","revision":2,"stableRevision":1,"step":0,"percent":10,"target":1,"phase":"Held","message":"held at 10%","heldAt":"2026-03-01T10:00:00Z"}`,
		},
		{
			name:   "progressing, no message, no heldAt",
			status: Status{Mode: ModeAlongside, Revision: 5, StableRevision: 4, Step: 1, Percent: 30, Target: 3, Phase: PhaseProgressing, ObservedGeneration: 7},
			want:   `{"serves":[],"observedGeneration":7,"mode":"alongside","revision":5,"stableRevision":4,"step":1,"percent":30,"target":3,"phase":"Progressing"}`,
		},
		{name: "serves out of order", status: Status{Phase: PhaseHeld, Serves: Serves{RequestFull, RequestNext}},
			wantErr: `serves lists "next" out of order or twice`},
		{name: "serves twice", status: Status{Phase: PhaseHeld, Serves: Serves{RequestAbort, RequestAbort}},
			wantErr: `serves lists "abort" out of order or twice`},
		{name: "serves an unknown request", status: Status{Phase: PhaseHeld, Serves: Serves{"rollback"}},
			wantErr: `serves lists "rollback", which is not one of`},
		{name: "no phase", status: Status{Revision: 1}, wantErr: `kubegray.io/status: phase "" is not one of`},
		{name: "negative target", status: Status{Phase: PhaseHeld, Target: -1}, wantErr: `must not be negative`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := FormatStatus(tt.status)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("FormatStatus() = %q, %v; want error containing %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("FormatStatus()\n got %s (%v)\nwant %s", got, err, tt.want)
			}
			back, err := ParseStatus(got)
			if err != nil || !equality.Semantic.DeepEqual(back, tt.status) {
				t.Fatalf("ParseStatus(FormatStatus()) = %+v, %v; want %+v", back, err, tt.status)
			}
		})
	}
}

func TestPhaseValid(t *testing.T) {
	for _, p := range []Phase{PhaseProgressing, PhaseHeld, PhaseComplete, PhaseRolledBack, PhaseDegraded, PhaseInvalid} {
		if !p.Valid() {
			t.Errorf("%q.Valid() = false", p)
		}
	}
	for _, p := range []Phase{"", "held", "Paused"} {
		if p.Valid() {
			t.Errorf("%q.Valid() = true", p)
		}
	}
}

// TestStatusMessagesCapped pins the cut of a status's messages, read or written: a forged status
// (instead mode has no guard) or a long pod message cannot make one of 250,000 bytes.
func TestStatusMessagesCapped(t *testing.T) {
	huge := strings.Repeat("m", 250000)
	s := Status{Phase: PhaseDegraded, Revision: 2, Message: huge, Failure: &Failure{Reason: "ProgressDeadlineExceeded", Message: huge}}
	raw, err := FormatStatus(s)
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) > 3*MaxStatusMessage {
		t.Fatalf("FormatStatus wrote %d bytes, want at most %d", len(raw), 3*MaxStatusMessage)
	}
	if s.Failure.Message != huge {
		t.Fatal("FormatStatus changed the caller's Failure")
	}
	forged := `{"phase":"Held","revision":2,"message":"` + huge + `","failure":{"reason":"x","message":"` + huge + `"}}`
	got, err := ParseStatus(forged)
	if err != nil {
		t.Fatal(err)
	}
	for what, msg := range map[string]string{"message": got.Message, "failure.message": got.Failure.Message} {
		if len(msg) > MaxStatusMessage || !strings.HasSuffix(msg, "...") || !strings.HasPrefix(msg, "mmm") {
			t.Errorf("ParseStatus %s is %d bytes (%.20s...%s), want at most %d, cut with ...", what, len(msg), msg, msg[max(0, len(msg)-5):], MaxStatusMessage)
		}
	}
	short := Status{Phase: PhaseHeld, Message: "held at 2 of 10 replicas"}
	if raw, err := FormatStatus(short); err != nil || !strings.Contains(raw, `"message":"held at 2 of 10 replicas"`) {
		t.Fatalf("FormatStatus(short) = %s, %v: a short message must stay whole", raw, err)
	}
}
