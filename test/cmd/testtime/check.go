package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

func runCheck(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	budgetFile := fs.String("budgets", "", "file of test budgets in seconds")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *budgetFile == "" || fs.NArg() == 0 {
		return errors.New("usage: testtime check -budgets BUDGETS FILE [FILE...]")
	}
	b, err := readBudgetFile(*budgetFile)
	if err != nil {
		return err
	}
	steps := map[string]io.Reader{}
	var names []string
	for _, name := range fs.Args() {
		f, err := os.Open(name)
		if err != nil {
			return err
		}
		defer func() { _ = f.Close() }()
		step := strings.TrimSuffix(filepath.Base(name), ".json")
		if _, dup := steps[step]; dup {
			return fmt.Errorf("%s: a second file for step %s", name, step)
		}
		steps[step] = f
		names = append(names, step)
	}
	return check(b, names, steps, *budgetFile, out)
}

// budgets are the seconds a top-level test may take: its own, or the default.
type budgets struct {
	byTest   map[string]float64
	fallback float64
}

func (b budgets) of(test string) float64 {
	if s, ok := b.byTest[test]; ok {
		return s
	}
	return b.fallback
}

func readBudgetFile(name string) (budgets, error) {
	f, err := os.Open(name)
	if err != nil {
		return budgets{}, err
	}
	defer func() { _ = f.Close() }()
	b, err := readBudgets(f)
	if err != nil {
		return budgets{}, fmt.Errorf("%s: %w", name, err)
	}
	return b, nil
}

// readBudgets reads lines of a test name and its seconds, the name "default" standing for
// every test without a line of its own; blank lines and # comments are skipped. The default is
// required, so that every test has a budget.
func readBudgets(r io.Reader) (budgets, error) {
	b := budgets{byTest: map[string]float64{}}
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) != 2 {
			return budgets{}, fmt.Errorf("line %d: want a test name and seconds, got %q", n, line)
		}
		s, err := strconv.ParseFloat(fields[1], 64)
		if err != nil || s <= 0 {
			return budgets{}, fmt.Errorf("line %d: %q is not a number of seconds", n, fields[1])
		}
		if _, dup := b.byTest[fields[0]]; dup || (fields[0] == "default" && b.fallback != 0) {
			return budgets{}, fmt.Errorf("line %d: a second budget for %s", n, fields[0])
		}
		if fields[0] == "default" {
			b.fallback = s
		} else {
			b.byTest[fields[0]] = s
		}
	}
	if err := sc.Err(); err != nil {
		return budgets{}, err
	}
	if b.fallback == 0 {
		return budgets{}, errors.New(`no "default" budget`)
	}
	return b, nil
}

// result is how long a top-level test took in one step.
type result struct {
	step, test string
	seconds    float64
}

// readResults returns the top-level tests that passed or failed in a stream of go test -json
// events. Skipped tests take no time worth a budget; lines that are not JSON are skipped.
// A test's time is from its run event to its end, when both carry one: go test's Elapsed
// leaves out the subtests that call t.Parallel, which run after their parent's function has
// returned (TestGrayRandomized reported 0.0 s while it held its package for 210 s).
func readResults(step string, r io.Reader) ([]result, error) {
	var rs []result
	started := map[string]time.Time{}
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var ev event
		if json.Unmarshal(sc.Bytes(), &ev) != nil || ev.Test == "" || strings.Contains(ev.Test, "/") {
			continue
		}
		if ev.Action == actionRun {
			started[ev.Package+" "+ev.Test] = ev.Time
		}
		if ev.Action != actionPass && ev.Action != actionFail {
			continue
		}
		seconds := ev.Elapsed
		if start, ok := started[ev.Package+" "+ev.Test]; ok && !start.IsZero() && !ev.Time.IsZero() {
			seconds = max(seconds, ev.Time.Sub(start).Seconds())
		}
		rs = append(rs, result{step: step, test: ev.Test, seconds: seconds})
	}
	return rs, sc.Err()
}

// check prints every top-level test's time against its budget, slowest first, and fails
// naming each test over its budget, and each step whose events hold no test result at all:
// a step that ran no test proves nothing, and a check that saw nothing must not pass.
func check(b budgets, steps []string, events map[string]io.Reader, budgetFile string, out io.Writer) error {
	var all []result
	var problems []string
	for _, step := range steps {
		rs, err := readResults(step, events[step])
		if err != nil {
			return fmt.Errorf("%s: %w", step, err)
		}
		if len(rs) == 0 {
			problems = append(problems, fmt.Sprintf("%s: no test passed or failed: its go test -json events hold no test result", step))
		}
		all = append(all, rs...)
	}
	if len(steps) == 0 {
		problems = append(problems, "no step's events: no test results at all")
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].seconds > all[j].seconds })

	fmt.Fprintf(out, "Top-level test times against their budgets (%s):\n", budgetFile)
	fmt.Fprintf(out, "%9s %7s  %-20s %s\n", "seconds", "budget", "step", "test")
	for _, r := range all {
		budget := b.of(r.test)
		mark := ""
		if r.seconds > budget {
			mark = "  OVER BUDGET"
			problems = append(problems, fmt.Sprintf("%s: %s took %.1f s, over its budget of %.0f s", r.step, r.test, r.seconds, budget))
		}
		fmt.Fprintf(out, "%9.1f %7.0f  %-20s %s%s\n", r.seconds, budget, r.step, r.test, mark)
	}
	if len(problems) > 0 {
		return fmt.Errorf("test budget check failed (budgets in %s):\n  %s", budgetFile, strings.Join(problems, "\n  "))
	}
	fmt.Fprintf(out, "all %d top-level test runs within their budgets\n", len(all))
	return nil
}
