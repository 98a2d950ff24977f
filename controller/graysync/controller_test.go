package graysync

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubegray/kubectl-gray/controller/metrics"
	"github.com/kubegray/kubectl-gray/internal/testutil"
)

// failingSeries is default/web's series of failing syncs as /metrics serves it.
const failingSeries = `gray_controller_rollout_sync_failing_since_seconds{deployment="web",namespace="default"}`

// servesFailing reports whether /metrics serves default/web's series of failing syncs.
func servesFailing(t *testing.T) bool {
	t.Helper()
	rec := httptest.NewRecorder()
	metrics.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, metrics.Path, nil))
	return strings.Contains(rec.Body.String(), failingSeries)
}

// TestSyncDeploymentRecordsFailingSyncs: a gray sync that fails gives the Deployment its series
// of failing syncs, and the next one that succeeds takes it away.
func TestSyncDeploymentRecordsFailingSyncs(t *testing.T) {
	w := startGray(t, testutil.GrayWeb(10, "20"))
	if servesFailing(t) {
		t.Fatal("a Deployment whose syncs succeed has a series of failing syncs")
	}
	refuse := true
	w.f.client.PrependReactor("create", "replicasets", func(clienttesting.Action) (bool, runtime.Object, error) {
		if !refuse {
			return false, nil, nil
		}
		return true, nil, apierrors.NewForbidden(appsv1.Resource("replicasets"), "", errors.New("denied by an admission webhook"))
	})
	w.setImage("v2")
	w.refreshCaches()
	if err := w.f.dc.Sync(w.f.ctx, grayKey); err == nil {
		t.Fatal("the sync creating the canary succeeded, want it refused")
	}
	if !servesFailing(t) {
		t.Errorf("after a failed sync /metrics does not serve %s", failingSeries)
	}
	refuse = false
	w.sync()
	if servesFailing(t) {
		t.Errorf("after a successful sync /metrics still serves %s", failingSeries)
	}
}
