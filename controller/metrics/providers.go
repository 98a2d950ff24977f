package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// providerDurationBuckets run from 5ms to about 41s, doubling: a Prometheus query answers in
// milliseconds, a webhook may run a smoke test, and the providers' timeouts (10s by default)
// fall inside.
var providerDurationBuckets = prometheus.ExponentialBuckets(0.005, 2, 14)

// providerMetrics are the gate measurements by provider (docs/gates.md): how many each
// answered, how long it took, and how many wait for or hold one of its slots. Providers are the
// cluster admin's, a handful, so the provider label stays small.
type providerMetrics struct {
	measurements *prometheus.CounterVec
	duration     *prometheus.HistogramVec
	inFlight     *prometheus.GaugeVec
	waiting      *prometheus.GaugeVec
}

func newProviderMetrics() *providerMetrics {
	labels := []string{"provider", "type"}
	return &providerMetrics{
		measurements: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "gate_provider_measurements_total",
			Help: "Gate measurements sent to a provider, by the outcome they gave (Error: no usable answer).",
		}, append(labels, "outcome")),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Name: "gate_provider_measurement_duration_seconds",
			Help:    "Time a provider took to answer one gate measurement, its timeout included.",
			Buckets: providerDurationBuckets,
		}, labels),
		inFlight: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: namespace, Name: "gate_provider_in_flight",
			Help: "Gate measurements a provider is answering now (at most its concurrency).",
		}, labels),
		waiting: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: namespace, Name: "gate_provider_waiting",
			Help: "Gate measurements waiting for one of a provider's slots: above zero for long, the provider is the bottleneck.",
		}, labels),
	}
}

var providersGlobal = newProviderMetrics()

func init() {
	global.registry.MustRegister(providersGlobal.measurements, providersGlobal.duration, providersGlobal.inFlight, providersGlobal.waiting)
}

// ProviderMeasurement tracks one gate measurement through provider's pool: Waiting when it is
// submitted, then Started once it holds a slot, then Done with its outcome.
type ProviderMeasurement struct {
	m       *providerMetrics
	labels  []string
	started time.Time
}

// WaitForProvider counts a measurement waiting for a slot of provider (of type kind).
func WaitForProvider(provider, kind string) *ProviderMeasurement {
	return providersGlobal.wait(provider, kind)
}

func (m *providerMetrics) wait(provider, kind string) *ProviderMeasurement {
	p := &ProviderMeasurement{m: m, labels: []string{provider, kind}}
	m.waiting.WithLabelValues(p.labels...).Inc()
	return p
}

// Started moves the measurement from waiting to in flight, at now.
func (p *ProviderMeasurement) Started(now time.Time) {
	p.m.waiting.WithLabelValues(p.labels...).Dec()
	p.m.inFlight.WithLabelValues(p.labels...).Inc()
	p.started = now
}

// Cancelled drops a measurement that stopped before it got a slot.
func (p *ProviderMeasurement) Cancelled() {
	p.m.waiting.WithLabelValues(p.labels...).Dec()
}

// Done counts the measurement's outcome and how long it took, at now.
func (p *ProviderMeasurement) Done(now time.Time, outcome grayapi.GateOutcome) {
	p.m.inFlight.WithLabelValues(p.labels...).Dec()
	p.m.duration.WithLabelValues(p.labels...).Observe(now.Sub(p.started).Seconds())
	p.m.measurements.WithLabelValues(append(p.labels, string(outcome))...).Inc()
}
