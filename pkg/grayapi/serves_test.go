package grayapi

import (
	"testing"
)

func TestServesOf(t *testing.T) {
	got := ServesOf(func(r Request) bool { return r == RequestUnpause || r == RequestNext || r == RequestUndo })
	if want := "next, undo, unpause"; got.String() != want {
		t.Fatalf("ServesOf = %q, want %q (the order of Requests, whatever the order asked)", got, want)
	}
	if !got.Has(RequestUndo) || got.Has(RequestAbort) {
		t.Fatalf("Has: undo %t, abort %t; want true, false", got.Has(RequestUndo), got.Has(RequestAbort))
	}
	if none := ServesOf(func(Request) bool { return false }); none.String() != "nothing" {
		t.Fatalf("ServesOf(none) = %q, want nothing", none)
	}
}

// A status read from before the field existed serves nothing, and one written serves [] when it
// serves nothing: never null, which a prefix match could not tell from a missing field.
func TestServesInTheStatusJSON(t *testing.T) {
	st, err := ParseStatus(`{"mode":"instead","revision":2,"stableRevision":1,"step":0,"percent":10,"target":1,"phase":"Held","observedGeneration":4}`)
	if err != nil || len(st.Serves) != 0 {
		t.Fatalf("ParseStatus of a status without serves = %v, %v; want none, nil", st.Serves, err)
	}
	value, err := FormatStatus(Status{Phase: PhaseProgressing, ObservedGeneration: 3})
	if want := `{"serves":[],"observedGeneration":3,`; err != nil || len(value) < len(want) || value[:len(want)] != want {
		t.Fatalf("FormatStatus = %s, %v; want it to start %s", value, err, want)
	}
	if _, err := ParseStatus(`{"serves":["next","retry","full"],"phase":"Held"}`); err == nil {
		t.Fatalf("ParseStatus accepted serves out of order")
	}
}
