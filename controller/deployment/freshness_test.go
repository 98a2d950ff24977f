package deployment

import (
	"bufio"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubegray/kubectl-gray/controller/metrics"
	"github.com/kubegray/kubectl-gray/internal/testutil"
	"github.com/kubegray/kubectl-gray/pkg/deployutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
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

// A gray sync whose cached Deployment is older than the ReplicaSets written after it (a new
// leader whose Deployment watch lags its ReplicaSet watch) sees a rollback to the old template.
// It must neither say so nor write a ReplicaSet: it reads the Deployment live first, finds it
// behind, and ends deferred.
func TestGraySyncDefersOnAStaleDeployment(t *testing.T) {
	w := startGray(t, testutil.GrayWeb(10, "20"))
	w.settle()
	stale := w.deployment().DeepCopy()
	w.setImage("v2")
	w.settle() // held at 20%: v2's ReplicaSet has 2 of 10
	newer := w.deployment()
	w.takeEvents()
	sizes := w.sizes()
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
	actions := w.f.client.Actions()[before:]
	if got := writes(actions); got != 0 {
		t.Fatalf("a sync of resourceVersion %s (the server has %s) made %d writes: %v", stale.ResourceVersion, newer.ResourceVersion, got, verbs(actions))
	}
	if got := gets(actions); got != 1 {
		t.Errorf("the deferred sync read the deployment live %d times, want once: %v", got, verbs(actions))
	}
	w.events = append(w.events, w.f.events()...)
	if events := w.takeEvents(); len(events) != 0 {
		t.Errorf("the deferred sync sent events %q", events)
	}
	w.wantSizes(sizes)
}

// A held rollout's syncs read nothing live: one with nothing to write makes no request, and one
// that writes only the Deployment's status sends it against the cached resourceVersion, which
// the server would refuse if the cache were behind (liveCheck).
func TestHeldGraySyncReadsNothingLive(t *testing.T) {
	w := startGray(t, testutil.GrayWeb(10, "20"))
	w.settle()
	w.setImage("v2")
	w.settle()
	w.wantState(grayapi.PhaseHeld, true)

	if actions := w.sync(); len(actions) != 0 {
		t.Fatalf("a sync of a settled hold issued %v, want nothing", verbs(actions))
	}
	canary := newReplicaSetOf(t, w)
	canary.Status.AvailableReplicas--
	canary.Status.ReadyReplicas--
	w.put(canary)
	actions := w.sync()
	if got := verbs(actions); len(got) != 1 || got[0] != "update deployments/status" {
		t.Fatalf("a sync after a canary pod became unavailable issued %v, want one status write and no live read", got)
	}
}

// newReplicaSetOf is the ReplicaSet of w's Deployment's template.
func newReplicaSetOf(t *testing.T, w *grayWorld) *appsv1.ReplicaSet {
	t.Helper()
	rs := deployutil.FindNewReplicaSet(w.deployment(), w.replicaSets())
	if rs == nil {
		t.Fatalf("no replica set of the template among %v", w.sizes())
	}
	return rs
}

// gets counts the live reads of Deployments among actions.
func gets(actions []clienttesting.Action) int {
	n := 0
	for _, a := range actions {
		if a.GetVerb() == "get" && a.GetResource().Resource == "deployments" {
			n++
		}
	}
	return n
}
