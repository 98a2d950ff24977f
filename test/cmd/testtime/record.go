package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
)

func runRecord(args []string, in io.Reader, out io.Writer) error {
	fs := flag.NewFlagSet("record", flag.ContinueOnError)
	file := fs.String("o", "", "file to keep the JSON events in")
	verbose := fs.Bool("v", false, "print every line, as go test -v")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *file == "" || fs.NArg() != 0 {
		return errors.New("usage: testtime record -o FILE [-v] < go-test-json")
	}
	if err := os.MkdirAll(filepath.Dir(*file), 0o755); err != nil {
		return err
	}
	f, err := os.Create(*file)
	if err != nil {
		return err
	}
	err = record(in, f, out, *verbose)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// record copies the `go test -json` stream in to events, line for line, and writes to log what
// go test prints without -json: a package's own lines as they come, a test's output only when
// it fails (a failed subtest's inside its parent's), nothing when it passes or is skipped. The
// output of a test that never ended (its binary crashed or timed out) is written when its
// package ends, or at the end of the stream: it is what explains the crash. With verbose, every
// line is written as it comes, as go test -v prints it. Lines that are not JSON are written as
// they are.
func record(in io.Reader, events, log io.Writer, verbose bool) error {
	r := bufio.NewReader(in)
	q := &quietLog{w: log, held: map[testKey][]string{}}
	for {
		line, readErr := r.ReadBytes('\n')
		if len(line) > 0 {
			if _, err := events.Write(line); err != nil {
				return err
			}
			var ev event
			var err error
			switch {
			case json.Unmarshal(line, &ev) != nil:
				_, err = log.Write(line)
			case verbose:
				_, err = io.WriteString(log, ev.Output)
			default:
				err = q.add(ev)
			}
			if err != nil {
				return err
			}
		}
		if errors.Is(readErr, io.EOF) {
			return q.flush(func(testKey) bool { return true })
		}
		if readErr != nil {
			return readErr
		}
	}
}

type testKey struct{ pkg, test string }

// quietLog holds each running test's output until the test ends.
type quietLog struct {
	w     io.Writer
	held  map[testKey][]string
	order []testKey // held's keys in the order their output began
}

func (q *quietLog) add(ev event) error {
	if ev.Test == "" {
		// A test still held when its package ends never ended: its output goes before the
		// package's verdict, as go test prints a crash.
		if ends(ev.Action) || verdict(ev.Output) {
			if err := q.flush(func(k testKey) bool { return k.pkg == ev.Package }); err != nil {
				return err
			}
		}
		_, err := io.WriteString(q.w, ev.Output)
		return err
	}
	k := testKey{ev.Package, ev.Test}
	switch ev.Action {
	case "output":
		if !framing(ev.Output) {
			q.hold(k, ev.Output)
		}
	case actionPass, actionSkip:
		delete(q.held, k)
	case actionFail:
		out := q.held[k]
		delete(q.held, k)
		if i := strings.LastIndexByte(ev.Test, '/'); i >= 0 {
			q.hold(testKey{ev.Package, ev.Test[:i]}, out...)
			return nil
		}
		return q.write(out)
	}
	return nil
}

func (q *quietLog) hold(k testKey, lines ...string) {
	if _, ok := q.held[k]; !ok {
		q.order = append(q.order, k)
	}
	q.held[k] = append(q.held[k], lines...)
}

// flush writes and forgets the output of the held tests that match.
func (q *quietLog) flush(match func(testKey) bool) error {
	var rest []testKey
	for _, k := range q.order {
		out, ok := q.held[k]
		if !ok {
			continue
		}
		if !match(k) {
			rest = append(rest, k)
			continue
		}
		delete(q.held, k)
		if err := q.write(out); err != nil {
			return err
		}
	}
	q.order = rest
	return nil
}

func (q *quietLog) write(lines []string) error {
	for _, l := range lines {
		if _, err := io.WriteString(q.w, l); err != nil {
			return err
		}
	}
	return nil
}

// verdict tells the lines that end a package's output: the test binary's PASS or FAIL, and go
// test's line for the package.
func verdict(line string) bool {
	return line == "PASS\n" || line == "FAIL\n" || strings.HasPrefix(line, "ok  \t") || strings.HasPrefix(line, "FAIL\t")
}

// framing tells the lines go test -v adds to say which test runs (go test without -v has none).
func framing(line string) bool {
	for _, p := range []string{"=== RUN ", "=== PAUSE ", "=== CONT ", "=== NAME "} {
		if strings.HasPrefix(line, p) {
			return true
		}
	}
	return false
}
