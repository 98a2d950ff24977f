package metrics

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2/ktesting"
)

func TestRecordSync(t *testing.T) {
	s := newSet()
	s.recordSync(250*time.Millisecond, nil)
	s.recordSync(500*time.Millisecond, nil)
	s.recordSync(3*time.Second, errors.New("conflict"))

	// 0.25 and 0.5 fall in the 0.256 and 0.512 buckets, 3 in the 4.096 one;
	// the sum 3.75 is exact in binary floating point.
	want := `
# HELP gray_controller_sync_duration_seconds Time taken by one sync of one Deployment, successful or not.
# TYPE gray_controller_sync_duration_seconds histogram
gray_controller_sync_duration_seconds_bucket{le="0.001"} 0
gray_controller_sync_duration_seconds_bucket{le="0.002"} 0
gray_controller_sync_duration_seconds_bucket{le="0.004"} 0
gray_controller_sync_duration_seconds_bucket{le="0.008"} 0
gray_controller_sync_duration_seconds_bucket{le="0.016"} 0
gray_controller_sync_duration_seconds_bucket{le="0.032"} 0
gray_controller_sync_duration_seconds_bucket{le="0.064"} 0
gray_controller_sync_duration_seconds_bucket{le="0.128"} 0
gray_controller_sync_duration_seconds_bucket{le="0.256"} 1
gray_controller_sync_duration_seconds_bucket{le="0.512"} 2
gray_controller_sync_duration_seconds_bucket{le="1.024"} 2
gray_controller_sync_duration_seconds_bucket{le="2.048"} 2
gray_controller_sync_duration_seconds_bucket{le="4.096"} 3
gray_controller_sync_duration_seconds_bucket{le="8.192"} 3
gray_controller_sync_duration_seconds_bucket{le="16.384"} 3
gray_controller_sync_duration_seconds_bucket{le="+Inf"} 3
gray_controller_sync_duration_seconds_sum 3.75
gray_controller_sync_duration_seconds_count 3
# HELP gray_controller_sync_total Syncs of Deployments by result (success or error).
# TYPE gray_controller_sync_total counter
gray_controller_sync_total{result="error"} 1
gray_controller_sync_total{result="success"} 2
`
	if err := testutil.GatherAndCompare(s.registry, strings.NewReader(want),
		"gray_controller_sync_duration_seconds", "gray_controller_sync_total"); err != nil {
		t.Error(err)
	}
}

func TestRecordSyncBeforeAnySyncExposesBothResults(t *testing.T) {
	s := newSet()
	want := `
# HELP gray_controller_sync_total Syncs of Deployments by result (success or error).
# TYPE gray_controller_sync_total counter
gray_controller_sync_total{result="error"} 0
gray_controller_sync_total{result="success"} 0
`
	if err := testutil.GatherAndCompare(s.registry, strings.NewReader(want), "gray_controller_sync_total"); err != nil {
		t.Error(err)
	}
}

// Every reason's series exists before its first deferral (an alert on its rate works from the
// start), and a deferral counts under its own reason only.
func TestRecordSyncDeferred(t *testing.T) {
	before := testutil.ToFloat64(global.deferred.WithLabelValues(DeferredReplicaSetWrite))
	RecordSyncDeferred(DeferredReplicaSetWrite)
	if got := testutil.ToFloat64(global.deferred.WithLabelValues(DeferredReplicaSetWrite)) - before; got != 1 {
		t.Errorf("replicaset_write deferrals grew by %v, want 1", got)
	}
	want := `
# HELP gray_controller_sync_deferred_total Syncs that did nothing because a cache was behind, by what was behind; the event bringing the newer object syncs again.
# TYPE gray_controller_sync_deferred_total counter
gray_controller_sync_deferred_total{reason="deployment"} 0
gray_controller_sync_deferred_total{reason="new_replicaset"} 0
gray_controller_sync_deferred_total{reason="own_write"} 0
gray_controller_sync_deferred_total{reason="replicaset_write"} 0
`
	if err := testutil.GatherAndCompare(newSet().registry, strings.NewReader(want), "gray_controller_sync_deferred_total"); err != nil {
		t.Error(err)
	}
}

// TestRecordSyncUsesServedRegistry checks the package-level function feeds
// the registry behind Handler, not some other set.
func TestRecordSyncUsesServedRegistry(t *testing.T) {
	errorsBefore := testutil.ToFloat64(global.syncs.WithLabelValues(resultError))
	countBefore := histogramCount(t, global.syncDuration)

	RecordSync(time.Now().Add(-time.Second), errors.New("boom"))

	if got := testutil.ToFloat64(global.syncs.WithLabelValues(resultError)) - errorsBefore; got != 1 {
		t.Errorf("error syncs grew by %v, want 1", got)
	}
	if got := histogramCount(t, global.syncDuration) - countBefore; got != 1 {
		t.Errorf("sync duration observations grew by %v, want 1", got)
	}

	rec := httptest.NewRecorder()
	Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /metrics: status %d", rec.Code)
	}
	for _, name := range []string{
		"gray_controller_sync_total{result=\"error\"}",
		"gray_controller_sync_duration_seconds_count",
		"go_goroutines",
		"process_start_time_seconds",
	} {
		if !strings.Contains(rec.Body.String(), name) {
			t.Errorf("GET /metrics does not serve %s", name)
		}
	}
}

// served is one metric family as /metrics serves it: its type and the label names of its
// series (histogram buckets' le apart).
type served struct {
	typ    dto.MetricType
	labels string
}

// TestHandlerServesClientGoMetrics pins client-go's families on /metrics, with the names and
// labels kube-controller-manager serves them under: a work queue, a leader election and a
// request through a client configured as run.go's newClient configures it instrument themselves,
// with nothing to pass them.
func TestHandlerServesClientGoMetrics(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	const name = "metrics-test"
	host := instrumentClientGo(t, ctx, name)

	rec := httptest.NewRecorder()
	Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /metrics: status %d", rec.Code)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(rec.Body)
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}

	ours := map[string]string{"name": name, "host": host}
	want := map[string]served{
		"workqueue_adds_total":                        {dto.MetricType_COUNTER, "name"},
		"workqueue_depth":                             {dto.MetricType_GAUGE, "name"},
		"workqueue_queue_duration_seconds":            {dto.MetricType_HISTOGRAM, "name"},
		"workqueue_work_duration_seconds":             {dto.MetricType_HISTOGRAM, "name"},
		"workqueue_unfinished_work_seconds":           {dto.MetricType_GAUGE, "name"},
		"workqueue_longest_running_processor_seconds": {dto.MetricType_GAUGE, "name"},
		"workqueue_retries_total":                     {dto.MetricType_COUNTER, "name"},
		"leader_election_master_status":               {dto.MetricType_GAUGE, "name"},
		"rest_client_requests_total":                  {dto.MetricType_COUNTER, "code,host,method"},
		"rest_client_request_duration_seconds":        {dto.MetricType_HISTOGRAM, "host,verb"},
		"rest_client_rate_limiter_duration_seconds":   {dto.MetricType_HISTOGRAM, "host,verb"},
		"rest_client_response_size_bytes":             {dto.MetricType_HISTOGRAM, "host,verb"},
	}
	for family, w := range want {
		mf := families[family]
		if mf == nil {
			t.Errorf("GET /metrics does not serve %s", family)
			continue
		}
		if mf.GetType() != w.typ {
			t.Errorf("%s is a %v, want a %v", family, mf.GetType(), w.typ)
		}
		m := seriesWith(mf, ours)
		if m == nil {
			t.Errorf("%s has no series of this test's queue, lease or API server", family)
			continue
		}
		if got := labelNames(m); got != w.labels {
			t.Errorf("%s is labelled %s, want %s", family, got, w.labels)
		}
	}

	requests := seriesWith(families["rest_client_requests_total"], ours)
	if got := labelValues(requests); requests == nil || got != "code=200,host="+host+",method=GET" || requests.GetCounter().GetValue() != 1 {
		t.Errorf("rest_client_requests_total has %s %v, want one request with code=200,host=%s,method=GET",
			got, requests.GetCounter().GetValue(), host)
	}
	throttled := seriesWith(families["rest_client_rate_limiter_duration_seconds"], ours)
	if got := throttled.GetHistogram().GetSampleCount(); got != 1 {
		t.Errorf("rest_client_rate_limiter_duration_seconds counted %d waits for the rate limiter, want 1", got)
	}
}

// TestServedFamiliesOnce checks that our registry and legacyregistry share no family: the same
// family gathered from both (the Go collector in each, say) would fail the scrape.
func TestServedFamiliesOnce(t *testing.T) {
	ours, err := global.registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, mf := range ours {
		names[mf.GetName()] = true
	}
	for _, mf := range theirs {
		if names[mf.GetName()] {
			t.Errorf("%s is in our registry and in legacyregistry", mf.GetName())
		}
	}
	if _, err := gatherer.Gather(); err != nil {
		t.Errorf("gathering what /metrics serves: %v", err)
	}
}

// instrumentClientGo makes client-go's series appear, as gray-controller's own client, queue and
// elector make them: a request through a client configured as run.go's newClient configures it
// (to a stand-in API server, whose host it returns), a work queue named name that queues, serves
// and retries an item, and a leader election for the Lease name.
func instrumentClientGo(t *testing.T, ctx context.Context, name string) (host string) {
	t.Helper()
	apiServer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || r.URL.Path != "/api/v1/namespaces/default/pods/web" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"apiVersion":"v1","kind":"Pod","metadata":{"namespace":"default","name":"web"}}`)
	}))
	defer apiServer.Close()
	client, err := kubernetes.NewForConfig(&rest.Config{
		Host: apiServer.URL, QPS: 20, Burst: 30, UserAgent: "gray-controller/test",
		ContentConfig: rest.ContentConfig{
			ContentType:        runtime.ContentTypeProtobuf,
			AcceptContentTypes: runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON,
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Pods("default").Get(ctx, "web", metav1.GetOptions{}); err != nil {
		t.Fatalf("getting pod default/web from the stand-in API server: %v", err)
	}

	q := workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Hour, time.Hour),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: name},
	)
	defer q.ShutDown()
	q.Add("default/web")
	item, _ := q.Get()
	q.Done(item)
	q.AddRateLimited(item)

	lead(t, ctx, name)
	return strings.TrimPrefix(apiServer.URL, "http://")
}

// lead runs a leader election for the Lease name on a fake API server until it leads.
func lead(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Namespace: "gray-system", Name: name},
			Client:     fake.NewClientset().CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: "test"},
		},
		Name:          name,
		LeaseDuration: 15 * time.Second,
		RenewDeadline: 10 * time.Second,
		RetryPeriod:   2 * time.Second,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(context.Context) { cancel() },
			OnStoppedLeading: func() {},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	elector.Run(ctx)
}

// seriesWith returns mf's first series whose labels include one of want's pairs.
func seriesWith(mf *dto.MetricFamily, want map[string]string) *dto.Metric {
	for _, m := range mf.GetMetric() {
		for _, l := range m.GetLabel() {
			if v, ok := want[l.GetName()]; ok && v == l.GetValue() {
				return m
			}
		}
	}
	return nil
}

func labelNames(m *dto.Metric) string {
	var names []string
	for _, l := range m.GetLabel() {
		names = append(names, l.GetName())
	}
	sort.Strings(names)
	return strings.Join(names, ",")
}

func labelValues(m *dto.Metric) string {
	var pairs []string
	for _, l := range m.GetLabel() {
		pairs = append(pairs, l.GetName()+"="+l.GetValue())
	}
	sort.Strings(pairs)
	return strings.Join(pairs, ",")
}

func histogramCount(t *testing.T, h prometheus.Histogram) uint64 {
	t.Helper()
	var m dto.Metric
	if err := h.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram().GetSampleCount()
}
