package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// What a failure summary shows of each failed test: its last lines, where the failure is.
// CI keeps only the tail of a long log, so the summary is printed last and kept short.
const (
	linesPerFailure = 6
	failuresShown   = 4
)

func runFailures(args []string, out io.Writer) error {
	if len(args) == 0 {
		return errors.New("usage: testtime failures FILE [FILE...]")
	}
	for _, name := range args {
		f, err := os.Open(name)
		if err != nil {
			return err
		}
		fs, err := readFailures(f)
		_ = f.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		writeFailures(out, strings.TrimSuffix(filepath.Base(name), ".json"), fs)
	}
	return nil
}

// failure is a test, or a package with no failed test (its binary crashed or timed out),
// that failed, and the lines it printed.
type failure struct {
	pkg, test string
	lines     []string
	// crashed: the test never ended; its lines end with the panic that explains why.
	crashed bool
}

// readFailures returns the failed tests that have no failed subtest, in the order they ended;
// when a package fails, the tests it was still running that have no running subtest (its binary
// crashed or timed out in them), or the package itself when no test of it failed. The lines kept
// are what each printed, without go test's framing and verdict lines, and without a crash's
// goroutine dump.
func readFailures(r io.Reader) ([]failure, error) {
	output := map[testKey][]string{}
	running := map[testKey]bool{}
	parentOfFailed := map[testKey]bool{}
	var failed []failure
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var ev event
		if json.Unmarshal(sc.Bytes(), &ev) != nil {
			continue
		}
		k := testKey{ev.Package, ev.Test}
		switch {
		case ev.Action == actionRun:
			running[k] = true
		case ev.Action == "output":
			if !framing(ev.Output) && !strings.HasPrefix(strings.TrimSpace(ev.Output), "--- ") {
				output[k] = append(output[k], strings.TrimRight(ev.Output, "\n"))
			}
		case ev.Action == actionFail && ev.Test == "":
			n := len(failed)
			for _, t := range sortedKeys(running) {
				if t.pkg == ev.Package && !hasRunningSubtest(running, t) {
					failed = append(failed, failure{pkg: t.pkg, test: t.test + " (never ended)", lines: beforeDump(output[t]), crashed: true})
				}
			}
			if len(failed) == n && !anyFailedIn(failed, ev.Package) {
				failed = append(failed, failure{pkg: ev.Package, lines: output[k]})
			}
		case ends(ev.Action):
			delete(running, k)
			if i := strings.LastIndexByte(ev.Test, '/'); i >= 0 {
				parentOfFailed[testKey{ev.Package, ev.Test[:i]}] = ev.Action == actionFail || parentOfFailed[testKey{ev.Package, ev.Test[:i]}]
			}
			if ev.Action == actionFail && !parentOfFailed[k] {
				failed = append(failed, failure{pkg: ev.Package, test: ev.Test, lines: output[k]})
			}
		}
	}
	return failed, sc.Err()
}

func sortedKeys(m map[testKey]bool) []testKey {
	keys := make([]testKey, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].test < keys[j].test })
	return keys
}

func hasRunningSubtest(running map[testKey]bool, t testKey) bool {
	for r := range running {
		if r.pkg == t.pkg && strings.HasPrefix(r.test, t.test+"/") {
			return true
		}
	}
	return false
}

// beforeDump cuts a crashed test's lines at the goroutine dump: what explains the crash (the
// test's log, the panic and the tests it names) comes before.
func beforeDump(lines []string) []string {
	for i, l := range lines {
		if strings.HasPrefix(l, "goroutine ") {
			return lines[:i]
		}
	}
	return lines
}

func anyFailedIn(fs []failure, pkg string) bool {
	for _, f := range fs {
		if f.pkg == pkg {
			return true
		}
	}
	return false
}

// writeFailures names every failure of a step and shows the last lines of the first few: the last
// lines the test logged itself when it logged any, else its last lines.
func writeFailures(out io.Writer, step string, fs []failure) {
	for i, f := range fs {
		name := f.test
		if name == "" {
			name = "(the package failed outside any test)"
		}
		fmt.Fprintf(out, "%s: FAIL %s (%s)\n", step, name, f.pkg)
		if i >= failuresShown {
			continue
		}
		lines := nonBlank(f.lines)
		if own := logged(f.lines); len(own) > 0 && !f.crashed {
			lines = own
		}
		if len(lines) > linesPerFailure {
			lines = lines[len(lines)-linesPerFailure:]
		}
		for _, l := range lines {
			fmt.Fprintf(out, "    | %s\n", strings.TrimSpace(l))
		}
	}
}

// testLogLine matches the first line of a t.Log or t.Error: "    name_test.go:42: message" (or
// the helper's file the test's t.Helper chain stops at).
var testLogLine = regexp.MustCompile(`^\s*[\w.-]+\.go:\d+: `)

// logged keeps the lines a test logged itself (t.Log, t.Error, t.Fatal), first lines only: a failed
// e2e test prints its components' logs after its own, and the failure is in its own.
func logged(lines []string) []string {
	var kept []string
	for _, l := range lines {
		if testLogLine.MatchString(l) {
			kept = append(kept, l)
		}
	}
	return kept
}

func nonBlank(lines []string) []string {
	var kept []string
	for _, l := range lines {
		if strings.TrimSpace(l) != "" {
			kept = append(kept, l)
		}
	}
	return kept
}
