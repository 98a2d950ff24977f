package grayapi

import (
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestParseOnFailure(t *testing.T) {
	tests := []struct {
		value   string
		present bool
		want    OnFailure
		wantErr string
	}{
		{present: false, want: OnFailureHold},
		{value: "hold", present: true, want: OnFailureHold},
		{value: " abort ", present: true, want: OnFailureAbort},
		{value: " rollback ", present: true, want: OnFailureAbort},
		{value: "", present: true, wantErr: `invalid kubegray.io/on-failure "": must be "hold" or "abort" ("rollback" is read as "abort")`},
		{value: "Rollback", present: true, wantErr: `invalid kubegray.io/on-failure "Rollback"`},
		{value: "yes", present: true, wantErr: `"yes"`},
	}
	for _, tt := range tests {
		got, err := ParseOnFailure(tt.value, tt.present)
		switch {
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("ParseOnFailure(%q, %t) error %v, want one containing %q", tt.value, tt.present, err, tt.wantErr)
		case tt.wantErr == "" && (err != nil || got != tt.want):
			t.Errorf("ParseOnFailure(%q, %t) = %q, %v; want %q", tt.value, tt.present, got, err, tt.want)
		}
	}
}

func TestParseHoldFor(t *testing.T) {
	good := map[string]time.Duration{"10m": 10 * time.Minute, " 1h30m ": 90 * time.Minute, "1s": time.Second, "744h": 744 * time.Hour}
	for value, want := range good {
		if got, err := ParseHoldFor(value); err != nil || got != want {
			t.Errorf("ParseHoldFor(%q) = %v, %v; want %v", value, got, err, want)
		}
	}
	bad := map[string]string{
		"":      `invalid kubegray.io/hold-for "": must be a Go duration from 1s to 744h`,
		"10":    `missing unit in duration "10"`,
		"-5m":   "-5m0s is shorter than 1s",
		"500ms": "500ms is shorter than 1s",
		"745h":  "745h0m0s is longer than 744h0m0s",
		"10 m":  `"10 m"`,
	}
	for value, want := range bad {
		if _, err := ParseHoldFor(value); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseHoldFor(%q) error %v, want one containing %q", value, err, want)
		}
	}
}

func TestParsePolicy(t *testing.T) {
	p, err := ParsePolicy(map[string]string{OnFailureAnnotation: "rollback", HoldForAnnotation: "5s",
		GatesAnnotation: "pods, error-rate", GatesDryRunAnnotation: "latency"})
	if err != nil || !reflect.DeepEqual(p, Policy{OnFailure: OnFailureAbort, HoldFor: 5 * time.Second,
		Gates: []string{"pods", "error-rate"}, DryRunGates: []string{"latency"}}) {
		t.Fatalf("ParsePolicy = %+v, %v", p, err)
	}
	if p, err := ParsePolicy(nil); err != nil || !reflect.DeepEqual(p, Policy{OnFailure: OnFailureHold}) {
		t.Fatalf("ParsePolicy(nil) = %+v, %v; want hold and no timed hold", p, err)
	}
	if _, err := ParsePolicy(map[string]string{HoldForAnnotation: "soon"}); err == nil || !strings.Contains(err.Error(), HoldForAnnotation) {
		t.Fatalf("ParsePolicy with a bad hold-for: %v", err)
	}
	if _, err := ParsePolicy(map[string]string{GatesAnnotation: "pods,Pods"}); err == nil || !strings.Contains(err.Error(), GatesAnnotation) {
		t.Fatalf("ParsePolicy with a bad gate name: %v", err)
	}
}

func TestParseGates(t *testing.T) {
	bad := map[string]string{
		"":                  "a name is empty",
		"pods,,x":           "a name is empty",
		"Pods":              `"Pods" is not a lowercase DNS label`,
		"pods,pods":         `"pods" is named twice`,
		"a,b,c,d,e,f,g,h,i": "9 gates named, at most 8 allowed",
		"http://x":          "is not a lowercase DNS label",
	}
	for value, want := range bad {
		if _, err := ParseGates(GatesAnnotation, value); err == nil || !strings.Contains(err.Error(), want) ||
			!strings.Contains(err.Error(), GatesAnnotation) {
			t.Errorf("ParseGates(%q) error %v, want one naming the annotation and %q", value, err, want)
		}
	}
}

func TestTimedResumeAt(t *testing.T) {
	settled := metav1.NewTime(time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC))
	held := Status{Phase: PhaseHeld, SettledAt: &settled}
	tests := []struct {
		name       string
		st         Status
		holdFor    time.Duration
		userPaused bool
		wantAt     time.Time
		wantTimed  bool
	}{
		{name: "held, settled at 10:00, hold-for 10m", st: held, holdFor: 10 * time.Minute,
			wantAt: time.Date(2026, 12, 5, 10, 10, 0, 0, time.UTC), wantTimed: true},
		{name: "no hold-for", st: held},
		{name: "paused by its user", st: held, holdFor: 10 * time.Minute, userPaused: true},
		{name: "settled once, Progressing again", st: Status{Phase: PhaseProgressing, SettledAt: &settled}, holdFor: 10 * time.Minute},
		{name: "held but never settled", st: Status{Phase: PhaseHeld}, holdFor: 10 * time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			at, timed := TimedResumeAt(tt.st, tt.holdFor, tt.userPaused)
			if timed != tt.wantTimed || !at.Equal(tt.wantAt) {
				t.Errorf("TimedResumeAt() = %v, %t; want %v, %t", at, timed, tt.wantAt, tt.wantTimed)
			}
		})
	}
}
