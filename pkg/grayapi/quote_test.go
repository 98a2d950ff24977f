package grayapi

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestQuoteValue(t *testing.T) {
	tests := []struct {
		name  string
		value string
		want  string
	}{
		{name: "short value quoted whole", value: "10,30", want: `"10,30"`},
		{name: "empty", value: "", want: `""`},
		{name: "escapes kept", value: "a\tb\x00", want: `"a\tb\x00"`},
		{name: "fits exactly", value: strings.Repeat("x", MaxQuotedValue-2), want: `"` + strings.Repeat("x", MaxQuotedValue-2) + `"`},
		{name: "one byte too long is cut", value: strings.Repeat("x", MaxQuotedValue-1),
			want: `"` + strings.Repeat("x", MaxQuotedValue-1-len(`..." (119 bytes)`)) + `..." (119 bytes)`},
		{name: "long value cut with its length", value: strings.Repeat("x", 250000),
			want: `"` + strings.Repeat("x", MaxQuotedValue-1-len(`..." (250000 bytes)`)) + `..." (250000 bytes)`},
		{name: "escapes are never split", value: strings.Repeat("\x00", 500),
			want: `"` + strings.Repeat(`\x00`, (MaxQuotedValue-1-len(`..." (500 bytes)`))/4) + `..." (500 bytes)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := QuoteValue(tt.value); got != tt.want {
				t.Fatalf("QuoteValue(%d bytes) = %s, want %s", len(tt.value), got, tt.want)
			}
		})
	}
}

// TestQuoteValueBounded pins the cap on values of every kind of rune: the result fits in
// MaxQuotedValue bytes and its quoted part reads back as a prefix of the value, whole runes
// only.
func TestQuoteValueBounded(t *testing.T) {
	for _, unit := range []string{"x", "é", "日本", "\x00", "\xff", "\u2028", "😀", `"\`} {
		value := strings.Repeat(unit, 1000)
		got := QuoteValue(value)
		if len(got) > MaxQuotedValue {
			t.Errorf("QuoteValue(%q × 1000) is %d bytes, want at most %d: %s", unit, len(got), MaxQuotedValue, got)
		}
		quoted, _, cut := strings.Cut(got, `..." (`)
		if !cut {
			t.Fatalf("QuoteValue(%q × 1000) = %s, want it cut", unit, got)
		}
		prefix, err := strconv.Unquote(quoted + `"`)
		if err != nil || !strings.HasPrefix(value, prefix) || len(prefix) == 0 {
			t.Errorf("QuoteValue(%q × 1000) = %s: quoted part %s is not a prefix of the value (%v)", unit, got, quoted, err)
		}
		if utf8.ValidString(unit) && !utf8.ValidString(prefix) {
			t.Errorf("QuoteValue(%q × 1000) split a rune: %s", unit, got)
		}
	}
}

// TestInvalidValueErrorStaysShort pins the size of every parser's error for a value of 250,000
// bytes (nearly all the annotation space the API server allows): a few hundred bytes that still
// name the key, the rule and the value's length.
func TestInvalidValueErrorStaysShort(t *testing.T) {
	huge := func(unit string) string { return strings.Repeat(unit, 250000/len(unit)) }
	tests := []struct {
		name  string
		parse func(string) error
		value string
	}{
		{name: "percent not an integer", parse: percentErr, value: huge("x")},
		{name: "percent out of range", parse: percentErr, value: huge("5")},
		{name: "percent with a long second point", parse: percentErr, value: "10," + huge("7")[3:]},
		{name: "percent of escapes", parse: percentErr, value: huge("\x00")},
		{name: "resume revision", parse: resumeErr, value: huge("1")[5:] + ":next"},
		{name: "resume action", parse: resumeErr, value: "3:" + huge("a")[2:]},
		{name: "hold-for", parse: holdForErr, value: huge("9")[1:] + "h"},
		{name: "hold-for unknown unit", parse: holdForErr, value: "1" + huge("q")[1:]},
		{name: "on-failure", parse: func(v string) error { _, err := ParseOnFailure(v, true); return err }, value: huge("r")},
		{name: "strategy type", parse: strategyErr, value: huge("R")},
		{name: "strategy field", parse: strategyErr, value: "RollingUpdate;" + huge("m")[14:]},
		{name: "strategy field key", parse: strategyErr, value: "RollingUpdate;" + huge("k")[20:] + "=x"},
		{name: "strategy number too large", parse: strategyErr, value: "RollingUpdate;maxSurge=" + huge("1")[23:]},
		{name: "strategy percent above 100", parse: strategyErr, value: "RollingUpdate;maxUnavailable=" + huge("0")[33:] + "101%"},
		{name: "status phase", parse: statusErr, value: `{"phase":"` + huge("P")[12:] + `"}`},
		{name: "status not JSON", parse: statusErr, value: huge("{")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if len(tt.value) < 249990 {
				t.Fatalf("value is %d bytes, want about 250000", len(tt.value))
			}
			err := tt.parse(tt.value)
			var invalid *InvalidValueError
			if !errors.As(err, &invalid) {
				t.Fatalf("error %v is not an *InvalidValueError", err)
			}
			msg := err.Error()
			if len(msg) >= 512 {
				t.Fatalf("error is %d bytes, want under 512: %s", len(msg), msg)
			}
			for _, want := range []string{"invalid " + invalid.Key + " ", invalid.Rule, "(" + strconv.Itoa(len(tt.value)) + " bytes)"} {
				if !strings.Contains(msg, want) {
					t.Errorf("error lacks %q: %s", want, msg)
				}
			}
		})
	}
}

func percentErr(v string) error  { _, err := ParsePercent(v); return err }
func resumeErr(v string) error   { _, err := ParseResume(v); return err }
func holdForErr(v string) error  { _, err := ParseHoldFor(v); return err }
func strategyErr(v string) error { _, err := ParseStrategy(v); return err }
func statusErr(v string) error   { _, err := ParseStatus(v); return err }

// TestCapText pins where a Detail is cut: at a rune boundary, with "...".
func TestCapText(t *testing.T) {
	tests := []struct {
		name, text string
		limit      int
		want       string
	}{
		{name: "short text whole", text: "abc", limit: 10, want: "abc"},
		{name: "cut with dots", text: "abcdefghijkl", limit: 10, want: "abcdefg..."},
		{name: "rune not split", text: "ééééé", limit: 8, want: "éé..."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := capText(tt.text, tt.limit); got != tt.want {
				t.Fatalf("capText(%q, %d) = %q, want %q", tt.text, tt.limit, got, tt.want)
			}
		})
	}
}
