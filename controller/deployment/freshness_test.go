package deployment

import (
	"bufio"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/kubegray/kubectl-gray/controller/metrics"
)

// deferrals reads gray_controller_sync_deferred_total{reason} from the served /metrics, as a
// scrape would.
func deferrals(t *testing.T, reason string) float64 {
	t.Helper()
	rec := httptest.NewRecorder()
	metrics.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	series := `gray_controller_sync_deferred_total{reason="` + reason + `"} `
	scanner := bufio.NewScanner(rec.Body)
	for scanner.Scan() {
		if value, ok := strings.CutPrefix(scanner.Text(), series); ok {
			v, err := strconv.ParseFloat(value, 64)
			if err != nil {
				t.Fatalf("%s%s: %v", series, value, err)
			}
			return v
		}
	}
	t.Fatalf("/metrics has no %s", series)
	return 0
}

// wantDeferred fails unless a sync deferred once for reason while do ran, and for no other reason.
func wantDeferred(t *testing.T, reason string, do func()) {
	t.Helper()
	reasons := []string{metrics.DeferredOwnWrite, metrics.DeferredDeployment, metrics.DeferredReplicaSetWrite, metrics.DeferredNewReplicaSet}
	before := map[string]float64{}
	for _, r := range reasons {
		before[r] = deferrals(t, r)
	}
	do()
	for _, r := range reasons {
		want := 0.0
		if r == reason {
			want = 1
		}
		if got := deferrals(t, r) - before[r]; got != want {
			t.Errorf("syncs deferred for %s: %v, want %v", r, got, want)
		}
	}
}

// A gray sync whose cached Deployment is older than the server's does nothing, and says so.
func TestGraySyncDefersOnAStaleDeployment(t *testing.T) {
	w := startGray(t, grayDeployment(10, "20"))
	w.settle()
	stale := w.deployment().DeepCopy()
	w.setImage("v2") // the server has the new template; the cache below does not
	newer := w.deployment()
	w.refreshCaches()
	if err := w.f.factory.Apps().V1().Deployments().Informer().GetIndexer().Update(stale); err != nil {
		t.Fatal(err)
	}
	before := len(w.f.client.Actions())
	wantDeferred(t, metrics.DeferredDeployment, func() {
		if err := w.f.dc.syncDeployment(w.f.ctx, grayKey); err != nil {
			t.Fatal(err)
		}
	})
	if got := writes(w.f.client.Actions()[before:]); got != 0 {
		t.Fatalf("a sync of resourceVersion %s (the server has %s) made %d writes", stale.ResourceVersion, newer.ResourceVersion, got)
	}
}
