package testutil

import (
	"bufio"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/kubegray/kubectl-gray/controller/metrics"
)

// Deferrals reads gray_controller_sync_deferred_total{reason} from the served /metrics, as a
// scrape would.
func Deferrals(t *testing.T, reason string) float64 {
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

// WantDeferred fails unless a sync deferred once for reason while do ran, and for no other reason.
func WantDeferred(t *testing.T, reason string, do func()) {
	t.Helper()
	reasons := []string{metrics.DeferredOwnWrite, metrics.DeferredDeployment, metrics.DeferredReplicaSetWrite, metrics.DeferredNewReplicaSet}
	before := map[string]float64{}
	for _, r := range reasons {
		before[r] = Deferrals(t, r)
	}
	do()
	for _, r := range reasons {
		want := 0.0
		if r == reason {
			want = 1
		}
		if got := Deferrals(t, r) - before[r]; got != want {
			t.Errorf("syncs deferred for %s: %v, want %v", r, got, want)
		}
	}
}
