package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// TestProviderMeasurements follows three measurements of one provider: one done in 1.5 s, one in
// flight, one waiting, and a webhook's cancelled wait; the counts are written by hand.
func TestProviderMeasurements(t *testing.T) {
	m := newProviderMetrics()
	at := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	done := m.wait("prometheus", "prometheus")
	done.Started(at)
	done.Done(at.Add(1500*time.Millisecond), grayapi.GateNoData)
	flying := m.wait("prometheus", "prometheus")
	flying.Started(at)
	m.wait("prometheus", "prometheus")
	cancelled := m.wait("smoke", "webhook")
	cancelled.Cancelled()

	for _, tc := range []struct {
		what string
		got  float64
		want float64
	}{
		{"in flight", testutil.ToFloat64(m.inFlight.WithLabelValues("prometheus", "prometheus")), 1},
		{"waiting", testutil.ToFloat64(m.waiting.WithLabelValues("prometheus", "prometheus")), 1},
		{"NoData answers", testutil.ToFloat64(m.measurements.WithLabelValues("prometheus", "prometheus", "NoData")), 1},
		{"webhook waiting after its cancel", testutil.ToFloat64(m.waiting.WithLabelValues("smoke", "webhook")), 0},
		{"durations observed", float64(testutil.CollectAndCount(m.duration)), 1},
	} {
		if tc.got != tc.want {
			t.Errorf("%s = %v, want %v", tc.what, tc.got, tc.want)
		}
	}
	if err := testutil.CollectAndCompare(m.duration, strings.NewReader(`
# HELP gray_controller_gate_provider_measurement_duration_seconds Time a provider took to answer one gate measurement, its timeout included.
# TYPE gray_controller_gate_provider_measurement_duration_seconds histogram
gray_controller_gate_provider_measurement_duration_seconds_bucket{provider="prometheus",type="prometheus",le="0.005"} 0
gray_controller_gate_provider_measurement_duration_seconds_bucket{provider="prometheus",type="prometheus",le="0.01"} 0
gray_controller_gate_provider_measurement_duration_seconds_bucket{provider="prometheus",type="prometheus",le="0.02"} 0
gray_controller_gate_provider_measurement_duration_seconds_bucket{provider="prometheus",type="prometheus",le="0.04"} 0
gray_controller_gate_provider_measurement_duration_seconds_bucket{provider="prometheus",type="prometheus",le="0.08"} 0
gray_controller_gate_provider_measurement_duration_seconds_bucket{provider="prometheus",type="prometheus",le="0.16"} 0
gray_controller_gate_provider_measurement_duration_seconds_bucket{provider="prometheus",type="prometheus",le="0.32"} 0
gray_controller_gate_provider_measurement_duration_seconds_bucket{provider="prometheus",type="prometheus",le="0.64"} 0
gray_controller_gate_provider_measurement_duration_seconds_bucket{provider="prometheus",type="prometheus",le="1.28"} 0
gray_controller_gate_provider_measurement_duration_seconds_bucket{provider="prometheus",type="prometheus",le="2.56"} 1
gray_controller_gate_provider_measurement_duration_seconds_bucket{provider="prometheus",type="prometheus",le="5.12"} 1
gray_controller_gate_provider_measurement_duration_seconds_bucket{provider="prometheus",type="prometheus",le="10.24"} 1
gray_controller_gate_provider_measurement_duration_seconds_bucket{provider="prometheus",type="prometheus",le="20.48"} 1
gray_controller_gate_provider_measurement_duration_seconds_bucket{provider="prometheus",type="prometheus",le="40.96"} 1
gray_controller_gate_provider_measurement_duration_seconds_bucket{provider="prometheus",type="prometheus",le="+Inf"} 1
gray_controller_gate_provider_measurement_duration_seconds_sum{provider="prometheus",type="prometheus"} 1.5
gray_controller_gate_provider_measurement_duration_seconds_count{provider="prometheus",type="prometheus"} 1
`)); err != nil {
		t.Error(err)
	}
}
