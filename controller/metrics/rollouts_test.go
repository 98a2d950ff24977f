package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// TestRolloutSeries: one series set per gray Deployment, from its status, at each scrape; a
// Deployment gone from the list takes its series with it. The exposition is written by hand.
func TestRolloutSeries(t *testing.T) {
	// Unix second 1,796,385,510.
	heldAt := metav1.NewTime(time.Date(2026, 12, 4, 11, 58, 30, 0, time.UTC))
	// Unix second 1,796,385,810: a hold of 5m that settled when it was taken.
	holdEnds := heldAt.Add(5 * time.Minute)
	rollouts := []Rollout{
		{Namespace: "shop", Name: "web", Replicas: 10, CanaryAvailable: 2, HoldEnds: &holdEnds, Status: grayapi.Status{Revision: 2, Step: 0, Percent: 20, Target: 2,
			Phase: grayapi.PhaseHeld, HeldAt: &heldAt, Gates: []grayapi.GateStatus{
				{Name: "error-rate", Last: grayapi.GateNoData, Verdict: grayapi.GateCannotTell, Passes: 1, Unsure: 4},
				{Name: "latency", DryRun: true, Last: grayapi.GatePass, Passes: 2}}}},
		{Namespace: "shop", Name: "api", Replicas: 8, CanaryAvailable: 0, Status: grayapi.Status{Revision: 5, Step: 1, Percent: 50, Target: 5,
			Phase: grayapi.PhaseDegraded, Failure: &grayapi.Failure{Reason: grayapi.ReasonProgressDeadlineExceeded}}},
	}
	r := prometheus.NewRegistry()
	r.MustRegister(newRolloutCollector("instead", func() []Rollout { return rollouts }))
	want := `
# HELP gray_controller_rollout_canary_available_replicas Available replicas of the ReplicaSet of the reported revision.
# TYPE gray_controller_rollout_canary_available_replicas gauge
gray_controller_rollout_canary_available_replicas{deployment="api",namespace="shop"} 0
gray_controller_rollout_canary_available_replicas{deployment="web",namespace="shop"} 2
# HELP gray_controller_rollout_gate_info 1 for each gate of the current hold, with its verdict (empty while it measures).
# TYPE gray_controller_rollout_gate_info gauge
gray_controller_rollout_gate_info{deployment="web",dry_run="false",gate="error-rate",namespace="shop",verdict="Inconclusive"} 1
gray_controller_rollout_gate_info{deployment="web",dry_run="true",gate="latency",namespace="shop",verdict=""} 1
# HELP gray_controller_rollout_gate_outcomes Outcomes of a gate of the current hold so far, by kind: pass, fail, unsure (Inconclusive, NoData and Error).
# TYPE gray_controller_rollout_gate_outcomes gauge
gray_controller_rollout_gate_outcomes{deployment="web",gate="error-rate",kind="fail",namespace="shop"} 0
gray_controller_rollout_gate_outcomes{deployment="web",gate="error-rate",kind="pass",namespace="shop"} 1
gray_controller_rollout_gate_outcomes{deployment="web",gate="error-rate",kind="unsure",namespace="shop"} 4
gray_controller_rollout_gate_outcomes{deployment="web",gate="latency",kind="fail",namespace="shop"} 0
gray_controller_rollout_gate_outcomes{deployment="web",gate="latency",kind="pass",namespace="shop"} 2
gray_controller_rollout_gate_outcomes{deployment="web",gate="latency",kind="unsure",namespace="shop"} 0
# HELP gray_controller_rollout_held_since_seconds When the rollout reached its current hold point, in Unix seconds; only while Held.
# TYPE gray_controller_rollout_held_since_seconds gauge
gray_controller_rollout_held_since_seconds{deployment="web",namespace="shop"} 1.79638551e+09
# HELP gray_controller_rollout_hold_ends_seconds When the current hold moves on by itself (its hold point's own duration or kubegray.io/hold-for, recorded when it settled), in Unix seconds; only while such a hold stands.
# TYPE gray_controller_rollout_hold_ends_seconds gauge
gray_controller_rollout_hold_ends_seconds{deployment="web",namespace="shop"} 1.79638581e+09
# HELP gray_controller_rollout_info 1 for each gray Deployment: its mode, phase and reason (a failure's, or GateInconclusive while a hold waits on a gate that could not tell).
# TYPE gray_controller_rollout_info gauge
gray_controller_rollout_info{deployment="api",mode="instead",namespace="shop",phase="Degraded",reason="ProgressDeadlineExceeded"} 1
gray_controller_rollout_info{deployment="web",mode="instead",namespace="shop",phase="Held",reason="GateInconclusive"} 1
# HELP gray_controller_rollout_percent The percent of that hold point (100 when going to the end).
# TYPE gray_controller_rollout_percent gauge
gray_controller_rollout_percent{deployment="api",namespace="shop"} 50
gray_controller_rollout_percent{deployment="web",namespace="shop"} 20
# HELP gray_controller_rollout_replicas The Deployment's replicas (spec.replicas): the total the canary is a share of.
# TYPE gray_controller_rollout_replicas gauge
gray_controller_rollout_replicas{deployment="api",namespace="shop"} 8
gray_controller_rollout_replicas{deployment="web",namespace="shop"} 10
# HELP gray_controller_rollout_step The hold point the rollout is at or going to, 1 for the first.
# TYPE gray_controller_rollout_step gauge
gray_controller_rollout_step{deployment="api",namespace="shop"} 2
gray_controller_rollout_step{deployment="web",namespace="shop"} 1
# HELP gray_controller_rollout_target_replicas The new revision's replicas that percent means for the current replica count.
# TYPE gray_controller_rollout_target_replicas gauge
gray_controller_rollout_target_replicas{deployment="api",namespace="shop"} 5
gray_controller_rollout_target_replicas{deployment="web",namespace="shop"} 2
`
	if err := testutil.GatherAndCompare(r, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
	rollouts = rollouts[1:]
	if n, err := testutil.GatherAndCount(r, "gray_controller_rollout_info", "gray_controller_rollout_gate_info", "gray_controller_rollout_held_since_seconds"); err != nil || n != 1 {
		t.Errorf("after web left: %d series of info, gate_info and held_since_seconds (%v), want api's info only", n, err)
	}
}
