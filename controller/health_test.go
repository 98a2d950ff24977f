package controller

import (
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"k8s.io/klog/v2/ktesting"
)

type fakeCheck struct {
	name string
	err  error
}

func (c fakeCheck) Name() string                { return c.name }
func (c fakeCheck) Check(_ *http.Request) error { return c.err }

func get(t *testing.T, h http.Handler, target string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, target, nil))
	return rec.Code, rec.Body.String()
}

func TestHealthz(t *testing.T) {
	tests := []struct {
		name     string
		checks   []healthChecker
		target   string
		wantCode int
		wantBody string
	}{
		{name: "no checks", target: "/healthz", wantCode: http.StatusOK, wantBody: "ok"},
		{
			name:     "leader election watchdog passing",
			checks:   []healthChecker{fakeCheck{name: "leaderElection"}},
			target:   "/healthz",
			wantCode: http.StatusOK, wantBody: "ok",
		},
		{
			name:     "verbose lists each check",
			checks:   []healthChecker{fakeCheck{name: "leaderElection"}},
			target:   "/healthz?verbose",
			wantCode: http.StatusOK, wantBody: "[+]leaderElection ok\nhealthz check passed\n",
		},
		{
			name: "leader stopped renewing its lease",
			checks: []healthChecker{
				fakeCheck{name: "ping"},
				fakeCheck{name: "leaderElection", err: errors.New("failed election to renew leadership on lease kube-system/gray-controller")},
			},
			target:   "/healthz",
			wantCode: http.StatusInternalServerError,
			wantBody: "[+]ping ok\n[-]leaderElection failed: failed election to renew leadership on lease kube-system/gray-controller\nhealthz check failed\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := get(t, newHealthHandler(tt.checks, newReadiness(true)), tt.target)
			if code != tt.wantCode || body != tt.wantBody {
				t.Errorf("GET %s = %d %q, want %d %q", tt.target, code, body, tt.wantCode, tt.wantBody)
			}
		})
	}
}

func TestReadyz(t *testing.T) {
	synced, notSynced := func() bool { return true }, func() bool { return false }
	tests := []struct {
		name      string
		electing  bool
		leading   bool
		hasSynced func() bool
		// cannotLead is the standby's last leadCheck (nil: it could lead).
		cannotLead error
		wantCode   int
		wantBody   string
	}{
		{
			name: "standby replica not checked yet", electing: true, cannotLead: errors.New("not checked yet"),
			wantCode: http.StatusServiceUnavailable, wantBody: "standby, could not lead now: not checked yet",
		},
		{
			name: "standby replica without a permission to lead", electing: true, cannotLead: errors.New("may not delete replicasets.apps"),
			wantCode: http.StatusServiceUnavailable, wantBody: "standby, could not lead now: may not delete replicasets.apps",
		},
		{
			name: "standby replica that could lead is ready and says it is standby", electing: true,
			wantCode: http.StatusOK, wantBody: "ok: standby, not the leader, could lead; informer caches are started when this replica acquires the lease",
		},
		{
			name: "a leader no longer asks whether it could lead", electing: true, leading: true, hasSynced: synced,
			cannotLead: errors.New("not checked yet"),
			wantCode:   http.StatusOK, wantBody: "ok",
		},
		{
			name: "just elected, controller not built yet", electing: true, leading: true,
			wantCode: http.StatusServiceUnavailable, wantBody: "controller not started yet",
		},
		{
			name: "leader with caches still syncing", electing: true, leading: true, hasSynced: notSynced,
			wantCode: http.StatusServiceUnavailable, wantBody: "informer caches not synced yet",
		},
		{
			name: "leader with synced caches", electing: true, leading: true, hasSynced: synced,
			wantCode: http.StatusOK, wantBody: "ok",
		},
		{
			name: "no leader election, caches syncing", hasSynced: notSynced,
			wantCode: http.StatusServiceUnavailable, wantBody: "informer caches not synced yet",
		},
		{
			name: "no leader election, caches synced", hasSynced: synced,
			wantCode: http.StatusOK, wantBody: "ok",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ready := newReadiness(tt.electing)
			ready.couldLead(tt.cannotLead)
			if tt.leading {
				ready.startedLeading()
			}
			if tt.hasSynced != nil {
				ready.controllerStarted(tt.hasSynced)
			}
			code, body := get(t, newHealthHandler(nil, ready), "/readyz")
			if code != tt.wantCode || body != tt.wantBody {
				t.Errorf("GET /readyz = %d %q, want %d %q", code, body, tt.wantCode, tt.wantBody)
			}
		})
	}
}

func TestReadyzFollowsCacheSync(t *testing.T) {
	ready := newReadiness(false)
	isSynced := false
	ready.controllerStarted(func() bool { return isSynced })
	h := newHealthHandler(nil, ready)
	if code, _ := get(t, h, "/readyz"); code != http.StatusServiceUnavailable {
		t.Errorf("before sync: GET /readyz = %d, want 503", code)
	}
	isSynced = true
	if code, _ := get(t, h, "/readyz"); code != http.StatusOK {
		t.Errorf("after sync: GET /readyz = %d, want 200", code)
	}
}

func TestHealthOnlyServesGet(t *testing.T) {
	rec := httptest.NewRecorder()
	newHealthHandler(nil, newReadiness(false)).ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/healthz", nil))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST /healthz = %d, want 405", rec.Code)
	}
}

func TestServe(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	fail := func(err error) { t.Errorf("server failed: %v", err) }
	ready := newReadiness(true)
	ready.couldLead(nil)
	srv, err := serve(ctx, "health probe", "--health-probe-bind-address", "127.0.0.1:0", newHealthHandler(nil, ready), nil, fail)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })

	resp, err := http.Get("http://" + srv.Addr + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(string(body), "ok: standby") {
		t.Errorf("GET /readyz over HTTP = %d %q, want 200 and the standby message", resp.StatusCode, body)
	}

	// A second server on the same port fails at once, naming the flag.
	_, err = serve(ctx, "metrics", "--metrics-bind-address", srv.Addr, http.NotFoundHandler(), nil, fail)
	if err == nil || !strings.Contains(err.Error(), `metrics server: listening on --metrics-bind-address "`+srv.Addr+`"`) {
		t.Errorf("serve on a busy port = %v, want an error naming --metrics-bind-address", err)
	}
	var opErr *net.OpError
	if !errors.As(err, &opErr) {
		t.Errorf("serve on a busy port should wrap the listen error, got %T", err)
	}

}
