package gates

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// definitionJSON writes a definition as JSON (which YAML reads), so that a row's query or
// condition needs no YAML quoting.
func definitionJSON(t *testing.T, fields map[string]any) string {
	t.Helper()
	text, err := json.Marshal(fields)
	if err != nil {
		t.Fatal(err)
	}
	return string(text)
}

// TestHostileQueries: queries a tenant could write to read another namespace's series, to cost
// the controller, or to slip a variable where it is not substituted; each row's outcome (refused
// at load with the message's words, or the query as it runs in namespace shop) is written by hand.
func TestHostileQueries(t *testing.T) {
	for _, tc := range []struct {
		name, query string
		compare     bool
		refused     string
		runs        string
	}{
		{name: "names the scope label", query: `sum(up{namespace="bank"})`, refused: "names the label namespace"},
		{name: "matches the scope label by regex", query: `sum(up{namespace=~"bank|shop"})`, refused: "names the label namespace"},
		{name: "a selector by name only", query: `sum({__name__="up"})`, runs: `sum({__name__="up",namespace="shop"})`},
		{name: "a comment hiding a selector", query: "sum(up{pod=~\"$canary_pods\"}) # or up{namespace=\"bank\"}",
			runs: `sum(up{namespace="shop",pod=~"web[.]v2-7d9f8c-[a-z0-9]{5}"})`},
		{name: "an or with a selector-free vector", query: `sum(up) or on () vector(1)`, runs: `sum(up{namespace="shop"}) or on () vector(1)`},
		{name: "a subquery over $window", query: `max_over_time(sum(up)[$window:$window])`, runs: `max_over_time(sum(up{namespace="shop"})[1m35s:1m35s])`},
		{name: "a variable as a string argument", query: `count_values("$deployment", up)`, runs: `count_values("web.v2", up{namespace="shop"})`},
		{name: "40 nested parentheses", query: strings.Repeat("(", 40) + "up" + strings.Repeat(")", 40), refused: "brackets nest more than 16 deep"},
		{name: "a long chain of additions", query: "up" + strings.Repeat(" + up", 30), refused: "nests 31 deep, at most 16 allowed"},
		{name: "a 3 KB query", query: `up{job="` + strings.Repeat("x", 3000) + `"}`, refused: "bytes, at most 2048 allowed"},
		{name: "a variable outside a string", query: `sum by ($deployment) (up)`, refused: "$deployment stands outside a string"},
		{name: "a variable as a label name", query: `up{"$namespace"="x"}`, refused: "a variable stands in a label's value, not its name"},
		{name: "a variable as a grouping label", query: `sum by ("$namespace") (up)`, refused: "not in a label name or a grouping"},
		{name: "$window in duration arithmetic", query: `rate(up[$window * 2])`, refused: "$window stands alone"},
		{name: "the window's stand-in written out", query: `rate(up[7777777])`, refused: "a duration of 7777777s is reserved"},
		{name: "an unknown variable", query: `up{token="$token"}`, refused: "unknown variable $token"},
		{name: "a URL in a string", query: `label_replace(up, "a", "http://evil.example", "b", "")`, refused: `it contains a URL`},
		{name: "$hash without compare", query: `up{pod_template_hash="$hash"}`, refused: "unknown variable $hash"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fields := map[string]any{"provider": "prometheus", "query": tc.query, "success": "result < 1.0"}
			if tc.compare {
				fields["compare"], fields["success"] = true, "canary <= stable"
			}
			d, err := Parse("hostile", "test", definitionJSON(t, fields))
			if err == nil {
				err = d.CheckScope("namespace")
			}
			if !checkLoad(t, err, tc.refused) {
				return
			}
			got, err := d.Render(shopVars, "", "namespace")
			if err != nil || got != tc.runs {
				t.Errorf("runs\n%s (%v)\nwant\n%s", got, err, tc.runs)
			}
		})
	}
}

// TestHostileConditions: conditions and webhook answers that would cost the controller CPU or
// memory, or confuse the judging; each outcome is written by hand.
func TestHostileConditions(t *testing.T) {
	list := func(n int) string { return "[" + strings.TrimSuffix(strings.Repeat("1,", n), ",") + "]" }
	for _, tc := range []struct {
		name, condition string
		answer          string
		refused         string
		want            grayapi.GateOutcome
		why             string
	}{
		{name: "a condition over 1,024 characters", condition: "result.a == 1" + strings.Repeat(" || result.a == 1", 60), refused: "at most 1024 allowed"},
		{name: "not a bool", condition: "result", refused: "not a bool"},
		{name: "the answer itself, compared", condition: "result == result", answer: `{"a": 1}`, want: grayapi.GatePass},
		{name: "a million iterations", condition: "result.l.all(x, result.l.all(y, x == y))", answer: `{"l": ` + list(1000) + `}`,
			want: grayapi.GateError, why: "cost limit exceeded"},
		{name: "concatenation of a 60 KB string", condition: "size(result.s" + strings.Repeat(" + result.s", 80) + ") > 0",
			answer: `{"s": "` + strings.Repeat("x", 60000) + `"}`, want: grayapi.GateError, why: "cost limit exceeded"},
		{name: "a list built of a list", condition: "size(result.l" + strings.Repeat(" + result.l", 80) + ") > 0",
			answer: `{"l": ` + list(30000) + `}`, want: grayapi.GateError, why: "cost limit exceeded"},
		{name: "an answer over 64 KiB", condition: "result.errors == 0", answer: `{"errors": 0, "pad": "` + strings.Repeat("x", 64<<10) + `"}`,
			want: grayapi.GateError, why: "at most 65536 read for the condition"},
		{name: "nested 20,000 deep", condition: "result.errors == 0", answer: strings.Repeat("[", 20000) + strings.Repeat("]", 20000),
			want: grayapi.GateError, why: "the answer is not JSON"},
		{name: "a number out of range", condition: "result.errors == 0", answer: `{"errors": 1e400}`, want: grayapi.GateError, why: "the answer is not JSON"},
		{name: "a string where a number was expected", condition: "result.errors == 0", answer: `{"errors": "0"}`, want: grayapi.GateFail},
		{name: "an array where an object was expected", condition: "result.errors == 0", answer: `[0]`, want: grayapi.GateError},
		{name: "no such field", condition: "result.errors == 0", answer: `{}`, want: grayapi.GateError, why: "no such key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := Parse("hostile", "test", definitionJSON(t, map[string]any{"provider": "smoke", "success": tc.condition}))
			if !checkLoad(t, err, tc.refused) {
				return
			}
			got, _, why := d.JudgeWebhook(200, []byte(tc.answer), nil)
			if got != tc.want || !strings.Contains(why, tc.why) {
				t.Errorf("judged %s (%.200s); want %s, %q", got, why, tc.want, tc.why)
			}
		})
	}
}

// TestHostileReadings: what a Prometheus query may return that is no single number; each outcome
// is written by hand.
func TestHostileReadings(t *testing.T) {
	rate := metricGate(t, "provider: prometheus\nquery: up\nsuccess: result < 0.01\n")
	compared := metricGate(t, "provider: prometheus\ncompare: true\nquery: 'up{pod=~\"$pods\"}'\nsuccess: canary <= stable\n")
	noStable := shopVars
	noStable.StableHash = ""
	_, errNoStable := compared.Render(noStable, "", "namespace")
	for _, tc := range []struct {
		name     string
		def      *Definition
		readings []Reading
		want     grayapi.GateOutcome
	}{
		{"a thousand series", rate, []Reading{{Values: make([]float64, 1000)}}, grayapi.GateError},
		{"-Inf", rate, []Reading{{Values: []float64{math.Inf(-1)}}}, grayapi.GateNoData},
		{"one reading of two", compared, []Reading{{Values: []float64{0}}}, grayapi.GateError},
		{"no stable revision", compared, []Reading{{Values: []float64{0}}, {Err: errNoStable}}, grayapi.GateNoData},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, _, why := tc.def.JudgeMetric(tc.readings...); got != tc.want {
				t.Errorf("judged %s (%s), want %s", got, why, tc.want)
			}
		})
	}
}

// checkLoad checks how a definition loaded (err) against refused, the refusal wanted ("": none),
// and reports whether it loaded.
func checkLoad(t *testing.T, err error, refused string) (loaded bool) {
	t.Helper()
	if refused != "" {
		if err == nil || !strings.Contains(err.Error(), refused) {
			t.Errorf("loaded with %v; want refused, %q", err, refused)
		}
		return false
	}
	if err != nil {
		t.Fatalf("refused: %v", err)
	}
	return true
}
