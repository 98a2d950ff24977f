// Package monitoring reads the shipped Grafana dashboard (manifests/monitoring/dashboard.json) for
// the tests that check its queries: against /metrics (controller/metrics) and in a real Prometheus
// (test/e2e).
package monitoring

import (
	"encoding/json"
	"fmt"
	"os"
)

// Dashboard is what the tests read of a Grafana dashboard: its variables and its panels' queries.
type Dashboard struct {
	Templating struct {
		Variables []Variable `json:"list"`
	} `json:"templating"`
	Panels []Panel `json:"panels"`
}

// Variable is one of the dashboard's variables; Query is a query variable's, e.g.
// label_values(gray_controller_rollout_info, namespace).
type Variable struct {
	Name  string `json:"name"`
	Type  string `json:"type"`
	Query string `json:"query"`
}

// Panel is one panel and its PromQL targets.
type Panel struct {
	Title   string `json:"title"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
}

// ReadDashboard reads the dashboard at path; one without a panel is an error.
func ReadDashboard(path string) (Dashboard, error) {
	var d Dashboard
	data, err := os.ReadFile(path)
	if err != nil {
		return d, err
	}
	if err := json.Unmarshal(data, &d); err != nil {
		return d, fmt.Errorf("%s: %w", path, err)
	}
	if len(d.Panels) == 0 {
		return d, fmt.Errorf("%s has no panel", path)
	}
	return d, nil
}
