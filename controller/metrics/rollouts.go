package metrics

import (
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// Rollout is one gray Deployment as its series describe it: its last reported status, its
// replicas (spec.replicas), and the available replicas of the ReplicaSet at the status' revision
// (the canary while it rolls).
type Rollout struct {
	Namespace, Name string
	Status          grayapi.Status
	Replicas        int32
	CanaryAvailable int32
	// HoldEnds is when the current hold moves on by itself (grayapi.TimedResumeAt); nil unless a
	// timed hold stands.
	HoldEnds *time.Time
}

// rolloutCollector makes the per-rollout series at each scrape from the gray Deployments the
// controller's cache has: a series lives exactly as long as its Deployment is gray there, so
// nothing has to be forgotten when one is deleted or leaves gray, and the count of series is
// bounded by the gray Deployments (a handful each, one more per gate).
type rolloutCollector struct {
	mode string
	list func() []Rollout

	info, step, percent, target, replicas, available, heldSince, holdEnds, gate, gateCounts *prometheus.Desc
}

func newRolloutCollector(mode string, list func() []Rollout) *rolloutCollector {
	rollout := []string{"namespace", "deployment"}
	desc := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName(namespace, "rollout", name), help, append(rollout, labels...), nil)
	}
	return &rolloutCollector{mode: mode, list: list,
		info: desc("info", "1 for each gray Deployment: its mode, phase and reason (a failure's, or GateInconclusive while a hold waits on a gate that could not tell).",
			"mode", "phase", "reason"),
		step:    desc("step", "The hold point the rollout is at or going to, 1 for the first."),
		percent: desc("percent", "The percent of that hold point (100 when going to the end)."),
		target:  desc("target_replicas", "The new revision's replicas that percent means for the current replica count."),
		// The canary's share is target_replicas or canary_available_replicas over it, which the
		// percent alone does not give: the target is rounded to whole replicas.
		replicas:  desc("replicas", "The Deployment's replicas (spec.replicas): the total the canary is a share of."),
		available: desc("canary_available_replicas", "Available replicas of the ReplicaSet of the reported revision."),
		// A time, not a duration, as Prometheus' guidance asks: read from the recorded status, it is
		// the same whichever replica leads, and time() - it is the time held.
		heldSince: desc("held_since_seconds", "When the rollout reached its current hold point, in Unix seconds; only while Held."),
		// A time as well: time() - it is the time left, the same whichever replica leads.
		holdEnds: desc("hold_ends_seconds", "When the current hold moves on by itself (its hold point's own duration or kubegray.io/hold-for, recorded when it settled), in Unix seconds; only while such a hold stands."),
		// No label for the last outcome: it would make a new series at each measurement.
		gate: desc("gate_info", "1 for each gate of the current hold, with its verdict (empty while it measures).",
			"gate", "verdict", "dry_run"),
		gateCounts: desc("gate_outcomes", "Outcomes of a gate of the current hold so far, by kind: pass, fail, unsure (Inconclusive, NoData and Error).",
			"gate", "kind"),
	}
}

func (c *rolloutCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.info, c.step, c.percent, c.target, c.replicas, c.available, c.heldSince, c.holdEnds, c.gate, c.gateCounts} {
		ch <- d
	}
}

func (c *rolloutCollector) Collect(ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	for _, r := range c.list() {
		st := r.Status
		gauge(c.info, 1, r.Namespace, r.Name, c.mode, string(st.Phase), rolloutReason(st))
		gauge(c.step, float64(st.Step+1), r.Namespace, r.Name)
		gauge(c.percent, float64(st.Percent), r.Namespace, r.Name)
		gauge(c.target, float64(st.Target), r.Namespace, r.Name)
		gauge(c.replicas, float64(r.Replicas), r.Namespace, r.Name)
		gauge(c.available, float64(r.CanaryAvailable), r.Namespace, r.Name)
		if st.Phase == grayapi.PhaseHeld && st.HeldAt != nil {
			gauge(c.heldSince, float64(st.HeldAt.Unix()), r.Namespace, r.Name)
		}
		if r.HoldEnds != nil {
			gauge(c.holdEnds, float64(r.HoldEnds.Unix()), r.Namespace, r.Name)
		}
		for _, g := range st.Gates {
			gauge(c.gate, 1, r.Namespace, r.Name, g.Name, string(g.Verdict), strconv.FormatBool(g.DryRun))
			gauge(c.gateCounts, float64(g.Passes), r.Namespace, r.Name, g.Name, "pass")
			gauge(c.gateCounts, float64(g.Fails), r.Namespace, r.Name, g.Name, "fail")
			gauge(c.gateCounts, float64(g.Unsure), r.Namespace, r.Name, g.Name, "unsure")
		}
	}
}

// rolloutReason is the info series' reason: the failure's, else GateInconclusive while a gate
// that is not a dry run could not tell.
func rolloutReason(st grayapi.Status) string {
	if st.Failure != nil {
		return st.Failure.Reason
	}
	for _, g := range st.Gates {
		if !g.DryRun && g.Verdict == grayapi.GateCannotTell {
			return grayapi.ReasonGateInconclusive
		}
	}
	return ""
}

// registeredRollouts is the collector RegisterRollouts last registered.
var (
	registeredMu       sync.Mutex
	registeredRollouts *rolloutCollector
)

// RegisterRollouts adds the per-rollout series of the controller in mode, read from list at
// every scrape. gray-controller calls it each time it starts leading, with its new cache: a
// standby's cache would describe the same rollouts again, and a cache from an earlier term is
// stopped.
func RegisterRollouts(mode string, list func() []Rollout) error {
	registeredMu.Lock()
	defer registeredMu.Unlock()
	if registeredRollouts != nil {
		global.registry.Unregister(registeredRollouts)
	}
	c := newRolloutCollector(mode, list)
	if err := global.registry.Register(c); err != nil {
		return err
	}
	registeredRollouts = c
	return nil
}
