package gates

import (
	"encoding/json"
	"testing"

	"github.com/prometheus/prometheus/promql/parser"

	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// FuzzScopeQuery: whatever query a tenant writes, either it is refused at load, or each of its
// runs prints a query that Prometheus parses and whose every selector has the scope label set to
// the Deployment's namespace exactly once: no query of any shape reads another namespace.
func FuzzScopeQuery(f *testing.F) {
	for _, q := range []string{
		`sum(rate(http_requests_total{pod=~"$canary_pods",code=~"5.."}[$window])) / sum(rate(http_requests_total{pod=~"$canary_pods"}[$window]))`,
		`histogram_quantile(0.99, sum by (le) (rate(http_request_duration_seconds_bucket{pod=~"$pods"}[$window])))`,
		`max_over_time(up[5m:1m] offset $window) or on () vector(1)`,
		`label_replace(up, "a", "$1", "b", "(.*)") # {namespace="bank"}`,
		`{__name__=~".+",'x'="$deployment"} @ start()`,
	} {
		f.Add(q, false)
		f.Add(q, true)
	}
	f.Fuzz(func(t *testing.T, query string, compare bool) {
		fields := map[string]any{"provider": "prometheus", "query": query, "success": "result < 1.0"}
		if compare {
			fields["compare"], fields["success"] = true, "canary <= stable"
		}
		text, err := json.Marshal(fields)
		if err != nil {
			return
		}
		d, err := Parse("fuzz", "fuzz", string(text))
		if err != nil || d.CheckScope("namespace") != nil {
			return
		}
		hash := ""
		if compare {
			hash = shopVars.StableHash
		}
		rendered, err := d.Render(shopVars, hash, "namespace")
		if err != nil {
			t.Fatalf("%q loaded but does not render: %v", query, err)
		}
		expr, err := promQL.ParseExpr(rendered)
		if err != nil {
			t.Fatalf("%q renders %q, which does not parse: %v", query, rendered, err)
		}
		parser.Inspect(expr, func(node parser.Node, _ []parser.Node) error {
			sel, ok := node.(*parser.VectorSelector)
			if !ok {
				return nil
			}
			scoped := 0
			for _, m := range sel.LabelMatchers {
				if m.Name == "namespace" {
					if m.String() != `namespace="shop"` {
						t.Errorf("%q renders %q: selector %s reads beyond namespace shop", query, rendered, sel)
					}
					scoped++
				}
			}
			if scoped != 1 {
				t.Errorf("%q renders %q: selector %s has %d scope matchers, want 1", query, rendered, sel, scoped)
			}
			return nil
		})
	})
}

// FuzzJudgeWebhookAnswer: whatever a webhook answers, its judging ends in one of the five
// outcomes without panicking, and an answer over MaxWebhookAnswer is an Error.
func FuzzJudgeWebhookAnswer(f *testing.F) {
	for _, a := range []string{`{"errors": 0}`, `{"errors": 3, "s": "abc"}`, `[[[[]]]]`, `{"l": [1,2,3]}`, `null`, `"x"`, `1e400`} {
		f.Add(200, []byte(a))
	}
	d, err := Parse("fuzz", "fuzz", `{"provider": "smoke", "success": "result.errors == 0 && size(result.s + result.s) < 10", "failure": "result.l.exists(x, x > 2)"}`)
	if err != nil {
		f.Fatal(err)
	}
	valid := map[grayapi.GateOutcome]bool{grayapi.GatePass: true, grayapi.GateFail: true, grayapi.GateInconclusive: true, grayapi.GateNoData: true, grayapi.GateError: true}
	f.Fuzz(func(t *testing.T, status int, answer []byte) {
		outcome, _, why := d.JudgeWebhook(status, answer, nil)
		if !valid[outcome] || why == "" {
			t.Fatalf("HTTP %d %q: outcome %q (%s)", status, answer, outcome, why)
		}
		if status >= 200 && status < 300 && len(answer) > MaxWebhookAnswer && outcome != grayapi.GateError {
			t.Errorf("HTTP %d, %d bytes: %s, want an Error", status, len(answer), outcome)
		}
	})
}
