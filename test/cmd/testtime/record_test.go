package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/record/*.golden")

// TestRecordQuiet pins the log of a run without -v: the package's own lines, and a test's output
// only when it failed (a failed subtest's inside its parent's) or never ended (the timeout's
// panic and the hung test's log); the events are kept byte for byte.
func TestRecordQuiet(t *testing.T) {
	for _, name := range []string{"within", "failing", "crashed"} {
		t.Run(name, func(t *testing.T) {
			in, err := os.ReadFile(filepath.Join("testdata", name+".json"))
			if err != nil {
				t.Fatal(err)
			}
			var events, log bytes.Buffer
			if err := record(bytes.NewReader(in), &events, &log, false); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(events.Bytes(), in) {
				t.Errorf("events kept differ from the events read")
			}
			golden := filepath.Join("testdata", "record", name+".golden")
			if *update {
				if err := os.WriteFile(golden, log.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if log.String() != string(want) {
				t.Errorf("log:\n%s\nwant (%s):\n%s", log.String(), golden, want)
			}
		})
	}
}

// TestRecordVerbose pins that with -v the log is every line of output, in order, as go test -v
// prints it.
func TestRecordVerbose(t *testing.T) {
	in, err := os.ReadFile(filepath.Join("testdata", "failing.json"))
	if err != nil {
		t.Fatal(err)
	}
	var want strings.Builder
	for _, line := range bytes.Split(bytes.TrimSpace(in), []byte("\n")) {
		var ev event
		if err := json.Unmarshal(line, &ev); err != nil {
			t.Fatal(err)
		}
		want.WriteString(ev.Output)
	}
	var events, log bytes.Buffer
	if err := record(bytes.NewReader(in), &events, &log, true); err != nil {
		t.Fatal(err)
	}
	if log.String() != want.String() {
		t.Errorf("log:\n%s\nwant:\n%s", log.String(), want.String())
	}
}

// TestRecordPassesOtherLines pins that a line that is not an event reaches the log as it is.
func TestRecordPassesOtherLines(t *testing.T) {
	in := "# example.com/fx\n./fx_test.go:3:1: syntax error\n"
	var events, log bytes.Buffer
	if err := record(strings.NewReader(in), &events, &log, false); err != nil {
		t.Fatal(err)
	}
	if log.String() != in || events.String() != in {
		t.Errorf("log %q, events %q, want both %q", log.String(), events.String(), in)
	}
}
