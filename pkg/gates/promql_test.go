package gates

import (
	"errors"
	"strings"
	"testing"

	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// TestQueryBoundsRefusedAtLoad: a query over one of its bounds is refused when its definition is
// loaded, the error naming the gate and the bound.
func TestQueryBoundsRefusedAtLoad(t *testing.T) {
	for _, tc := range []struct {
		name, query, want string
	}{
		{"nested parentheses", strings.Repeat("(", 40) + "up" + strings.Repeat(")", 40), "brackets nest more than 16 deep"},
		// 20 additions nest 20 deep, their first operand one more.
		{"nested without brackets", "up" + strings.Repeat(" + up", 20), "nests 21 deep, at most 16 allowed"},
		// 64 selectors, 63 additions, each in parentheses: 190 nodes, 13 deep.
		{"too many nodes", balancedSum(6), "has 190 nodes, at most 128 allowed"},
		{"too long", "sum(up{job=\"" + strings.Repeat("a", 2100) + "\"})", "bytes, at most 2048 allowed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("errors", `ConfigMap shop/gates, key "errors"`, "provider: prometheus\nquery: '"+tc.query+"'\nsuccess: result < 1\n")
			if err == nil || !strings.Contains(err.Error(), `gate "errors" (ConfigMap shop/gates, key "errors")`) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Parse: %v; want the gate named and %q", err, tc.want)
			}
		})
	}
}

// TestQueryCompiledOncePerScope: once a definition's query is checked against a provider's label,
// checking it again (every sync resolves its gates) allocates nothing: it is not parsed again.
func TestQueryCompiledOncePerScope(t *testing.T) {
	d := metricGate(t, "provider: prometheus\nquery: 'sum(rate(http_requests_total{pod=~\"$canary_pods\",code=~\"5..\"}[$window]))'\nsuccess: result < 1\n")
	if err := d.CheckScope("namespace"); err != nil {
		t.Fatal(err)
	}
	if allocs := testing.AllocsPerRun(100, func() { _ = d.CheckScope("namespace") }); allocs != 0 {
		t.Errorf("checking the scope again allocates %v times a run, want 0 (parsed once)", allocs)
	}
}

// TestRenderWritesIntoTheParsedQuery: runs for two Deployments of different namespaces, one after
// the other, each get their own values (nothing of the first run is left in the shared tree).
func TestRenderWritesIntoTheParsedQuery(t *testing.T) {
	d := metricGate(t, "provider: prometheus\nquery: 'sum(rate(requests{pod=~\"$canary_pods\"}[$window] offset $window)) + count_values(\"$deployment\", up)'\nsuccess: result < 1\n")
	first, err := d.Render(shopVars, "", "namespace")
	if err != nil {
		t.Fatal(err)
	}
	other := QueryVars{Namespace: "pay", Deployment: "api", CanaryHash: "aa11", StableHash: "bb22", Window: 10e9}
	second, err := d.Render(other, "", "namespace")
	if err != nil {
		t.Fatal(err)
	}
	if want := `sum(rate(requests{namespace="shop",pod=~"web[.]v2-7d9f8c-[a-z0-9]{5}"}[1m35s] offset 1m35s)) + count_values("web.v2", up{namespace="shop"})`; first != want {
		t.Errorf("first run\n%s\nwant\n%s", first, want)
	}
	if want := `sum(rate(requests{namespace="pay",pod=~"api-aa11-[a-z0-9]{5}"}[10s] offset 10s)) + count_values("api", up{namespace="pay"})`; second != want {
		t.Errorf("second run\n%s\nwant\n%s", second, want)
	}
}

// TestRunWithoutARevisionIsNoData: a compared gate before there is a stable ReplicaSet (its hash
// empty) does not run a query whose hash matcher would match every series without the label; its
// measurement is NoData.
func TestRunWithoutARevisionIsNoData(t *testing.T) {
	d := metricGate(t, "provider: prometheus\ncompare: true\nquery: 'sum(rate(requests{pod_template_hash=\"$hash\"}[$window]))'\nsuccess: canary <= stable\n")
	noStable := shopVars
	noStable.StableHash = ""
	canary, err := d.Render(noStable, noStable.CanaryHash, "namespace")
	if err != nil {
		t.Fatalf("the canary's run: %v", err)
	}
	if !strings.Contains(canary, `pod_template_hash="7d9f8c"`) {
		t.Errorf("the canary's run is %s", canary)
	}
	stable, err := d.Render(noStable, "", "namespace")
	if !errors.Is(err, ErrNoRevision) {
		t.Fatalf("the stable run rendered %q, %v; want ErrNoRevision", stable, err)
	}
	if outcome, _, why := d.JudgeMetric(Reading{Values: []float64{1}}, Reading{Err: err}); outcome != grayapi.GateNoData || !strings.Contains(why, "$hash") {
		t.Errorf("judged %s (%s), want NoData naming $hash", outcome, why)
	}
}

// TestScanQueryKeepsStringsWhole: variables inside any of PromQL's three quotes stay for the
// parsed tree, $window outside them becomes the stand-in, and a comment is left alone.
func TestScanQueryKeepsStringsWhole(t *testing.T) {
	known := knownVariables(false)
	got, found, err := scanQuery("rate(x{a=\"$deployment\",b='$canary_pods\\'',c=`$window`}[$window]) # $nothing", known)
	if err != nil {
		t.Fatal(err)
	}
	if want := "rate(x{a=\"$deployment\",b='$canary_pods\\'',c=`$window`}[7777777]) # $nothing"; got != want {
		t.Errorf("scanned\n%s\nwant\n%s", got, want)
	}
	if found != (scannedQuery{windows: 1, inStrings: 3}) {
		t.Errorf("found %+v, want 1 window and 3 variables in strings", found)
	}
	if _, err := promQL.ParseExpr(got); err != nil {
		t.Errorf("the scanned query does not parse: %v", err)
	}
}

// balancedSum adds 2^levels selectors two by two, each sum in parentheses.
func balancedSum(levels int) string {
	if levels == 0 {
		return "up"
	}
	return "(" + balancedSum(levels-1) + " + " + balancedSum(levels-1) + ")"
}
