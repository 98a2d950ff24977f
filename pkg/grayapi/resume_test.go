package grayapi

import (
	"testing"
)

func TestParseResume(t *testing.T) {
	const rule = `must be "<revision>:next", "<revision>:full", "<revision>:undo", "<revision>:abort" or "<revision>:retry" with a revision of 1 or more, e.g. "3:next"`
	tests := []struct {
		name    string
		value   string
		want    Resume
		wantErr string
	}{
		{name: "next", value: "3:next", want: Resume{Revision: 3}},
		{name: "full", value: "12:full", want: Resume{Revision: 12, Full: true}},
		{name: "undo", value: "4:undo", want: Resume{Revision: 4, Undo: true}},
		{name: "abort", value: "5:abort", want: Resume{Revision: 5, Abort: true}},
		{name: "retry", value: "6:retry", want: Resume{Revision: 6, Retry: true}},
		{name: "spaces around", value: "  7:full\n", want: Resume{Revision: 7, Full: true}},
		{name: "largest revision", value: "9223372036854775807:next", want: Resume{Revision: 9223372036854775807}},
		{name: "no colon", value: "3", wantErr: `invalid kubegray.io/resume "3": ` + rule + `; the ":" is missing`},
		{name: "no revision", value: ":next", wantErr: `invalid kubegray.io/resume ":next": ` + rule + `; revision "" is not a positive integer`},
		{name: "zero revision", value: "0:next", wantErr: `invalid kubegray.io/resume "0:next": ` + rule + `; revision "0" is not a positive integer`},
		{name: "negative revision", value: "-1:full", wantErr: `invalid kubegray.io/resume "-1:full": ` + rule + `; revision "-1" is not a positive integer`},
		{name: "overflowing revision", value: "9223372036854775808:next", wantErr: `invalid kubegray.io/resume "9223372036854775808:next": ` + rule + `; revision "9223372036854775808" is not a positive integer`},
		{name: "capitalised action", value: "3:Next", wantErr: `invalid kubegray.io/resume "3:Next": ` + rule + `; action "Next" is not "next", "full", "undo", "abort" or "retry"`},
		{name: "extra part", value: "3:next:x", wantErr: `invalid kubegray.io/resume "3:next:x": ` + rule + `; action "next:x" is not "next", "full", "undo", "abort" or "retry"`},
		{name: "inner space", value: "3: next", wantErr: `invalid kubegray.io/resume "3: next": ` + rule + `; action " next" is not "next", "full", "undo", "abort" or "retry"`},
		{name: "empty", value: "", wantErr: `invalid kubegray.io/resume "": ` + rule + `; the ":" is missing`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseResume(tt.value)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("ParseResume(%q) = %+v, %v\nwant error: %s", tt.value, got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ParseResume(%q) = %+v, %v; want %+v", tt.value, got, err, tt.want)
			}
		})
	}
}

func TestFormatResume(t *testing.T) {
	tests := []struct {
		name   string
		resume Resume
		want   string
	}{
		{name: "next", resume: Resume{Revision: 3}, want: "3:next"},
		{name: "full", resume: Resume{Revision: 12, Full: true}, want: "12:full"},
		{name: "undo", resume: Resume{Revision: 4, Undo: true}, want: "4:undo"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := FormatResume(tt.resume)
			if got != tt.want {
				t.Fatalf("FormatResume(%+v) = %q, want %q", tt.resume, got, tt.want)
			}
			back, err := ParseResume(got)
			if err != nil || back != tt.resume {
				t.Fatalf("ParseResume(%q) = %+v, %v; want %+v", got, back, err, tt.resume)
			}
		})
	}
}
