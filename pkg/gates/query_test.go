package gates

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

func metricGate(t *testing.T, text string) *Definition {
	t.Helper()
	d, err := Parse("errors", "test", text)
	if err != nil {
		t.Fatal(err)
	}
	if d.Kind != KindMetric {
		t.Fatalf("kind %q, want %q", d.Kind, KindMetric)
	}
	return d
}

var shopVars = QueryVars{Namespace: "shop", Deployment: "web.v2", CanaryHash: "7d9f8c", StableHash: "5b6c4d", Window: 95 * time.Second}

// TestRenderScopesEverySelector: the rendered queries are written by hand, each selector with
// the Deployment's namespace added, as Prometheus prints them.
func TestRenderScopesEverySelector(t *testing.T) {
	for _, tc := range []struct {
		name, query, hash, label, want string
	}{
		{"error rate", `sum(rate(http_requests_total{pod=~"$canary_pods",code=~"5.."}[$window])) / sum(rate(http_requests_total{pod=~"$canary_pods"}[$window]))`, "", "namespace",
			`sum(rate(http_requests_total{code=~"5..",namespace="shop",pod=~"web[.]v2-7d9f8c-[a-z0-9]{5}"}[1m35s])) / sum(rate(http_requests_total{namespace="shop",pod=~"web[.]v2-7d9f8c-[a-z0-9]{5}"}[1m35s]))`},
		{"a bare metric and a subquery", `max_over_time(up[5m:1m]) + on() vector(1) * scalar(latency)`, "", "kubernetes_namespace",
			`max_over_time(up{kubernetes_namespace="shop"}[5m:1m]) + on () vector(1) * scalar(latency{kubernetes_namespace="shop"})`},
		{"a compared run", `sum(rate(requests{pod_template_hash="$hash", app="$deployment"}[$window]))`, "5b6c4d", "namespace",
			`sum(rate(requests{app="web.v2",namespace="shop",pod_template_hash="5b6c4d"}[1m35s]))`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			condition := "success: result < 1\n"
			if tc.hash != "" {
				condition = "compare: true\nsuccess: canary <= stable\n"
			}
			d := metricGate(t, "provider: prometheus\nquery: '"+strings.ReplaceAll(tc.query, "'", "''")+"'\n"+condition)
			got, err := d.Render(shopVars, tc.hash, tc.label)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("rendered\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

func TestRenderRefusesTheScopeLabel(t *testing.T) {
	d := metricGate(t, "provider: prometheus\nquery: 'sum(up{namespace=\"payments\"})'\nsuccess: result < 1\n")
	if err := d.CheckScope("tenant"); err != nil {
		t.Errorf("a provider scoping by tenant refused a query naming namespace: %v", err)
	}
	for _, err := range []error{d.CheckScope("namespace"), func() error { _, err := d.Render(shopVars, "", "namespace"); return err }()} {
		if err == nil || !strings.Contains(err.Error(), `names the label namespace: leave it out, gray-controller adds it to every selector, set to the Deployment's namespace`) {
			t.Errorf("error %v, want the selector refused for naming namespace", err)
		}
	}
}

func TestPodNamesCutLikeGenerateName(t *testing.T) {
	long := strings.Repeat("a", 60)
	if got, want := podNames(long, "abc"), strings.Repeat("a", 58)+"[a-z0-9]{5}"; got != want {
		t.Errorf("podNames of a 60-character name = %q, want %q", got, want)
	}
	if got, want := podNames("web", "abc"), "web-abc-[a-z0-9]{5}"; got != want {
		t.Errorf("podNames = %q, want %q", got, want)
	}
}

// TestJudgeMetric keeps NoData, Error, Pass, Fail and Inconclusive apart; the outcomes are
// written by hand from the conditions.
func TestJudgeMetric(t *testing.T) {
	rate := metricGate(t, "provider: prometheus\nquery: up\nsuccess: result < 0.01\nfailure: result > 0.05\n")
	compared := metricGate(t, "provider: prometheus\nquery: up\ncompare: true\nsuccess: canary <= stable * 1.5\n")
	one := func(v ...float64) Reading { return Reading{Values: v} }
	for _, tc := range []struct {
		name     string
		def      *Definition
		readings []Reading
		want     grayapi.GateOutcome
		value    string
	}{
		{"low", rate, []Reading{one(0.001)}, grayapi.GatePass, "result 0.001"},
		{"high", rate, []Reading{one(0.2)}, grayapi.GateFail, "result 0.2"},
		{"between", rate, []Reading{one(0.03)}, grayapi.GateInconclusive, "result 0.03"},
		{"no series", rate, []Reading{one()}, grayapi.GateNoData, ""},
		{"NaN (0/0: no traffic)", rate, []Reading{one(math.NaN())}, grayapi.GateNoData, "result NaN"},
		{"+Inf", rate, []Reading{one(math.Inf(1))}, grayapi.GateNoData, "result +Inf"},
		{"two series", rate, []Reading{one(0.001, 0.002)}, grayapi.GateError, ""},
		{"provider error", rate, []Reading{{Err: errors.New("503 Service Unavailable")}}, grayapi.GateError, ""},
		{"canary like stable", compared, []Reading{one(0.012), one(0.01)}, grayapi.GatePass, "canary 0.012, stable 0.01"},
		{"canary twice stable", compared, []Reading{one(0.02), one(0.01)}, grayapi.GateFail, "canary 0.02, stable 0.01"},
		{"stable without data", compared, []Reading{one(0.02), one()}, grayapi.GateNoData, "canary 0.02"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, value, why := tc.def.JudgeMetric(tc.readings...)
			if got != tc.want || value != tc.value || why == "" {
				t.Errorf("JudgeMetric = %s, %q (%s); want %s, %q, and a reason", got, value, why, tc.want, tc.value)
			}
		})
	}
}
