package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFailures pins the summary of each kind of failure, written out by hand from the events:
// a failed subtest (its parent is not named again), a test its binary timed out in (its log
// and the panic, not the goroutine dump), a package that failed outside any test, and a run
// that passed (nothing printed).
func TestFailures(t *testing.T) {
	buildFailed := strings.Join([]string{
		`{"Action":"start","Package":"example.com/broken"}`,
		`{"Action":"output","Package":"example.com/broken","Output":"# example.com/broken\n"}`,
		`{"Action":"output","Package":"example.com/broken","Output":"broken.go:3:1: syntax error\n"}`,
		`{"Action":"output","Package":"example.com/broken","Output":"FAIL\texample.com/broken [build failed]\n"}`,
		`{"Action":"fail","Package":"example.com/broken"}`,
	}, "\n")
	for _, tc := range []struct {
		name, events, want string
	}{
		{"failing", "", "failing: FAIL TestScenarios/bad (example.com/fx)\n" +
			"    | fx_test.go:12: bad logs this\n" +
			"    | fx_test.go:12: bad fails\n"},
		{"crashed", "", "crashed: FAIL TestHang (never ended) (example.com/fx)\n" +
			"    | hang_test.go:9: waiting for a rollout that never comes\n" +
			"    | panic: test timed out after 2s\n" +
			"    | running tests:\n" +
			"    | TestHang (2s)\n"},
		{"broken", buildFailed, "broken: FAIL (the package failed outside any test) (example.com/broken)\n" +
			"    | # example.com/broken\n" +
			"    | broken.go:3:1: syntax error\n" +
			"    | FAIL\texample.com/broken [build failed]\n"},
		{"within", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join("testdata", tc.name+".json")
			if tc.events != "" {
				file = filepath.Join(t.TempDir(), tc.name+".json")
				if err := os.WriteFile(file, []byte(tc.events), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			var out bytes.Buffer
			if err := runFailures([]string{file}, &out); err != nil {
				t.Fatal(err)
			}
			if out.String() != tc.want {
				t.Errorf("got\n%s\nwant\n%s", out.String(), tc.want)
			}
		})
	}
}

// TestFailuresShowsTheLastLines holds the summary short: a test that logged many lines shows
// its last six, and only the first four failures show lines at all.
func TestFailuresShowsTheLastLines(t *testing.T) {
	var events []string
	for i := 1; i <= 5; i++ {
		test := "TestMany" + string(rune('0'+i))
		for l := 1; l <= 8; l++ {
			events = append(events, `{"Action":"output","Package":"p","Test":"`+test+`","Output":"line `+string(rune('0'+l))+`\n"}`)
		}
		events = append(events, `{"Action":"fail","Package":"p","Test":"`+test+`"}`)
	}
	file := filepath.Join(t.TempDir(), "many.json")
	if err := os.WriteFile(file, []byte(strings.Join(events, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := runFailures([]string{file}, &out); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	want := "many: FAIL TestMany1 (p)\n    | line 3\n    | line 4\n    | line 5\n    | line 6\n    | line 7\n    | line 8\n"
	if !strings.HasPrefix(got, want) {
		t.Errorf("the first failure shows\n%s\nwant its last six lines:\n%s", got, want)
	}
	if !strings.HasSuffix(got, "    | line 8\nmany: FAIL TestMany5 (p)\n") {
		t.Errorf("the fifth failure is named without lines; got\n%s", got)
	}
	if n := strings.Count(got, "    | "); n != 4*6 {
		t.Errorf("%d lines shown, want 4 failures x 6 lines", n)
	}
}

// TestFailuresShowsTheTestsOwnLines: a failed e2e test prints its components' logs after its own
// lines; the summary shows the lines the test logged (the t.Error among them), not that noise.
func TestFailuresShowsTheTestsOwnLines(t *testing.T) {
	events := strings.Join([]string{
		`{"Action":"output","Package":"p","Test":"TestInstall","Output":"    helm_test.go:161: control plane ready\n"}`,
		`{"Action":"output","Package":"p","Test":"TestInstall","Output":"    helm_test.go:182: env POD_NAME: a source this test does not resolve\n"}`,
		`{"Action":"output","Package":"p","Test":"TestInstall","Output":"    testing.go:20: component logs:\n"}`,
		`{"Action":"output","Package":"p","Test":"TestInstall","Output":"        ----- kwok (last 40 lines) -----\n"}`,
		`{"Action":"output","Package":"p","Test":"TestInstall","Output":"        {\"msg\":\"Patch node\"}\n"}`,
		`{"Action":"fail","Package":"p","Test":"TestInstall"}`,
	}, "\n")
	file := filepath.Join(t.TempDir(), "e2e.json")
	if err := os.WriteFile(file, []byte(events), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := runFailures([]string{file}, &out); err != nil {
		t.Fatal(err)
	}
	want := "e2e: FAIL TestInstall (p)\n" +
		"    | helm_test.go:161: control plane ready\n" +
		"    | helm_test.go:182: env POD_NAME: a source this test does not resolve\n" +
		"    | testing.go:20: component logs:\n"
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
}
