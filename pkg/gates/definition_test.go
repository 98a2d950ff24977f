package gates

import (
	"strings"
	"testing"
	"time"

	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

func TestBuiltinPods(t *testing.T) {
	d := BuiltinPods()
	if d.Interval != 30*time.Second || d.Count != 3 || d.FailureLimit != 0 || d.InconclusiveLimit != 3 {
		t.Errorf("built-in pods gate: interval %s, count %d, failureLimit %d, inconclusiveLimit %d; want 30s, 3, 0, 3",
			d.Interval, d.Count, d.FailureLimit, d.InconclusiveLimit)
	}
}

func TestParseRefusesWithTheGateAndTheField(t *testing.T) {
	for _, tc := range []struct{ name, text, want string }{
		{"url", "provider: pods\nsuccess: canary.restarts == 0\nurl: http://10.0.0.1/\n", `it contains a URL ("://")`},
		{"url in a query", "provider: prometheus\nquery: 'up{job=\"http://10.0.0.1\"}'\nsuccess: result < 1\n", `it contains a URL ("://")`},
		{"unknown field", "provider: pods\nsuccess: canary.restarts == 0\nheaders: x\n", `unknown field "headers"`},
		{"compare without a query", "provider: smoke\ncompare: true\n", "compare needs a query"},
		{"a failure without success", "provider: smoke\nfailure: result.errors > 0\n", "success is empty"},
		{"provider not a name", "provider: Prom_1\nquery: up\nsuccess: result < 1\n", `provider "Prom_1" is not a provider's name`},
		{"pods with a query", "provider: pods\nquery: up\nsuccess: true\n", "provider pods takes no query"},
		{"bad promql", "provider: prometheus\nquery: sum(rate(x[5m])\nsuccess: result < 1\n", `query "sum(rate(x[5m])": `},
		{"unknown variable", "provider: prometheus\nquery: 'x{pod=~\"$canary_pod\"}'\nsuccess: result < 1\n", "unknown variable $canary_pod: the variables are $canary_hash"},
		{"$pods without compare", "provider: prometheus\nquery: 'x{pod=~\"$pods\"}'\nsuccess: result < 1\n", "unknown variable $pods"},
		{"pods fields on a metric", "provider: prometheus\nquery: up\nsuccess: canary.restarts == 0\n", `undeclared reference to 'canary'`},
		{"an int times a double", "provider: prometheus\nquery: up\ncompare: true\nsuccess: canary <= stable * 2\n", "write 2.0, not 2"},
		{"result on a compared metric", "provider: prometheus\nquery: up\ncompare: true\nsuccess: result < 1\n", `undeclared reference to 'result'`},
		{"no success", "provider: pods\n", "success is empty"},
		{"misspelt field", "provider: pods\nsuccess: canary.restart == 0\n", `success "canary.restart == 0": ERROR`},
		{"not a bool", "provider: pods\nsuccess: canary.restarts + 1\n", "is a int, not a bool"},
		{"short interval", "provider: pods\nsuccess: true\ninterval: 100ms\n", `interval "100ms" must be a Go duration from 1s to 24h0m0s`},
		{"zero count", "provider: pods\nsuccess: true\ncount: 0\n", "count 0 must be from 1 to 100"},
		{"negative limit", "provider: pods\nsuccess: true\nfailureLimit: -1\n", "failureLimit -1 must be from 0 to 100"},
		{"bad failure", "provider: pods\nsuccess: true\nfailure: stable.x > 1\n", `failure "stable.x > 1"`},
		{"long", "provider: pods\nsuccess: " + strings.Repeat("true && ", 200) + "true\n", "characters, at most 1024 allowed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("crashes", `ConfigMap "shop/gates", key "crashes"`, tc.text)
			if err == nil {
				t.Fatalf("Parse accepted %q", tc.text)
			}
			if !strings.HasPrefix(err.Error(), `gate "crashes" (ConfigMap "shop/gates", key "crashes"): `) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not name the gate, its source and %q", err, tc.want)
			}
		})
	}
}

func TestParseReadsEveryField(t *testing.T) {
	d, err := Parse("restarts", "built in", "provider: pods\nsuccess: canary.restarts <= 2\nfailure: canary.restarts > 5\n"+
		"interval: 2s\ncount: 4\nfailureLimit: 1\ninconclusiveLimit: 0\n")
	if err != nil {
		t.Fatal(err)
	}
	if d.Interval != 2*time.Second || d.Count != 4 || d.FailureLimit != 1 || d.InconclusiveLimit != 0 ||
		d.Success != "canary.restarts <= 2" || d.Failure != "canary.restarts > 5" {
		t.Errorf("parsed %+v", d)
	}
}

// TestJudge keeps the five outcomes apart: the rows are measurements, the outcomes written by
// hand from the conditions.
func TestJudge(t *testing.T) {
	withFailure, err := Parse("restarts", "built in", "provider: pods\nsuccess: canary.restarts <= 2\nfailure: canary.restarts > 5\n")
	if err != nil {
		t.Fatal(err)
	}
	// 1 / (restarts - 3) divides by zero at 3 restarts: an evaluation error.
	erring, err := Parse("odd", "built in", "provider: pods\nsuccess: 1 / (canary.restarts - 3) >= 0\n")
	if err != nil {
		t.Fatal(err)
	}
	quiet := PodsStats{Pods: 9}
	for _, tc := range []struct {
		name   string
		def    *Definition
		canary PodsStats
		want   grayapi.GateOutcome
		stable *PodsStats
	}{
		{"builtin, quiet canary", BuiltinPods(), PodsStats{Pods: 1}, grayapi.GatePass, nil},
		{"builtin, restarts above stable's", BuiltinPods(), PodsStats{Pods: 1, Restarts: 1, RestartsPerPod: 1}, grayapi.GateFail, nil},
		{"builtin, restarts like stable's", BuiltinPods(), PodsStats{Pods: 1, Restarts: 1, RestartsPerPod: 1}, grayapi.GatePass,
			&PodsStats{Pods: 9, Restarts: 9, RestartsPerPod: 1}},
		{"builtin, an OOMKill", BuiltinPods(), PodsStats{Pods: 2, OOMKills: 1}, grayapi.GateFail, nil},
		{"builtin, crash loop", BuiltinPods(), PodsStats{Pods: 2, CrashLooping: 1}, grayapi.GateFail, nil},
		{"builtin, no canary pods", BuiltinPods(), PodsStats{}, grayapi.GateNoData, nil},
		{"failure: pass", withFailure, PodsStats{Pods: 1, Restarts: 2}, grayapi.GatePass, nil},
		{"failure: neither", withFailure, PodsStats{Pods: 1, Restarts: 4}, grayapi.GateInconclusive, nil},
		{"failure: fail", withFailure, PodsStats{Pods: 1, Restarts: 6}, grayapi.GateFail, nil},
		{"evaluation error", erring, PodsStats{Pods: 1, Restarts: 3}, grayapi.GateError, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stable := quiet
			if tc.stable != nil {
				stable = *tc.stable
			}
			got, value, why := tc.def.Judge(tc.canary, stable)
			if got != tc.want {
				t.Errorf("outcome %s (%s; %s), want %s", got, value, why, tc.want)
			}
		})
	}
}

// TestCountPods counts inside the window only: restarts above the baseline, an OOMKill and a
// readiness change after it opened.
func TestCountPods(t *testing.T) {
	opened := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	before, after := opened.Add(-time.Minute), opened.Add(time.Minute)
	pods := []Pod{
		{Restarts: 2, LastOOMKill: before, Ready: true, ReadyChanged: before},
		{Restarts: 5, LastOOMKill: after, Ready: false, ReadyChanged: after, CrashLooping: true},
		{Failed: true},
	}
	got := CountPods(pods, opened, 4)
	want := PodsStats{Pods: 3, Restarts: 3, RestartsPerPod: 1, OOMKills: 1, CrashLooping: 1, ReadinessFlaps: 1, NotReady: 2, FailedPods: 1}
	if got != want {
		t.Errorf("CountPods = %+v, want %+v", got, want)
	}
	if got := CountPods(pods[:1], opened, 9); got.Restarts != 0 {
		t.Errorf("a baseline above today's restarts (a pod deleted since) counts %d restarts, want 0", got.Restarts)
	}
}

// TestConditionCostLimit: a condition within the length limit whose evaluation is too costly
// stops with an error (an Error outcome), not a stalled sync.
func TestConditionCostLimit(t *testing.T) {
	// Three nested comprehensions over 100-element lists: 100^3 steps, far past the limit.
	list := "[" + strings.Repeat("1,", 99) + "1]"
	expensive := list + ".all(a, " + list + ".all(b, " + list + ".all(c, a + b + c > canary.restarts)))"
	d, err := Parse("costly", "test", "provider: pods\nsuccess: |\n  "+expensive+"\n")
	if err != nil {
		t.Fatalf("Parse refused a condition within the length limit: %v", err)
	}
	outcome, _, why := d.Judge(PodsStats{Pods: 1}, PodsStats{Pods: 1})
	if outcome != grayapi.GateError || !strings.Contains(why, "cost") {
		t.Errorf("a too costly condition gave %s (%s), want Error naming the cost limit", outcome, why)
	}
}
