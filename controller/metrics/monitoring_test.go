package metrics

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/promql/parser"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2/ktesting"
	"sigs.k8s.io/yaml"

	"github.com/kubegray/kubectl-gray/internal/monitoring"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// The dashboard and alerts as shipped (manifests/monitoring; the chart links them).
const (
	dashboardFile = "../../manifests/monitoring/dashboard.json"
	rulesFile     = "../../manifests/monitoring/prometheusrule.yaml"
)

// TestShippedQueriesUseServedSeries parses every query of the shipped dashboard (its panels and
// its variables) and alerts with Prometheus' parser, and wants each series they select to be
// served on /metrics. The /metrics is the controller's handler after the events that make the
// series appear only once they happen: a leader's per-rollout series of a held rollout with a
// gate (RegisterRollouts), build_info (RecordBuildInfo, at start), a failed gray sync
// (RecordGraySync), a gate provider's measurement
// (WaitForProvider), and client-go's request, work queue and leader election
// (instrumentClientGo); the rest are served from the start.
func TestShippedQueriesUseServedSeries(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	heldAt := metav1.NewTime(time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC))
	if err := RegisterRollouts("instead", func() []Rollout {
		return []Rollout{{Namespace: "shop", Name: "web", Status: grayapi.Status{Phase: grayapi.PhaseHeld, HeldAt: &heldAt,
			Gates: []grayapi.GateStatus{{Name: "error-rate"}}}}}
	}); err != nil {
		t.Fatal(err)
	}
	RecordBuildInfo("instead")
	RecordGraySync("shop/web", errors.New("denied by an admission webhook"))
	m := WaitForProvider("prometheus", "prometheus")
	m.Started(heldAt.Time)
	m.Done(heldAt.Add(time.Second), grayapi.GatePass)
	instrumentClientGo(t, ctx, "monitoring-test")

	rec := httptest.NewRecorder()
	Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	textParser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := textParser.TextToMetricFamilies(rec.Body)
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	served := map[string]bool{}
	for name, mf := range families {
		served[name] = true
		if mf.GetType().String() == "HISTOGRAM" {
			served[name+"_bucket"], served[name+"_sum"], served[name+"_count"] = true, true, true
		}
	}

	for _, q := range append(dashboardQueries(t), alertQueries(t)...) {
		expr, err := promQL.ParseExpr(q.expr)
		if err != nil {
			t.Errorf("%s: %s does not parse: %v", q.where, q.expr, err)
			continue
		}
		for _, name := range selectedNames(expr) {
			if !served[name] {
				t.Errorf("%s: %s selects %s, which /metrics does not serve", q.where, q.expr, name)
			}
		}
	}
}

// query is one PromQL expression of a shipped file, and where it is.
type query struct{ where, expr string }

// promQL is Prometheus' parser with its default functions.
var promQL = parser.NewParser(parser.Options{})

// variableQuery is a Grafana variable's query: label_values(<selector>, <label>).
var variableQuery = regexp.MustCompile(`^label_values\((.+), *[a-z_]+\)$`)

// dashboardQueries are the queries of the dashboard's panels and variables, Grafana's variables
// replaced by a regular expression, as a dashboard of "All" runs them.
func dashboardQueries(t *testing.T) []query {
	t.Helper()
	dashboard, err := monitoring.ReadDashboard(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var out []query
	for _, v := range dashboard.Templating.Variables {
		if v.Type != "query" {
			continue
		}
		m := variableQuery.FindStringSubmatch(v.Query)
		if m == nil {
			t.Errorf("dashboard variable %s: query %q is not label_values(<selector>, <label>)", v.Name, v.Query)
			continue
		}
		out = append(out, query{"dashboard variable " + v.Name, m[1]})
	}
	for _, p := range dashboard.Panels {
		for _, target := range p.Targets {
			out = append(out, query{"dashboard panel " + p.Title, target.Expr})
		}
	}
	for i, q := range out {
		for _, v := range []string{"$cluster", "$namespace", "$deployment"} {
			q.expr = strings.ReplaceAll(q.expr, v, ".*")
		}
		out[i] = q
	}
	return out
}

// alertQueries are the expressions of the shipped alerts.
func alertQueries(t *testing.T) []query {
	t.Helper()
	data, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	var rule struct {
		Spec struct {
			Groups []struct {
				Rules []struct {
					Alert, Expr string
				} `json:"rules"`
			} `json:"groups"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &rule); err != nil {
		t.Fatalf("%s: %v", rulesFile, err)
	}
	var out []query
	for _, g := range rule.Spec.Groups {
		for _, r := range g.Rules {
			out = append(out, query{"alert " + r.Alert, r.Expr})
		}
	}
	return out
}

// selectedNames are the metric names expr's series selectors select, sorted.
func selectedNames(expr parser.Expr) []string {
	var names []string
	parser.Inspect(expr, func(node parser.Node, _ []parser.Node) error {
		if vs, ok := node.(*parser.VectorSelector); ok {
			names = append(names, vs.Name)
		}
		return nil
	})
	slices.Sort(names)
	return slices.Compact(names)
}
