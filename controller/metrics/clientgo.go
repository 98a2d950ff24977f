package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/util/workqueue"
)

// queueDurationBuckets run from 1µs to 100s by powers of ten: queue waits
// range from immediate pick-up to the rate limiter's longest back-off.
// Written out rather than computed, because repeated multiplication by ten
// gives bounds like 9.999999999999999e-06 in the exposition.
var queueDurationBuckets = []float64{1e-6, 1e-5, 1e-4, 1e-3, 0.01, 0.1, 1, 10, 100}

// workqueueProvider implements workqueue.MetricsProvider with one metric
// vector per kind, labelled by queue name, so that any number of queues (and
// a queue re-created with the same name) share the registered collectors.
type workqueueProvider struct {
	depth                   *prometheus.GaugeVec
	adds                    *prometheus.CounterVec
	latency                 *prometheus.HistogramVec
	workDuration            *prometheus.HistogramVec
	unfinishedWorkSeconds   *prometheus.GaugeVec
	longestRunningProcessor *prometheus.GaugeVec
	retries                 *prometheus.CounterVec
}

var _ workqueue.MetricsProvider = workqueueProvider{}

func newWorkqueueProvider() workqueueProvider {
	const subsystem = "workqueue"
	name := []string{"name"}
	return workqueueProvider{
		depth: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Subsystem: subsystem, Name: "depth",
			Help: "Current number of items waiting in the workqueue.",
		}, name),
		adds: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: subsystem, Name: "adds_total",
			Help: "Items added to the workqueue.",
		}, name),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Subsystem: subsystem, Name: "queue_duration_seconds",
			Help:    "Time an item waits in the workqueue before a worker takes it.",
			Buckets: queueDurationBuckets,
		}, name),
		workDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Subsystem: subsystem, Name: "work_duration_seconds",
			Help:    "Time a worker spends on one item.",
			Buckets: queueDurationBuckets,
		}, name),
		unfinishedWorkSeconds: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Subsystem: subsystem, Name: "unfinished_work_seconds",
			Help: "Sum of the ages of the items being worked on; a value that keeps growing means a stuck worker.",
		}, name),
		longestRunningProcessor: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Subsystem: subsystem, Name: "longest_running_processor_seconds",
			Help: "Age of the oldest item being worked on.",
		}, name),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: subsystem, Name: "retries_total",
			Help: "Items re-added to the workqueue with rate limiting after an error.",
		}, name),
	}
}

func (p workqueueProvider) register(r prometheus.Registerer) {
	r.MustRegister(p.depth, p.adds, p.latency, p.workDuration,
		p.unfinishedWorkSeconds, p.longestRunningProcessor, p.retries)
}

func (p workqueueProvider) NewDepthMetric(name string) workqueue.GaugeMetric {
	return p.depth.WithLabelValues(name)
}

func (p workqueueProvider) NewAddsMetric(name string) workqueue.CounterMetric {
	return p.adds.WithLabelValues(name)
}

func (p workqueueProvider) NewLatencyMetric(name string) workqueue.HistogramMetric {
	return p.latency.WithLabelValues(name)
}

func (p workqueueProvider) NewWorkDurationMetric(name string) workqueue.HistogramMetric {
	return p.workDuration.WithLabelValues(name)
}

func (p workqueueProvider) NewUnfinishedWorkSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return p.unfinishedWorkSeconds.WithLabelValues(name)
}

func (p workqueueProvider) NewLongestRunningProcessorSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return p.longestRunningProcessor.WithLabelValues(name)
}

func (p workqueueProvider) NewRetriesMetric(name string) workqueue.CounterMetric {
	return p.retries.WithLabelValues(name)
}

// leaderProvider implements leaderelection.MetricsProvider: a gauge that is 1
// while this process holds the named lease, so a dashboard shows which
// replica is doing the work.
type leaderProvider struct {
	status   *prometheus.GaugeVec
	slowpath *prometheus.CounterVec
}

var _ leaderelection.MetricsProvider = leaderProvider{}

func newLeaderProvider() leaderProvider {
	name := []string{"name"}
	return leaderProvider{
		status: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "leader_election_master_status",
			Help: "1 while this process holds the named leader-election lease, 0 otherwise.",
		}, name),
		slowpath: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "leader_election_slowpath_total",
			Help: "Lease renewals that had to re-read the lease from the API server.",
		}, name),
	}
}

func (p leaderProvider) register(r prometheus.Registerer) {
	r.MustRegister(p.status, p.slowpath)
}

func (p leaderProvider) NewLeaderMetric() leaderelection.LeaderMetric {
	return leaderMetric(p)
}

type leaderMetric leaderProvider

func (m leaderMetric) On(name string)  { m.status.WithLabelValues(name).Set(1) }
func (m leaderMetric) Off(name string) { m.status.WithLabelValues(name).Set(0) }
func (m leaderMetric) SlowpathExercised(name string) {
	m.slowpath.WithLabelValues(name).Inc()
}
