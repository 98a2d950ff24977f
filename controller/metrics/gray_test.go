package metrics

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

func newGrayRegistry() (*grayMetrics, *prometheus.Registry) {
	g := newGrayMetrics()
	r := prometheus.NewRegistry()
	g.register(r)
	return g, r
}

func TestGrayPhaseGauge(t *testing.T) {
	g, r := newGrayRegistry()
	g.setPhase("default/a", grayapi.PhaseProgressing)
	g.setPhase("default/b", grayapi.PhaseProgressing)
	g.setPhase("default/a", grayapi.PhaseHeld)     // moves, not counted twice
	g.setPhase("default/a", grayapi.PhaseHeld)     // unchanged
	g.setPhase("default/c", grayapi.PhaseInvalid)  // then forgotten
	g.setPhase("default/c", "")                    // forgotten
	g.setPhase("default/unknown", "")              // forgetting the unknown is a no-op
	g.setPhase("default/b", grayapi.PhaseComplete) // moves

	want := `
# HELP gray_controller_gray_deployments Gray Deployments (carrying kubegray.io/percent) by the phase of their rollout.
# TYPE gray_controller_gray_deployments gauge
gray_controller_gray_deployments{phase="Aborted"} 0
gray_controller_gray_deployments{phase="Complete"} 1
gray_controller_gray_deployments{phase="Degraded"} 0
gray_controller_gray_deployments{phase="Held"} 1
gray_controller_gray_deployments{phase="Invalid"} 0
gray_controller_gray_deployments{phase="Progressing"} 0
gray_controller_gray_deployments{phase="RolledBack"} 0
`
	if err := testutil.GatherAndCompare(r, strings.NewReader(want), "gray_controller_gray_deployments"); err != nil {
		t.Error(err)
	}
}

func TestGrayHolds(t *testing.T) {
	g, r := newGrayRegistry()
	g.recordHold(3 * time.Second)         // first hold: 3s falls in the 4s bucket
	g.recordHold(-1)                      // a later hold point: counted, not observed
	g.recordHold(1500 * time.Millisecond) // another rollout's first hold: the 2s bucket

	want := `
# HELP gray_controller_gray_holds_total Hold points reached: each time the controller paused a gray rollout at its target.
# TYPE gray_controller_gray_holds_total counter
gray_controller_gray_holds_total 3
# HELP gray_controller_gray_time_to_hold_seconds Time from the creation of a gray rollout's new ReplicaSet to the pause at its first hold point.
# TYPE gray_controller_gray_time_to_hold_seconds histogram
gray_controller_gray_time_to_hold_seconds_bucket{le="0.5"} 0
gray_controller_gray_time_to_hold_seconds_bucket{le="1"} 0
gray_controller_gray_time_to_hold_seconds_bucket{le="2"} 1
gray_controller_gray_time_to_hold_seconds_bucket{le="4"} 2
gray_controller_gray_time_to_hold_seconds_bucket{le="8"} 2
gray_controller_gray_time_to_hold_seconds_bucket{le="16"} 2
gray_controller_gray_time_to_hold_seconds_bucket{le="32"} 2
gray_controller_gray_time_to_hold_seconds_bucket{le="64"} 2
gray_controller_gray_time_to_hold_seconds_bucket{le="128"} 2
gray_controller_gray_time_to_hold_seconds_bucket{le="256"} 2
gray_controller_gray_time_to_hold_seconds_bucket{le="512"} 2
gray_controller_gray_time_to_hold_seconds_bucket{le="1024"} 2
gray_controller_gray_time_to_hold_seconds_bucket{le="2048"} 2
gray_controller_gray_time_to_hold_seconds_bucket{le="4096"} 2
gray_controller_gray_time_to_hold_seconds_bucket{le="+Inf"} 2
gray_controller_gray_time_to_hold_seconds_sum 4.5
gray_controller_gray_time_to_hold_seconds_count 2
`
	if err := testutil.GatherAndCompare(r, strings.NewReader(want),
		"gray_controller_gray_holds_total", "gray_controller_gray_time_to_hold_seconds"); err != nil {
		t.Error(err)
	}
}

// TestGrayMetricsServed checks the package-level functions feed the registry behind Handler.
func TestGrayMetricsServed(t *testing.T) {
	holdsBefore := testutil.ToFloat64(grayGlobal.holds)
	SetGrayPhase("served/x", grayapi.PhaseRolledBack)
	RecordGrayHold(-1)
	if got := testutil.ToFloat64(grayGlobal.holds) - holdsBefore; got != 1 {
		t.Errorf("holds grew by %v, want 1", got)
	}

	rec := httptest.NewRecorder()
	Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	for _, s := range []string{
		`gray_controller_gray_deployments{phase="RolledBack"} 1`,
		"gray_controller_gray_holds_total",
		"gray_controller_gray_time_to_hold_seconds_count",
	} {
		if !strings.Contains(rec.Body.String(), s) {
			t.Errorf("GET /metrics does not serve %s", s)
		}
	}
	ForgetGray("served/x")
	if got := testutil.ToFloat64(grayGlobal.deployments.WithLabelValues(string(grayapi.PhaseRolledBack))); got != 0 {
		t.Errorf("RolledBack gauge after ForgetGray = %v, want 0", got)
	}
}

// TestGateMeasurements: every outcome has its series from the start, dry runs apart, and each
// measurement counts once in its own.
func TestGateMeasurements(t *testing.T) {
	passBefore := testutil.ToFloat64(grayGlobal.gates.WithLabelValues("Pass", "false"))
	dryFailBefore := testutil.ToFloat64(grayGlobal.gates.WithLabelValues("Fail", "true"))
	RecordGateMeasurement(grayapi.GatePass, false)
	RecordGateMeasurement(grayapi.GatePass, false)
	RecordGateMeasurement(grayapi.GateFail, true)
	if got := testutil.ToFloat64(grayGlobal.gates.WithLabelValues("Pass", "false")) - passBefore; got != 2 {
		t.Errorf("Pass grew by %v, want 2", got)
	}
	if got := testutil.ToFloat64(grayGlobal.gates.WithLabelValues("Fail", "true")) - dryFailBefore; got != 1 {
		t.Errorf("dry-run Fail grew by %v, want 1", got)
	}
	_, r := newGrayRegistry()
	if n, err := testutil.GatherAndCount(r, "gray_controller_gray_gate_measurements_total"); err != nil || n != 10 {
		t.Errorf("a new registry exposes %d gate series (%v), want 10: five outcomes, dry runs apart", n, err)
	}
}

// TestGrayRolloutOutcomes: a rollout in flight (Progressing, Held, Degraded, Invalid) that ends
// counts once, by its end: repeated syncs do not count it again, the end of a rollback is not a
// second outcome, and a phase seen first (a new leader's, or after the Deployment was forgotten)
// counts nothing, since the leader that saw the change counted it.
func TestGrayRolloutOutcomes(t *testing.T) {
	g, r := newGrayRegistry()
	for _, step := range []struct {
		key   string
		phase grayapi.Phase
	}{
		{"shop/web", grayapi.PhaseProgressing},
		{"shop/web", grayapi.PhaseHeld},
		{"shop/web", grayapi.PhaseComplete}, // Complete 1
		{"shop/web", grayapi.PhaseComplete}, // a later sync: no change
		{"shop/api", grayapi.PhaseAborted},  // first seen: the old leader counted it
		{"shop/api", grayapi.PhaseRolledBack},
		{"shop/api", grayapi.PhaseComplete}, // the rollback's end, after an abort: nothing
		{"shop/cart", grayapi.PhaseDegraded},
		{"shop/cart", grayapi.PhaseAborted}, // Aborted 1
		{"shop/cart", grayapi.PhaseAborted},
		{"shop/ui", grayapi.PhaseHeld},
		{"shop/ui", grayapi.PhaseRolledBack}, // RolledBack 1
		{"shop/ui", grayapi.PhaseComplete},   // the rollback's end: nothing
		{"shop/db", grayapi.PhaseProgressing},
		{"shop/db", ""}, // forgotten (deleted, or no longer gray)
		{"shop/db", grayapi.PhaseComplete},
	} {
		g.setPhase(step.key, step.phase)
	}
	want := `
# HELP gray_controller_gray_rollouts_total Gray rollouts that ended, by the phase they ended in: Complete, Aborted or RolledBack.
# TYPE gray_controller_gray_rollouts_total counter
gray_controller_gray_rollouts_total{result="Aborted"} 1
gray_controller_gray_rollouts_total{result="Complete"} 1
gray_controller_gray_rollouts_total{result="RolledBack"} 1
`
	if err := testutil.GatherAndCompare(r, strings.NewReader(want), "gray_controller_gray_rollouts_total"); err != nil {
		t.Error(err)
	}
}

// TestGraySyncFailingSince: a gray Deployment whose syncs fail has a series saying since when,
// kept through more failures, gone at its next successful sync and when it is forgotten; a
// Deployment whose syncs succeed has none.
func TestGraySyncFailingSince(t *testing.T) {
	g, r := newGrayRegistry()
	start := time.Date(2026, 12, 6, 6, 0, 0, 0, time.UTC) // Unix second 1,796,536,800
	now := start
	g.now = func() time.Time { return now }
	failed := errors.New("admission webhook denied the request")

	g.recordSync("shop/web", failed)
	now = start.Add(time.Minute)
	g.recordSync("shop/web", failed) // still failing since the first
	g.recordSync("shop/api", failed)
	g.recordSync("shop/cart", nil)
	want := `
# HELP gray_controller_rollout_sync_failing_since_seconds When the gray Deployment's syncs began to fail, in Unix seconds; only while its last sync failed.
# TYPE gray_controller_rollout_sync_failing_since_seconds gauge
gray_controller_rollout_sync_failing_since_seconds{deployment="api",namespace="shop"} 1.79653686e+09
gray_controller_rollout_sync_failing_since_seconds{deployment="web",namespace="shop"} 1.7965368e+09
`
	if err := testutil.GatherAndCompare(r, strings.NewReader(want), "gray_controller_rollout_sync_failing_since_seconds"); err != nil {
		t.Error(err)
	}

	g.recordSync("shop/web", nil) // a success ends it
	g.setPhase("shop/api", "")    // deleted, or no longer gray
	if n, err := testutil.GatherAndCount(r, "gray_controller_rollout_sync_failing_since_seconds"); err != nil || n != 0 {
		t.Errorf("after a success and a forget: %d series (%v), want none", n, err)
	}
	now = start.Add(time.Hour)
	g.recordSync("shop/web", failed) // failing again: since now
	if got := testutil.ToFloat64(g.failingSince.WithLabelValues("shop", "web")); got != float64(now.Unix()) {
		t.Errorf("failing again since %v, want %v", got, now.Unix())
	}
}
