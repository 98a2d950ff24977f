package e2e

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/kubegray/kubectl-gray/internal/monitoring"
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

// operationsDoc is where each alert's runbook_url points, to a section of its own.
const operationsDoc = "../../docs/operations.md"

// runbookURLPrefix is the address of operationsDoc the runbook links name.
const runbookURLPrefix = "https://github.com/kubegray/kubectl-gray/blob/main/docs/operations.md#"

// TestAlertRunbooks: every shipped alert links a section of docs/operations.md named after it (the
// anchor GitHub gives a "### <alert>" heading), and every such section belongs to an alert.
func TestAlertRunbooks(t *testing.T) {
	var spec struct {
		Groups []struct {
			Rules []struct {
				Alert       string            `json:"alert"`
				Annotations map[string]string `json:"annotations"`
			} `json:"rules"`
		} `json:"groups"`
	}
	if err := yaml.Unmarshal(alertRules(t), &spec); err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(operationsDoc)
	if err != nil {
		t.Fatal(err)
	}
	sections := map[string]bool{}
	for _, line := range strings.Split(string(doc), "\n") {
		if name, ok := strings.CutPrefix(line, "### "); ok && strings.HasPrefix(name, "Gray") {
			sections[name] = true
		}
	}
	alerts := 0
	for _, g := range spec.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			alerts++
			if want := runbookURLPrefix + strings.ToLower(r.Alert); r.Annotations["runbook_url"] != want {
				t.Errorf("alert %s: runbook_url %q, want %q", r.Alert, r.Annotations["runbook_url"], want)
			}
			if !sections[r.Alert] {
				t.Errorf("alert %s: %s has no section \"### %s\"", r.Alert, operationsDoc, r.Alert)
			}
			delete(sections, r.Alert)
		}
	}
	if alerts == 0 {
		t.Fatalf("%s has no alert", prometheusRulePath)
	}
	for name := range sections {
		t.Errorf("%s: section %q is the runbook of no alert", operationsDoc, name)
	}
}

// dashboardPath is the Grafana dashboard as shipped (manifests/monitoring, and the chart through a
// link).
const dashboardPath = "../../manifests/monitoring/dashboard.json"

// dashboardQueries are the PromQL expressions of the shipped dashboard's panels, by panel title,
// with its cluster, namespace and deployment variables standing for every value (as their "All"
// does).
func dashboardQueries(t testing.TB) map[string][]string {
	t.Helper()
	dashboard, err := monitoring.ReadDashboard(dashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, p := range dashboard.Panels {
		for _, target := range p.Targets {
			out[p.Title] = append(out[p.Title], dashboardAll.Replace(target.Expr))
		}
	}
	return out
}

// dashboardAll is what the dashboard's "All" puts for each variable (the cluster label may be
// absent).
var dashboardAll = strings.NewReplacer("$cluster", ".*", "$namespace", ".+", "$deployment", ".+")

// afterProviderMeasurement are the series a gate provider serves once it measured; a test with
// only the pods gate (which needs no provider) has none. TestShippedQueriesUseServedSeries
// (controller/metrics) finds them on /metrics after one.
var afterProviderMeasurement = regexp.MustCompile(`gray_controller_gate_provider_`)

// wantDashboardData runs every query of the dashboard in p and wants each to have returned data
// at some point of the last 15 minutes, as a dashboard over that range would draw it; the
// gate providers' panels only when p's run measured through a provider.
func wantDashboardData(t *testing.T, p *prom.Server, providers bool) {
	t.Helper()
	for title, exprs := range dashboardQueries(t) {
		for _, expr := range exprs {
			if !providers && afterProviderMeasurement.MatchString(expr) {
				continue
			}
			got, err := p.Query(context.Background(), "count_over_time(("+expr+")[15m:1s])")
			if err != nil || len(got) == 0 {
				t.Errorf("dashboard panel %q: %s returned no data in 15 minutes (%v)", title, expr, err)
			}
		}
	}
}

// operatorTarget is gray-controller's metrics endpoint at address, pod pod, labelled as a
// Prometheus Operator's ServiceMonitor for the chart's Service labels it: the job is the
// Service's name, the namespace gray-controller's own.
func operatorTarget(address, pod string) prom.Target {
	return prom.Target{Address: address, Labels: map[string]string{"job": "gray-controller-metrics", "namespace": "gray-system",
		"service": "gray-controller-metrics", "endpoint": "metrics", "pod": pod, "container": "gray-controller"}}
}

// decoyTarget is decoy (decoyExposition), labelled as kube-controller-manager's target would be.
func decoyTarget(decoy *httptest.Server) prom.Target {
	return prom.Target{Address: strings.TrimPrefix(decoy.URL, "https://"),
		Labels: map[string]string{"job": "kube-controller-manager", "namespace": "kube-system", "pod": "kube-controller-manager-0"}}
}

// serviceMonitorHonorsLabels is the honorLabels of the chart's ServiceMonitor endpoint.
func serviceMonitorHonorsLabels(t *testing.T) bool {
	t.Helper()
	objs := objects(t, helmCmd(t, "template", releaseName, chartPath, "--namespace", releaseNS, "--set", "metrics.serviceMonitor.enabled=true",
		"--set", "metrics.serviceMonitor.tlsConfig.insecureSkipVerify=true"))
	endpoints, _, _ := unstructured.NestedSlice(objs["ServiceMonitor/"+releaseNS+"/gray-controller"], "spec", "endpoints")
	if len(endpoints) != 1 {
		t.Fatalf("the chart's ServiceMonitor has endpoints %v, want one", endpoints)
	}
	honor, _, _ := unstructured.NestedBool(endpoints[0].(map[string]any), "honorLabels")
	return honor
}

// decoyExposition is what another client-go program scraped by the same Prometheus exposes
// (kube-controller-manager's Deployment controller has a work queue named deployment too), at
// its nth scrape: a deep queue, slow waits (all in the 15 s and 10 s buckets) and 418s. None
// of it is gray-controller's, and no panel of the dashboard may count it.
func decoyExposition(n int) string {
	return fmt.Sprintf(`# TYPE workqueue_depth gauge
workqueue_depth{name="deployment"} 42
# TYPE workqueue_queue_duration_seconds histogram
workqueue_queue_duration_seconds_bucket{name="deployment",le="10"} %[1]d
workqueue_queue_duration_seconds_bucket{name="deployment",le="+Inf"} %[1]d
workqueue_queue_duration_seconds_sum{name="deployment"} %[2]d
workqueue_queue_duration_seconds_count{name="deployment"} %[1]d
# TYPE rest_client_rate_limiter_duration_seconds histogram
rest_client_rate_limiter_duration_seconds_bucket{host="decoy",verb="GET",le="15"} %[1]d
rest_client_rate_limiter_duration_seconds_bucket{host="decoy",verb="GET",le="+Inf"} %[1]d
rest_client_rate_limiter_duration_seconds_sum{host="decoy",verb="GET"} %[3]d
rest_client_rate_limiter_duration_seconds_count{host="decoy",verb="GET"} %[1]d
# TYPE rest_client_requests_total counter
rest_client_requests_total{code="418",host="decoy",method="GET"} %[1]d
`, 100*n, 900*n, 1400*n)
}

// wantDashboardOwnSeries runs the dashboard's client-go panels in p, which also scrapes a
// decoy (decoyExposition), and wants none to show the decoy's numbers: gray-controller's queue
// is shallow and its waits short in these runs (a depth under 42, quantiles under 5 s), and it is
// never answered 418.
func wantDashboardOwnSeries(t *testing.T, p *prom.Server) {
	t.Helper()
	checked := 0
	for title, exprs := range dashboardQueries(t) {
		for _, expr := range exprs {
			var bad func(prom.Sample) bool
			switch {
			case strings.Contains(expr, "rest_client_requests_total"):
				bad = func(s prom.Sample) bool { return s.Labels["code"] == "418" }
			case strings.Contains(expr, "workqueue_depth"):
				bad = func(s prom.Sample) bool { return s.Value >= 42 }
			case strings.Contains(expr, "histogram_quantile(") &&
				(strings.Contains(expr, "workqueue_queue_duration") || strings.Contains(expr, "rest_client_rate_limiter")):
				bad = func(s prom.Sample) bool { return s.Value >= 5 }
			default:
				continue
			}
			checked++
			got, err := p.Query(context.Background(), expr)
			if err != nil {
				t.Errorf("dashboard panel %q: %s: %v", title, expr, err)
			}
			for _, s := range got {
				if bad(s) {
					t.Errorf("dashboard panel %q: %s counts another program's series: %v = %v", title, expr, s.Labels, s.Value)
				}
			}
		}
	}
	if checked != 5 {
		t.Errorf("checked %d client-go queries of the dashboard against the decoy, want the 5 of the work-queue and API-throttling panels", checked)
	}
}
