package grayapi

import (
	"fmt"
	"strconv"
	"unicode/utf8"
)

// Annotation values are written by people and tools, up to the API server's
// 256 KiB for all of a Deployment's annotations. Messages that quote them go
// into events, kubegray.io/status and terminals, so every quote of a value
// is capped: a pasted-by-mistake blob must not become a message as long as
// itself.
const (
	// MaxQuotedValue bounds QuoteValue's result: the quoted, escaped prefix
	// of the value and the note of its full length.
	MaxQuotedValue = 120
	// maxQuotedToken bounds the quote of one part of a value (a hold point,
	// a field) inside an error's Detail.
	maxQuotedToken = 40
	// maxDetail bounds an InvalidValueError's Detail, whatever built it (a
	// parser's own words, or a standard library error that quotes the whole
	// value, like time.ParseDuration's).
	maxDetail = 160
)

// QuoteValue quotes s like %q when the quoted form fits in MaxQuotedValue
// bytes; otherwise it quotes the longest prefix that fits, whole runes and
// escapes only, and says how long s is:
//
//	"10,30"         → "10,30"
//	"x" × 500       → "xx…x..." (500 bytes)          (103 x's: 120 bytes in all)
//	"\x00" × 500    → "\x00\x00…\x00..." (500 bytes)  (25 escapes, never half of one)
func QuoteValue(s string) string {
	return quoteCapped(s, MaxQuotedValue)
}

// quoteToken is QuoteValue for one part of a value, quoted in a Detail.
func quoteToken(s string) string {
	return quoteCapped(s, maxQuotedToken)
}

// quoteCapped quotes s in at most limit bytes (limit ≥ 32, so the length note
// always fits). Escapes are never split: each rune (or invalid byte) is quoted
// on its own and kept whole or dropped.
func quoteCapped(s string, limit int) string {
	if q := strconv.Quote(s); len(q) <= limit {
		return q
	}
	note := fmt.Sprintf(`..." (%d bytes)`, len(s))
	budget := limit - 1 - len(note) // the opening quote and the note
	out := make([]byte, 0, limit)
	out = append(out, '"')
	for i := 0; i < len(s); {
		_, size := utf8.DecodeRuneInString(s[i:])
		piece := strconv.Quote(s[i : i+size])
		piece = piece[1 : len(piece)-1]
		if len(out)-1+len(piece) > budget {
			break
		}
		out = append(out, piece...)
		i += size
	}
	return string(append(out, note...))
}

// capText cuts text to at most limit bytes at a rune boundary, ending it in
// "..." when it cuts.
func capText(text string, limit int) string {
	if len(text) <= limit {
		return text
	}
	cut := limit - len("...")
	for cut > 0 && !utf8.RuneStart(text[cut]) {
		cut--
	}
	return text[:cut] + "..."
}
