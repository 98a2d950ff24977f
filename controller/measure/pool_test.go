package measure

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/kubegray/kubectl-gray/controller/metrics"
	"github.com/kubegray/kubectl-gray/pkg/gates"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// TestPoolBoundsAndDedups: one provider of concurrency 2, five Deployments' gates measured at
// once, each submitted three times: every gate is measured once, never more than two at a time,
// and each Deployment's sync is queued once its measurement is kept.
func TestPoolBoundsAndDedups(t *testing.T) {
	provider := &gates.Provider{Name: "pool-bounds", Type: gates.ProviderPrometheus, Timeout: time.Minute, Concurrency: 2}
	release := make(chan struct{})
	var running, most, runs atomic.Int32
	var mu sync.Mutex
	queued := map[string]int{}
	done := make(chan string, 10)
	p := NewPool(t.Context(), time.Now, func(name string) { done <- name })
	due := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	names := []string{"shop/a", "shop/b", "shop/c", "shop/d", "shop/e"}
	for range 3 {
		for _, name := range names {
			p.Submit(Job{Key: Key{Deployment: types.UID("uid-" + name), Gate: "errors"}, Name: name, Provider: provider, Revision: 2, Due: due,
				Measure: func(context.Context, time.Time) (grayapi.GateOutcome, string, string) {
					runs.Add(1)
					n := running.Add(1)
					for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
					}
					<-release
					running.Add(-1)
					return grayapi.GatePass, "result 0", "result < 1"
				}})
		}
	}
	close(release)
	for range names {
		name := <-done
		mu.Lock()
		queued[name]++
		mu.Unlock()
	}
	for _, name := range names {
		m, ok := p.Latest(Key{Deployment: types.UID("uid-" + name), Gate: "errors"})
		if !ok || !m.Answers(2, 0, due) || m.Outcome != grayapi.GatePass {
			t.Errorf("%s: latest %+v, %v; want the measurement due at %s", name, m, ok, due)
		}
		// Taken and not yet recorded: asking again measures nothing.
		p.Submit(Job{Key: Key{Deployment: types.UID("uid-" + name), Gate: "errors"}, Name: name, Provider: provider, Revision: 2, Due: due,
			Measure: func(context.Context, time.Time) (grayapi.GateOutcome, string, string) {
				runs.Add(1)
				return grayapi.GatePass, "", ""
			}})
	}
	select {
	case name := <-done:
		t.Errorf("%s measured again", name)
	case <-time.After(100 * time.Millisecond):
	}
	if runs.Load() != int32(len(names)) || most.Load() > 2 || len(queued) != len(names) {
		t.Errorf("%d measurements, at most %d at once, syncs queued %v; want %d, at most 2, each once", runs.Load(), most.Load(), queued, len(names))
	}
	// The provider's series: five answers, none left waiting or in flight.
	rec := httptest.NewRecorder()
	metrics.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	for _, want := range []string{
		`gray_controller_gate_provider_measurements_total{outcome="Pass",provider="pool-bounds",type="prometheus"} 5`,
		`gray_controller_gate_provider_measurement_duration_seconds_count{provider="pool-bounds",type="prometheus"} 5`,
		`gray_controller_gate_provider_in_flight{provider="pool-bounds",type="prometheus"} 0`,
		`gray_controller_gate_provider_waiting{provider="pool-bounds",type="prometheus"} 0`,
	} {
		if !strings.Contains(rec.Body.String(), want+"\n") {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	p.Forget(types.UID("uid-shop/a"))
	if _, ok := p.Latest(Key{Deployment: types.UID("uid-" + "shop/a"), Gate: "errors"}); ok {
		t.Error("a forgotten Deployment's measurement is still kept")
	}
}
