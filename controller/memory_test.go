package controller

import (
	"strings"
	"testing"
)

func TestParseMemoryLimit(t *testing.T) {
	tests := []struct {
		value   string
		want    int64
		wantErr string
	}{
		{value: "", want: 0},
		{value: "256Mi", want: 268435456},
		// What the downward API's resourceFieldRef gives for limits.memory: 256Mi in bytes.
		{value: "268435456", want: 268435456},
		{value: "1G", want: 1000000000},
		{value: "lots", wantErr: `invalid --memory-limit "lots"`},
		{value: "0", wantErr: `invalid --memory-limit "0": must be a positive number of bytes`},
		{value: "-1Mi", wantErr: `invalid --memory-limit "-1Mi": must be a positive number of bytes`},
	}
	for _, tt := range tests {
		got, err := parseMemoryLimit(tt.value)
		switch {
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("parseMemoryLimit(%q) error = %v, want one containing %q", tt.value, err, tt.wantErr)
		case tt.wantErr == "" && (err != nil || got != tt.want):
			t.Errorf("parseMemoryLimit(%q) = %d, %v; want %d", tt.value, got, err, tt.want)
		}
	}
}

func TestSoftMemoryLimit(t *testing.T) {
	// 256Mi: the collector aims under 230.4 MiB, 25.6 MiB below the OOM killer.
	if got, want := softMemoryLimit(268435456), int64(241591910); got != want {
		t.Errorf("softMemoryLimit(256Mi) = %d, want %d", got, want)
	}
}
