package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheck pins the budget check: it passes when every top-level test is within its budget
// (its own, or the default; subtests and skipped tests have none), and fails naming the test,
// its time and its budget when one is over, and naming the step when a step's events hold no
// test result, or when there is no step at all.
func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name  string
		steps []string // testdata/<step>.json
		// wantErr lists what the error must say; none means the check must pass.
		wantErr []string
	}{
		{name: "within their budgets", steps: []string{"within"}},
		{name: "a failed test within its budget", steps: []string{"failing"}},
		{name: "a test over the default", steps: []string{"within", "over"},
			wantErr: []string{"over: TestQuick took 612.8 s, over its budget of 600 s"}},
		{name: "a parent whose subtests ran in parallel, timed from its start to its end", steps: []string{"parallel-parent"},
			wantErr: []string{"parallel-parent: TestScenarios took 950.0 s, over its budget of 900 s"}},
		{name: "an empty step", steps: []string{"within", "empty"},
			wantErr: []string{"empty: no test passed or failed"}},
		{name: "a step whose package ran no test", steps: []string{"no-tests"},
			wantErr: []string{"no-tests: no test passed or failed"}},
		{name: "no step", wantErr: []string{"no test results at all"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := readBudgetFile(filepath.Join("testdata", "budgets.tsv"))
			if err != nil {
				t.Fatal(err)
			}
			events := map[string]io.Reader{}
			for _, step := range tc.steps {
				f, err := os.Open(filepath.Join("testdata", step+".json"))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = f.Close() })
				events[step] = f
			}
			var out strings.Builder
			err = check(b, tc.steps, events, "budgets.tsv", &out)
			if len(tc.wantErr) == 0 {
				if err != nil {
					t.Fatalf("check failed: %v\n%s", err, out.String())
				}
				return
			}
			if err == nil {
				t.Fatalf("check passed, want an error saying %q\n%s", tc.wantErr, out.String())
			}
			for _, want := range tc.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
		})
	}
}

// TestCheckTable pins the table the check prints: every top-level test run, slowest first, with
// its budget, an over-budget one marked.
func TestCheckTable(t *testing.T) {
	b, err := readBudgetFile(filepath.Join("testdata", "budgets.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join("testdata", "over.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	var out strings.Builder
	_ = check(b, []string{"test-e2e"}, map[string]io.Reader{"test-e2e": f}, "budgets.tsv", &out)
	want := `Top-level test times against their budgets (budgets.tsv):
  seconds  budget  step                 test
    850.5     900  test-e2e             TestScenarios
    612.8     600  test-e2e             TestQuick  OVER BUDGET
`
	if out.String() != want {
		t.Errorf("table:\n%s\nwant:\n%s", out.String(), want)
	}
}

// TestReadBudgets pins the budget file: a name and seconds per line, comments and blank lines
// skipped, a default required, no name twice.
func TestReadBudgets(t *testing.T) {
	b, err := readBudgets(strings.NewReader("# budgets\n\ndefault 600\nTestSlow\t1200\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := b.of("TestSlow"); got != 1200 {
		t.Errorf("TestSlow's budget %v, want 1200", got)
	}
	if got := b.of("TestOther"); got != 600 {
		t.Errorf("TestOther's budget %v, want the default 600", got)
	}
	for _, bad := range []string{
		"TestSlow 1200\n",                 // no default
		"default 600\nTestSlow\n",         // no seconds
		"default 600\nTestSlow 20m\n",     // not seconds
		"default 600\nTestSlow -1\n",      // not a budget
		"default 600\ndefault 700\n",      // twice
		"default 600\nTestA 1\nTestA 2\n", // twice
	} {
		if _, err := readBudgets(strings.NewReader(bad)); err == nil {
			t.Errorf("readBudgets(%q) passed, want an error", bad)
		}
	}
}
