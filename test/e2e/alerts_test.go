package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
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
