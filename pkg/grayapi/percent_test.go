package grayapi

import (
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"
)

func TestParsePercent(t *testing.T) {
	tests := []struct {
		name    string
		value   string
		want    []int32
		wantErr string // exact message when non-empty
	}{
		{name: "single", value: "20", want: []int32{20}},
		{name: "steps", value: "10,30,60", want: []int32{10, 30, 60}},
		{name: "percent signs", value: "10%,30%,60%", want: []int32{10, 30, 60}},
		{name: "mixed signs and spaces", value: " 10% , 30,60% ", want: []int32{10, 30, 60}},
		{name: "zero", value: "0", want: []int32{0}},
		{name: "zero then more", value: "0,50", want: []int32{0, 50}},
		{name: "bounds", value: "0,99", want: []int32{0, 99}},
		{name: "leading zero", value: "05", want: []int32{5}},
		{name: "tab around", value: "\t20\n", want: []int32{20}},
		{
			name:    "decreasing",
			value:   "30,10",
			wantErr: `invalid kubegray.io/percent "30,10": hold points must be strictly increasing integers 0-99, each with an optional hold duration of 1s to 744h, e.g. "10,30,60" or "10@5m,50@30m"; 10 does not come after 30`,
		},
		{
			name:    "repeated",
			value:   "10,10",
			wantErr: `invalid kubegray.io/percent "10,10": hold points must be strictly increasing integers 0-99, each with an optional hold duration of 1s to 744h, e.g. "10,30,60" or "10@5m,50@30m"; 10 does not come after 10`,
		},
		{
			name:    "hundred",
			value:   "100",
			wantErr: `invalid kubegray.io/percent "100": hold points must be strictly increasing integers 0-99, each with an optional hold duration of 1s to 744h, e.g. "10,30,60" or "10@5m,50@30m"; "100" is out of range`,
		},
		{
			name:    "hundred fifty",
			value:   "150",
			wantErr: `invalid kubegray.io/percent "150": hold points must be strictly increasing integers 0-99, each with an optional hold duration of 1s to 744h, e.g. "10,30,60" or "10@5m,50@30m"; "150" is out of range`,
		},
		{
			name:    "negative",
			value:   "-5",
			wantErr: `invalid kubegray.io/percent "-5": hold points must be strictly increasing integers 0-99, each with an optional hold duration of 1s to 744h, e.g. "10,30,60" or "10@5m,50@30m"; "-5" is not an integer`,
		},
		{
			name:    "letters",
			value:   "abc",
			wantErr: `invalid kubegray.io/percent "abc": hold points must be strictly increasing integers 0-99, each with an optional hold duration of 1s to 744h, e.g. "10,30,60" or "10@5m,50@30m"; "abc" is not an integer`,
		},
		{
			name:    "double percent",
			value:   "20%%",
			wantErr: `invalid kubegray.io/percent "20%%": hold points must be strictly increasing integers 0-99, each with an optional hold duration of 1s to 744h, e.g. "10,30,60" or "10@5m,50@30m"; "20%%" is not an integer`,
		},
		{
			name:    "empty",
			value:   "",
			wantErr: `invalid kubegray.io/percent "": hold points must be strictly increasing integers 0-99, each with an optional hold duration of 1s to 744h, e.g. "10,30,60" or "10@5m,50@30m"; the value is empty`,
		},
		{
			name:    "blank",
			value:   "   ",
			wantErr: `invalid kubegray.io/percent "   ": hold points must be strictly increasing integers 0-99, each with an optional hold duration of 1s to 744h, e.g. "10,30,60" or "10@5m,50@30m"; the value is empty`,
		},
		{
			name:    "empty element",
			value:   "10,,30",
			wantErr: `invalid kubegray.io/percent "10,,30": hold points must be strictly increasing integers 0-99, each with an optional hold duration of 1s to 744h, e.g. "10,30,60" or "10@5m,50@30m"; a hold point is missing between commas`,
		},
		{
			name:    "trailing comma",
			value:   "10,",
			wantErr: `invalid kubegray.io/percent "10,": hold points must be strictly increasing integers 0-99, each with an optional hold duration of 1s to 744h, e.g. "10,30,60" or "10@5m,50@30m"; a hold point is missing between commas`,
		},
		{
			name:    "lone percent",
			value:   "%",
			wantErr: `invalid kubegray.io/percent "%": hold points must be strictly increasing integers 0-99, each with an optional hold duration of 1s to 744h, e.g. "10,30,60" or "10@5m,50@30m"; "%" has no number`,
		},
		{
			name:    "space before percent",
			value:   "20 %",
			wantErr: `invalid kubegray.io/percent "20 %": hold points must be strictly increasing integers 0-99, each with an optional hold duration of 1s to 744h, e.g. "10,30,60" or "10@5m,50@30m"; "20 %" is not an integer`,
		},
		{
			name:    "decimal",
			value:   "12.5",
			wantErr: `invalid kubegray.io/percent "12.5": hold points must be strictly increasing integers 0-99, each with an optional hold duration of 1s to 744h, e.g. "10,30,60" or "10@5m,50@30m"; "12.5" is not an integer`,
		},
		{
			name:    "plus sign",
			value:   "+5",
			wantErr: `invalid kubegray.io/percent "+5": hold points must be strictly increasing integers 0-99, each with an optional hold duration of 1s to 744h, e.g. "10,30,60" or "10@5m,50@30m"; "+5" is not an integer`,
		},
		{
			name:    "huge number does not overflow",
			value:   "99999999999999999999",
			wantErr: `invalid kubegray.io/percent "99999999999999999999": hold points must be strictly increasing integers 0-99, each with an optional hold duration of 1s to 744h, e.g. "10,30,60" or "10@5m,50@30m"; "99999999999999999999" is out of range`,
		},
		{
			name:    "semicolons",
			value:   "10;30",
			wantErr: `invalid kubegray.io/percent "10;30": hold points must be strictly increasing integers 0-99, each with an optional hold duration of 1s to 744h, e.g. "10,30,60" or "10@5m,50@30m"; "10;30" is not an integer`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParsePercent(tt.value)
			if tt.wantErr != "" {
				if err == nil {
					t.Fatalf("ParsePercent(%q) = %v, want error %q", tt.value, got, tt.wantErr)
				}
				if err.Error() != tt.wantErr {
					t.Fatalf("ParsePercent(%q) error\n got: %s\nwant: %s", tt.value, err, tt.wantErr)
				}
				var invalid *InvalidValueError
				if !errors.As(err, &invalid) || invalid.Key != PercentAnnotation || invalid.Value != tt.value {
					t.Fatalf("ParsePercent(%q) error %#v is not an *InvalidValueError for the key and value", tt.value, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParsePercent(%q) unexpected error: %v", tt.value, err)
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("ParsePercent(%q) = %v, want %v", tt.value, got, tt.want)
			}
		})
	}
}

func TestFormatPercent(t *testing.T) {
	tests := []struct {
		name   string
		points []int32
		want   string
	}{
		{name: "single", points: []int32{20}, want: "20"},
		{name: "steps", points: []int32{10, 30, 60}, want: "10,30,60"},
		{name: "zero", points: []int32{0}, want: "0"},
		{name: "empty", points: nil, want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := FormatPercent(tt.points); got != tt.want {
				t.Fatalf("FormatPercent(%v) = %q, want %q", tt.points, got, tt.want)
			}
		})
	}
}

func TestPercentRoundTrip(t *testing.T) {
	tests := []struct {
		name  string
		value string
		want  string
	}{
		{name: "canonical", value: "10,30,60", want: "10,30,60"},
		{name: "decorated", value: " 10% ,30%, 60 ", want: "10,30,60"},
		{name: "leading zeros", value: "00,05", want: "0,5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			points, err := ParsePercent(tt.value)
			if err != nil {
				t.Fatal(err)
			}
			formatted := FormatPercent(points)
			if formatted != tt.want {
				t.Fatalf("FormatPercent(ParsePercent(%q)) = %q, want %q", tt.value, formatted, tt.want)
			}
			again, err := ParsePercent(formatted)
			if err != nil || !slices.Equal(again, points) {
				t.Fatalf("ParsePercent(%q) = %v, %v; want %v", formatted, again, err, points)
			}
		})
	}
}

func TestStepPercent(t *testing.T) {
	points := []int32{10, 30, 60}
	tests := []struct {
		name   string
		points []int32
		step   int32
		want   int32
	}{
		{name: "first", points: points, step: 0, want: 10},
		{name: "last", points: points, step: 2, want: 60},
		{name: "full after last", points: points, step: 3, want: 100},
		{name: "beyond", points: points, step: 7, want: 100},
		{name: "negative step", points: points, step: -1, want: 10},
		{name: "no points", points: nil, step: 0, want: 100},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := StepPercent(tt.points, tt.step); got != tt.want {
				t.Fatalf("StepPercent(%v, %d) = %d, want %d", tt.points, tt.step, got, tt.want)
			}
		})
	}
}

// FuzzParsePercent checks the parser's invariants on arbitrary input: it
// never panics; whatever it accepts is a non-empty, strictly increasing list
// within 0-99 that formats to a value parsing back to the same list; and
// whatever it rejects is an *InvalidValueError quoting the input.
func FuzzParsePercent(f *testing.F) {
	for _, seed := range []string{"20", "10,30,60", " 10% , 30% ", "0", "30,10", "100", "-5", "abc", "20%%", "", "10,,30", "%", "99,", "1,2,3,4,5,6,7,8,9"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, value string) {
		points, err := ParsePercent(value)
		if err != nil {
			var invalid *InvalidValueError
			if !errors.As(err, &invalid) || invalid.Value != value {
				t.Fatalf("ParsePercent(%q) error %v is not an *InvalidValueError quoting the input", value, err)
			}
			return
		}
		if len(points) == 0 {
			t.Fatalf("ParsePercent(%q) accepted an empty list", value)
		}
		for i, p := range points {
			if p < 0 || p > 99 {
				t.Fatalf("ParsePercent(%q) = %v: %d is outside 0-99", value, points, p)
			}
			if i > 0 && p <= points[i-1] {
				t.Fatalf("ParsePercent(%q) = %v is not strictly increasing", value, points)
			}
		}
		formatted := FormatPercent(points)
		again, err := ParsePercent(formatted)
		if err != nil {
			t.Fatalf("ParsePercent(FormatPercent(%v) = %q) failed: %v", points, formatted, err)
		}
		if !slices.Equal(again, points) {
			t.Fatalf("round trip of %q: %v → %q → %v", value, points, formatted, again)
		}
	})
}

// TestParseHoldPoints pins the hold points' own durations: "@" and a Go duration with
// kubegray.io/hold-for's bounds (1s to 744h), mixed with plain points, and the error naming the
// point and the bad value.
func TestParseHoldPoints(t *testing.T) {
	const rule = `hold points must be strictly increasing integers 0-99, each with an optional hold duration of 1s to 744h, e.g. "10,30,60" or "10@5m,50@30m"`
	tests := []struct {
		value    string
		percents []int32
		holdFor  []time.Duration
		wantErr  string
	}{
		{value: "10@5m,50@30m", percents: []int32{10, 50}, holdFor: []time.Duration{5 * time.Minute, 30 * time.Minute}},
		{value: "10@5m,50", percents: []int32{10, 50}, holdFor: []time.Duration{5 * time.Minute, 0}},
		{value: " 10% @ 1h30m , 60 ", percents: []int32{10, 60}, holdFor: []time.Duration{90 * time.Minute, 0}},
		{value: "0@1s,99@744h", percents: []int32{0, 99}, holdFor: []time.Duration{time.Second, 744 * time.Hour}},
		{value: "20", percents: []int32{20}, holdFor: []time.Duration{0}},
		{value: "10@", wantErr: `invalid kubegray.io/percent "10@": ` + rule + `; hold point 10: "": invalid duration ""`},
		{value: "10@5", wantErr: `invalid kubegray.io/percent "10@5": ` + rule + `; hold point 10: "5": missing unit in duration "5"`},
		{value: "10,50@500ms", wantErr: `invalid kubegray.io/percent "10,50@500ms": ` + rule + `; hold point 50: 500ms is shorter than 1s`},
		{value: "10@800h", wantErr: `invalid kubegray.io/percent "10@800h": ` + rule + `; hold point 10: 800h0m0s is longer than 744h0m0s`},
		{value: "@5m", wantErr: `invalid kubegray.io/percent "@5m": ` + rule + `; a hold point is missing between commas`},
		{value: "50@5m,10@5m", wantErr: `invalid kubegray.io/percent "50@5m,10@5m": ` + rule + `; 10 does not come after 50`},
	}
	for _, tt := range tests {
		got, err := ParseHoldPoints(tt.value)
		if tt.wantErr != "" {
			if err == nil || err.Error() != tt.wantErr {
				t.Errorf("ParseHoldPoints(%q) error\n got: %v\nwant: %s", tt.value, err, tt.wantErr)
			}
			continue
		}
		if err != nil || !slices.Equal(got.Percents, tt.percents) || !slices.Equal(got.HoldFor, tt.holdFor) {
			t.Errorf("ParseHoldPoints(%q) = %v, %v; want %v %v", tt.value, got, err, tt.percents, tt.holdFor)
		}
	}
}

// TestFormatHoldPoints pins the annotation form kubectl gray set writes and its status table shows:
// the shares as FormatPercent writes them, each point's own duration in its shortest form.
func TestFormatHoldPoints(t *testing.T) {
	tests := []struct {
		value string
		want  string
	}{
		{value: "10,30,60", want: "10,30,60"},
		{value: "10%@5m0s, 50@30m", want: "10@5m,50@30m"},
		{value: "10@90s,50", want: "10@1m30s,50"},
		{value: "5@1h0m0s,20@1h30m,40@1h0m5s,60@2s", want: "5@1h,20@1h30m,40@1h0m5s,60@2s"},
	}
	for _, tt := range tests {
		t.Run(tt.value, func(t *testing.T) {
			points, err := ParseHoldPoints(tt.value)
			if err != nil {
				t.Fatal(err)
			}
			got := FormatHoldPoints(points)
			if got != tt.want {
				t.Errorf("FormatHoldPoints(%q) = %q, want %q", tt.value, got, tt.want)
			}
			// What set writes reads back as the same hold points.
			again, err := ParseHoldPoints(got)
			if err != nil || !reflect.DeepEqual(again, points) {
				t.Errorf("%q reads back as %v, %v; want %v", got, again, err, points)
			}
		})
	}
}
