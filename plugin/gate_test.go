package plugin

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// TestGateLint checks a file as an app team would before committing it: the good definitions
// pass, each refused one is named with why, and the command fails.
func TestGateLint(t *testing.T) {
	file := filepath.Join(t.TempDir(), "gates.yaml")
	text := `apiVersion: v1
kind: ConfigMap
metadata:
  name: gates
  labels:
    kubegray.io/gates: "true"
data:
  error-rate: |
    provider: prometheus
    query: sum(rate(http_requests_total{pod=~"$canary_pods",code=~"5.."}[$window]))
    success: result < 0.01
  peeking: |
    provider: prometheus
    query: sum(errors{namespace="bank"})
    success: result < 1
  smoke: |
    provider: prometheus
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: gate-providers
  labels:
    kubegray.io/gates: providers
data:
  prometheus: |
    type: prometheus
    url: http://prometheus.monitoring:9090
---
apiVersion: v1
kind: Service
metadata:
  name: web
`
	if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	streams, _, out, _ := genericiooptions.NewTestIOStreams()
	cmd := NewCmdGateLint(streams)
	cmd.SetArgs([]string{"-f", file})
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	err := cmd.Execute()
	if err == nil || err.Error() != "2 of 4 refused" {
		t.Errorf("error %v, want 2 of 4 refused", err)
	}
	for _, want := range []string{
		"✔ provider prometheus (" + file + ": ConfigMap gate-providers, prometheus)",
		"✔ gate error-rate (" + file + ": ConfigMap gates, key error-rate, metric gate, provider prometheus)",
		`✖ gate "peeking" (` + file + `: ConfigMap gates, key peeking): query "sum(errors{namespace=\"bank\"})": selector errors{namespace="bank"} names the label namespace`,
		`✖ gate "smoke" (` + file + `: ConfigMap gates, key smoke): provider "prometheus" is a prometheus: the gate needs a query`,
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	cmd = NewCmdGateLint(streams)
	cmd.SetArgs([]string{"-f", filepath.Join(t.TempDir(), "none.yaml")})
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("a missing file: error %v", err)
	}
}
