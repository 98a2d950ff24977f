// Package metrics owns gray-controller's Prometheus registry (sync outcome and duration of the
// Deployment controller, the gray and per-rollout series) and serves it on /metrics together with
// component-base's legacyregistry, where client-go's workqueue, leader-election and REST client
// metrics and the Go runtime and process collectors are, as in kube-controller-manager.
//
// Loading this package installs component-base's providers into client-go. client-go honours
// only the first provider of each kind and only for queues, electors and clients created
// afterwards; the Deployment controller core imports this package for RecordSync, so all of
// gray-controller's are instrumented.
package metrics

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/component-base/metrics/legacyregistry"
	_ "k8s.io/component-base/metrics/prometheus/clientgo/leaderelection"
	_ "k8s.io/component-base/metrics/prometheus/restclient"
	_ "k8s.io/component-base/metrics/prometheus/workqueue"
)

// namespace prefixes the metrics that belong to gray-controller itself; client-go's keep the
// names kube-controller-manager gives them.
const namespace = "gray_controller"

// Result label values of the sync counter.
const (
	resultSuccess = "success"
	resultError   = "error"
)

// Reasons a sync was deferred because a cache was behind (RecordSyncDeferred): each is the label
// value of one series of gray_controller_sync_deferred_total.
const (
	// DeferredOwnWrite: the cached Deployment is a version our own write replaced.
	DeferredOwnWrite = "own_write"
	// DeferredDeployment: a live read found a newer Deployment than the cached one, or the
	// server refused the first write of a sync for its resourceVersion.
	DeferredDeployment = "deployment"
	// DeferredReplicaSetWrite: a ReplicaSet write of ours is not in the cache yet.
	DeferredReplicaSetWrite = "replicaset_write"
	// DeferredNewReplicaSet: the server has the new ReplicaSet and the cache does not yet.
	DeferredNewReplicaSet = "new_replicaset"
)

var deferredReasons = []string{DeferredOwnWrite, DeferredDeployment, DeferredReplicaSetWrite, DeferredNewReplicaSet}

// syncDurationBuckets run from 1ms to about 16s, doubling: a sync is a few
// lister reads plus at most a handful of API writes, and a sync slower than
// the client's rate limit allows is what an operator needs to see.
var syncDurationBuckets = prometheus.ExponentialBuckets(0.001, 2, 15)

// set is one complete, independent set of metrics on its own registry; the
// package serves one, and tests build fresh ones.
type set struct {
	registry *prometheus.Registry

	syncDuration prometheus.Histogram
	syncs        *prometheus.CounterVec
	deferred     *prometheus.CounterVec
}

func newSet() *set {
	s := &set{
		registry: prometheus.NewRegistry(),
		syncDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: namespace,
			Name:      "sync_duration_seconds",
			Help:      "Time taken by one sync of one Deployment, successful or not.",
			Buckets:   syncDurationBuckets,
		}),
		syncs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace,
			Name:      "sync_total",
			Help:      "Syncs of Deployments by result (success or error).",
		}, []string{"result"}),
		deferred: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace,
			Name:      "sync_deferred_total",
			Help:      "Syncs that did nothing because a cache was behind, by what was behind; the event bringing the newer object syncs again.",
		}, []string{"reason"}),
	}
	// Both results exist from the start so that rate() and alerts on the
	// error series work before the first error.
	s.syncs.WithLabelValues(resultSuccess)
	s.syncs.WithLabelValues(resultError)
	for _, reason := range deferredReasons {
		s.deferred.WithLabelValues(reason)
	}

	// No Go or process collector: legacyregistry has both, and a family served twice fails
	// the scrape.
	s.registry.MustRegister(s.syncDuration, s.syncs, s.deferred)
	return s
}

// recordSync counts one sync and observes how long it took.
func (s *set) recordSync(took time.Duration, err error) {
	s.syncDuration.Observe(took.Seconds())
	result := resultSuccess
	if err != nil {
		result = resultError
	}
	s.syncs.WithLabelValues(result).Inc()
}

var global = newSet()

// RecordSync records one finished sync that began at start: its duration
// and whether it failed. Call it deferred at the top of the sync handler.
func RecordSync(start time.Time, err error) {
	global.recordSync(time.Since(start), err)
}

// RecordSyncDeferred counts one sync deferred for reason (one of the Deferred constants).
func RecordSyncDeferred(reason string) {
	global.deferred.WithLabelValues(reason).Inc()
}

// gatherer is what /metrics serves: our registry, and legacyregistry with client-go's metrics.
var gatherer = prometheus.Gatherers{global.registry, legacyregistry.DefaultGatherer}

// Path is where Handler serves; every other path is 404.
const Path = "/metrics"

// Handler serves gatherer in the Prometheus exposition formats at Path.
func Handler() http.Handler {
	exposition := promhttp.HandlerFor(gatherer, promhttp.HandlerOpts{
		// A failing collector should not hide the others from the scrape.
		ErrorHandling: promhttp.ContinueOnError,
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != Path {
			http.NotFound(w, r)
			return
		}
		exposition.ServeHTTP(w, r)
	})
}
