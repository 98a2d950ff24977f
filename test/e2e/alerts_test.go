package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/kubegray/kubectl-gray/test/prom"
)

// prometheusRulePath is the alerts as shipped (manifests/monitoring, and the chart through a link).
const prometheusRulePath = "../../manifests/monitoring/prometheusrule.yaml"

// alertRules is the spec of the shipped PrometheusRule: a rule file Prometheus and promtool read.
func alertRules(t testing.TB) []byte {
	t.Helper()
	data, err := os.ReadFile(prometheusRulePath)
	if err != nil {
		t.Fatal(err)
	}
	var rule struct {
		APIVersion string         `json:"apiVersion"`
		Kind       string         `json:"kind"`
		Metadata   map[string]any `json:"metadata"`
		Spec       map[string]any `json:"spec"`
	}
	if err := yaml.UnmarshalStrict(data, &rule); err != nil {
		t.Fatalf("%s: %v", prometheusRulePath, err)
	}
	if len(rule.Spec) == 0 {
		t.Fatalf("%s has no spec", prometheusRulePath)
	}
	rules, err := yaml.Marshal(rule.Spec)
	if err != nil {
		t.Fatal(err)
	}
	return rules
}

// TestAlertRules checks the shipped alerts with promtool (the same Prometheus build the e2e
// tests run): the rules load, and each alert fires, or stays quiet, when testdata/alerts.test.yaml
// says, with the labels and annotations written there by hand.
func TestAlertRules(t *testing.T) {
	promtool, err := prom.Promtool()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	tests, err := os.ReadFile("testdata/alerts.test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"rules.yaml": alertRules(t), "alerts.test.yaml": tests} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"check", "rules", "rules.yaml"}, {"test", "rules", "alerts.test.yaml"}} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool %v: %v\n%s", args, err, out)
		}
	}
}

// dashboardPath is the Grafana dashboard as shipped (manifests/monitoring, and the chart through a
// link).
const dashboardPath = "../../manifests/monitoring/dashboard.json"

// dashboardQueries are the PromQL expressions of the shipped dashboard's panels, by panel title,
// with its namespace variable standing for every namespace (as its "All" does).
func dashboardQueries(t testing.TB) map[string][]string {
	t.Helper()
	data, err := os.ReadFile(dashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	var dashboard struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(data, &dashboard); err != nil {
		t.Fatalf("%s: %v", dashboardPath, err)
	}
	out := map[string][]string{}
	for _, p := range dashboard.Panels {
		for _, target := range p.Targets {
			out[p.Title] = append(out[p.Title], strings.ReplaceAll(target.Expr, "$namespace", ".+"))
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s has no panel with a query", dashboardPath)
	}
	return out
}

// wantDashboardData runs every query of the dashboard in p and wants each to have returned data
// at some point of the last 15 minutes, as a dashboard over that range would draw it.
func wantDashboardData(t *testing.T, p *prom.Server) {
	t.Helper()
	for title, exprs := range dashboardQueries(t) {
		for _, expr := range exprs {
			got, err := p.Query(context.Background(), "count_over_time(("+expr+")[15m:1s])")
			if err != nil || len(got) == 0 {
				t.Errorf("dashboard panel %q: %s returned no data in 15 minutes (%v)", title, expr, err)
			}
		}
	}
}
