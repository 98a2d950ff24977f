package metrics

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/workqueue"
	clocktesting "k8s.io/utils/clock/testing"
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

func TestWorkqueueMetrics(t *testing.T) {
	s := newSet()
	clock := clocktesting.NewFakeClock(time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC))
	q := workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Second, time.Minute),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "deployment", MetricsProvider: s.workqueue, Clock: clock},
	)
	defer q.ShutDown()

	q.Add("default/a")
	q.Add("default/b")
	clock.Step(2 * time.Second) // a waits 2s before a worker takes it
	item, _ := q.Get()
	if item != "default/a" {
		t.Fatalf("got %q from the queue, want default/a", item)
	}
	clock.Step(3 * time.Second) // and is worked on for 3s
	q.Done(item)
	q.AddRateLimited("default/c") // retried after its back-off: not added yet

	want := `
# HELP workqueue_adds_total Items added to the workqueue.
# TYPE workqueue_adds_total counter
workqueue_adds_total{name="deployment"} 2
# HELP workqueue_depth Current number of items waiting in the workqueue.
# TYPE workqueue_depth gauge
workqueue_depth{name="deployment"} 1
# HELP workqueue_retries_total Items re-added to the workqueue with rate limiting after an error.
# TYPE workqueue_retries_total counter
workqueue_retries_total{name="deployment"} 1
# HELP workqueue_queue_duration_seconds Time an item waits in the workqueue before a worker takes it.
# TYPE workqueue_queue_duration_seconds histogram
workqueue_queue_duration_seconds_bucket{name="deployment",le="1e-06"} 0
workqueue_queue_duration_seconds_bucket{name="deployment",le="1e-05"} 0
workqueue_queue_duration_seconds_bucket{name="deployment",le="0.0001"} 0
workqueue_queue_duration_seconds_bucket{name="deployment",le="0.001"} 0
workqueue_queue_duration_seconds_bucket{name="deployment",le="0.01"} 0
workqueue_queue_duration_seconds_bucket{name="deployment",le="0.1"} 0
workqueue_queue_duration_seconds_bucket{name="deployment",le="1"} 0
workqueue_queue_duration_seconds_bucket{name="deployment",le="10"} 1
workqueue_queue_duration_seconds_bucket{name="deployment",le="100"} 1
workqueue_queue_duration_seconds_bucket{name="deployment",le="+Inf"} 1
workqueue_queue_duration_seconds_sum{name="deployment"} 2
workqueue_queue_duration_seconds_count{name="deployment"} 1
# HELP workqueue_work_duration_seconds Time a worker spends on one item.
# TYPE workqueue_work_duration_seconds histogram
workqueue_work_duration_seconds_bucket{name="deployment",le="1e-06"} 0
workqueue_work_duration_seconds_bucket{name="deployment",le="1e-05"} 0
workqueue_work_duration_seconds_bucket{name="deployment",le="0.0001"} 0
workqueue_work_duration_seconds_bucket{name="deployment",le="0.001"} 0
workqueue_work_duration_seconds_bucket{name="deployment",le="0.01"} 0
workqueue_work_duration_seconds_bucket{name="deployment",le="0.1"} 0
workqueue_work_duration_seconds_bucket{name="deployment",le="1"} 0
workqueue_work_duration_seconds_bucket{name="deployment",le="10"} 1
workqueue_work_duration_seconds_bucket{name="deployment",le="100"} 1
workqueue_work_duration_seconds_bucket{name="deployment",le="+Inf"} 1
workqueue_work_duration_seconds_sum{name="deployment"} 3
workqueue_work_duration_seconds_count{name="deployment"} 1
`
	if err := testutil.GatherAndCompare(s.registry, strings.NewReader(want),
		"workqueue_adds_total", "workqueue_depth", "workqueue_retries_total",
		"workqueue_queue_duration_seconds", "workqueue_work_duration_seconds"); err != nil {
		t.Error(err)
	}
}

// TestWorkqueueUnfinishedWork holds one item in processing and moves the
// fake clock by the queue's 500ms refresh period: the queue's own goroutine
// then reports 0.5s of unfinished work, which is also the longest runner.
func TestWorkqueueUnfinishedWork(t *testing.T) {
	s := newSet()
	clock := clocktesting.NewFakeClock(time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC))
	q := workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[string]{Name: "deployment", MetricsProvider: s.workqueue, Clock: clock})
	defer q.ShutDown()

	q.Add("default/a")
	item, _ := q.Get()
	defer q.Done(item)

	// The refresh runs on the queue's own goroutine: wait (with a deadline)
	// for its ticker to exist before moving the clock, then for the update.
	poll := func(condition func() bool) error {
		return wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 10*time.Second, true,
			func(context.Context) (bool, error) { return condition(), nil })
	}
	if err := poll(clock.HasWaiters); err != nil {
		t.Fatalf("the queue never started its refresh ticker: %v", err)
	}
	clock.Step(500 * time.Millisecond)

	unfinished := s.workqueue.unfinishedWorkSeconds.WithLabelValues("deployment")
	longest := s.workqueue.longestRunningProcessor.WithLabelValues("deployment")
	err := poll(func() bool {
		return testutil.ToFloat64(unfinished) == 0.5 && testutil.ToFloat64(longest) == 0.5
	})
	if err != nil {
		t.Fatalf("unfinished work %v and longest running %v, want 0.5 and 0.5: %v",
			testutil.ToFloat64(unfinished), testutil.ToFloat64(longest), err)
	}
	if n := testutil.CollectAndCount(s.registry, "workqueue_unfinished_work_seconds", "workqueue_longest_running_processor_seconds"); n != 2 {
		t.Errorf("registry holds %d unfinished-work series, want 2", n)
	}
}

func TestLeaderMetric(t *testing.T) {
	s := newSet()
	m := s.leader.NewLeaderMetric()
	m.On("gray-controller")
	m.SlowpathExercised("gray-controller")
	m.SlowpathExercised("gray-controller")
	m.Off("gray-controller")

	want := `
# HELP leader_election_master_status 1 while this process holds the named leader-election lease, 0 otherwise.
# TYPE leader_election_master_status gauge
leader_election_master_status{name="gray-controller"} 0
# HELP leader_election_slowpath_total Lease renewals that had to re-read the lease from the API server.
# TYPE leader_election_slowpath_total counter
leader_election_slowpath_total{name="gray-controller"} 2
`
	if err := testutil.GatherAndCompare(s.registry, strings.NewReader(want),
		"leader_election_master_status", "leader_election_slowpath_total"); err != nil {
		t.Error(err)
	}
	m.On("gray-controller")
	if got := testutil.ToFloat64(s.leader.status.WithLabelValues("gray-controller")); got != 1 {
		t.Errorf("leader status after On = %v, want 1", got)
	}
}

func histogramCount(t *testing.T, h prometheus.Histogram) uint64 {
	t.Helper()
	var m dto.Metric
	if err := h.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram().GetSampleCount()
}
