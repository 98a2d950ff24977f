package metrics

import (
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// timeToHoldBuckets run from 0.5s to about 68 minutes, doubling: reaching the
// first hold point takes a few sync rounds plus however long the new pods take
// to start, and slow image pulls are exactly what this histogram should show.
var timeToHoldBuckets = prometheus.ExponentialBuckets(0.5, 2, 14)

// grayPhases are the phases the gauge always exposes, so that a dashboard
// shows 0 rather than no data.
var grayPhases = []grayapi.Phase{
	grayapi.PhaseProgressing, grayapi.PhaseHeld, grayapi.PhaseComplete,
	grayapi.PhaseRolledBack, grayapi.PhaseDegraded, grayapi.PhaseInvalid, grayapi.PhaseAborted,
}

// rolloutEnds are the phases in which a rollout ends, the outcomes the rollouts counter counts.
var rolloutEnds = []grayapi.Phase{grayapi.PhaseComplete, grayapi.PhaseAborted, grayapi.PhaseRolledBack}

// grayMetrics counts gray rollouts. The gauge and the outcomes are derived from
// the last phase reported per Deployment, so a Deployment moves between phases
// instead of being counted twice.
type grayMetrics struct {
	mu     sync.Mutex
	phases map[string]grayapi.Phase
	// failing are the keys that have a failingSince series; now is its clock (tests set it).
	failing map[string]bool
	now     func() time.Time

	deployments  *prometheus.GaugeVec
	rollouts     *prometheus.CounterVec
	holds        prometheus.Counter
	timeToHold   prometheus.Histogram
	gates        *prometheus.CounterVec
	failingSince *prometheus.GaugeVec
}

// gateOutcomes are the outcomes the gate counter always exposes.
var gateOutcomes = []grayapi.GateOutcome{grayapi.GatePass, grayapi.GateFail, grayapi.GateInconclusive, grayapi.GateNoData, grayapi.GateError}

func newGrayMetrics() *grayMetrics {
	g := &grayMetrics{
		phases:  map[string]grayapi.Phase{},
		failing: map[string]bool{},
		now:     time.Now,
		deployments: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: namespace,
			Name:      "gray_deployments",
			Help:      "Gray Deployments (carrying kubegray.io/percent) by the phase of their rollout.",
		}, []string{"phase"}),
		rollouts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace,
			Name:      "gray_rollouts_total",
			Help:      "Gray rollouts that ended, by the phase they ended in: Complete, Aborted or RolledBack.",
		}, []string{"result"}),
		holds: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace,
			Name:      "gray_holds_total",
			Help:      "Hold points reached: each time the controller paused a gray rollout at its target.",
		}),
		timeToHold: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: namespace,
			Name:      "gray_time_to_hold_seconds",
			Help:      "Time from the creation of a gray rollout's new ReplicaSet to the pause at its first hold point.",
			Buckets:   timeToHoldBuckets,
		}),
		gates: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace,
			Name:      "gray_gate_measurements_total",
			Help:      "Gate measurements of gray holds (docs/gates.md) by outcome, dry runs apart.",
		}, []string{"outcome", "dry_run"}),
		// Per rollout, and named as the rollout series are, but kept here: it is known from the
		// syncs, not from the cache a scrape reads, and forgotten with the phase.
		failingSince: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: namespace,
			Name:      "rollout_sync_failing_since_seconds",
			Help:      "When the gray Deployment's syncs began to fail, in Unix seconds; only while its last sync failed.",
		}, []string{"namespace", "deployment"}),
	}
	for _, p := range grayPhases {
		g.deployments.WithLabelValues(string(p))
	}
	for _, p := range rolloutEnds {
		g.rollouts.WithLabelValues(string(p))
	}
	for _, o := range gateOutcomes {
		g.gates.WithLabelValues(string(o), "false")
		g.gates.WithLabelValues(string(o), "true")
	}
	return g
}

func (g *grayMetrics) register(r *prometheus.Registry) {
	r.MustRegister(g.deployments, g.rollouts, g.holds, g.timeToHold, g.gates, g.failingSince)
}

// setPhase records the current phase of the Deployment with the given key, and
// counts its rollout's outcome when it ends; an empty phase forgets it (and its
// failing syncs).
func (g *grayMetrics) setPhase(key string, phase grayapi.Phase) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if phase == "" {
		g.forgetFailing(key)
	}
	old, known := g.phases[key]
	if known && old == phase {
		return
	}
	if known {
		g.deployments.WithLabelValues(string(old)).Dec()
		delete(g.phases, key)
		if ends(old, phase) {
			g.rollouts.WithLabelValues(string(phase)).Inc()
		}
	}
	if phase != "" {
		g.phases[key] = phase
		g.deployments.WithLabelValues(string(phase)).Inc()
	}
}

// ends reports whether a rollout in flight (Progressing, Held, Degraded or Invalid) ended by
// moving from phase from to phase to. Only a change this process saw counts: a phase seen first
// (by a new leader, say) was counted, if it was an end, by the leader that saw the change. From
// Aborted or RolledBack nothing ends again: the rollout already has its outcome, and a rollback's
// Complete is the end of going back. Degraded is no end: the rollout waits for a person or
// on-failure, which end it Aborted or RolledBack.
func ends(from, to grayapi.Phase) bool {
	switch from {
	case grayapi.PhaseProgressing, grayapi.PhaseHeld, grayapi.PhaseDegraded, grayapi.PhaseInvalid:
		return slices.Contains(rolloutEnds, to)
	}
	return false
}

// recordSync notes whether a sync of the gray Deployment with the given key failed: its failing
// series begins at the first failure after a success and ends at the next success.
func (g *grayMetrics) recordSync(key string, err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err == nil {
		g.forgetFailing(key)
		return
	}
	if g.failing[key] {
		return
	}
	namespace, name, _ := strings.Cut(key, "/")
	g.failing[key] = true
	g.failingSince.WithLabelValues(namespace, name).Set(float64(g.now().Unix()))
}

// forgetFailing drops the failing series of key, if it has one; g.mu is held.
func (g *grayMetrics) forgetFailing(key string) {
	if !g.failing[key] {
		return
	}
	namespace, name, _ := strings.Cut(key, "/")
	g.failingSince.DeleteLabelValues(namespace, name)
	delete(g.failing, key)
}

// recordHold counts one hold; firstHoldAfter is the time from the rollout's
// start, observed only for the first hold point of a rollout (negative: none).
func (g *grayMetrics) recordHold(firstHoldAfter time.Duration) {
	g.holds.Inc()
	if firstHoldAfter >= 0 {
		g.timeToHold.Observe(firstHoldAfter.Seconds())
	}
}

var grayGlobal = newGrayMetrics()

func init() {
	grayGlobal.register(global.registry)
}

// SetGrayPhase records the phase of the gray Deployment with the given
// namespace/name key for the gray_deployments gauge.
func SetGrayPhase(key string, phase grayapi.Phase) {
	grayGlobal.setPhase(key, phase)
}

// ForgetGray drops a Deployment that was deleted or is no longer gray from the
// gray_deployments gauge and the failing syncs. Forgetting an unknown key does
// nothing.
func ForgetGray(key string) {
	grayGlobal.setPhase(key, "")
}

// RecordGraySync records the result of a sync of the gray Deployment with the
// given namespace/name key for its rollout_sync_failing_since_seconds series.
func RecordGraySync(key string, err error) {
	grayGlobal.recordSync(key, err)
}

// RecordGrayHold counts a hold point reached. For the first hold point of a
// rollout, pass the time since the rollout started (its new ReplicaSet was
// created); for later ones, which include the time people took to resume,
// pass a negative duration.
func RecordGrayHold(firstHoldAfter time.Duration) {
	grayGlobal.recordHold(firstHoldAfter)
}

// RecordGateMeasurement counts one gate measurement's outcome.
func RecordGateMeasurement(outcome grayapi.GateOutcome, dryRun bool) {
	grayGlobal.gates.WithLabelValues(string(outcome), strconv.FormatBool(dryRun)).Inc()
}
