package controller

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
)

// healthChecker is one named liveness check; client-go's
// leaderelection.HealthzAdaptor is one.
type healthChecker interface {
	Name() string
	Check(req *http.Request) error
}

// readiness is what /readyz reports. The zero value is "not electing, no
// controller yet". Safe for concurrent use.
type readiness struct {
	mu        sync.Mutex
	electing  bool
	leading   bool
	hasSynced func() bool
	// cannotLead is why a standby could not lead now (leadCheck), nil once it could.
	cannotLead error
}

func newReadiness(electing bool) *readiness {
	return &readiness{electing: electing, cannotLead: errors.New("not checked yet")}
}

// couldLead records a standby's latest leadCheck.
func (r *readiness) couldLead(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cannotLead = err
}

// startedLeading marks this replica as the leader, from which point it must
// sync its caches to be ready.
func (r *readiness) startedLeading() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.leading = true
}

// controllerStarted hands over the controller's cache-sync check.
func (r *readiness) controllerStarted(hasSynced func() bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.hasSynced = hasSynced
}

// check returns whether the replica is ready and a one-line reason.
//
// A standby replica is ready once it could lead (leadCheck): its rollout waits for nothing
// more, and an upgrade to a version that could not lead stops there, with the old replicas
// still running. Its message says it is standby so a person reading the endpoint is not misled.
func (r *readiness) check() (bool, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.electing && !r.leading && r.cannotLead != nil:
		return false, "standby, could not lead now: " + r.cannotLead.Error()
	case r.electing && !r.leading:
		return true, "ok: standby, not the leader, could lead; informer caches are started when this replica acquires the lease"
	case r.hasSynced == nil:
		return false, "controller not started yet"
	case !r.hasSynced():
		return false, "informer caches not synced yet"
	default:
		return true, "ok"
	}
}

// newHealthHandler serves /healthz (liveness: every check must pass) and
// /readyz (readiness, see readiness.check). Add ?verbose to /healthz to see
// each check.
func newHealthHandler(checks []healthChecker, ready *readiness) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, req *http.Request) {
		var report strings.Builder
		failed := false
		for _, c := range checks {
			if err := c.Check(req); err != nil {
				failed = true
				fmt.Fprintf(&report, "[-]%s failed: %v\n", c.Name(), err)
			} else {
				fmt.Fprintf(&report, "[+]%s ok\n", c.Name())
			}
		}
		_, verbose := req.URL.Query()["verbose"]
		switch {
		case failed:
			writeText(w, http.StatusInternalServerError, report.String()+"healthz check failed\n")
		case verbose:
			writeText(w, http.StatusOK, report.String()+"healthz check passed\n")
		default:
			writeText(w, http.StatusOK, "ok")
		}
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		ok, message := ready.check()
		code := http.StatusOK
		if !ok {
			code = http.StatusServiceUnavailable
		}
		writeText(w, code, message)
	})
	return mux
}

func writeText(w http.ResponseWriter, code int, body string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	// A failed write means the prober hung up; there is no one to tell.
	_, _ = w.Write([]byte(body))
}
