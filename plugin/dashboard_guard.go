package plugin

// What keeps the dashboard's server to its one user: the pages name only the hosts it serves
// (no DNS rebinding), a write carries the token of this run and comes from the dashboard's own
// origin (no cross-site request from another page the user has open), and no page may frame it.

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"slices"
)

// tokenHeader carries the per-run token of every state-changing request.
const tokenHeader = "X-Gray-Token"

// newToken is a random token for one run of the server.
func newToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+).
	return hex.EncodeToString(b)
}

// guard is the server's checks of who asks.
type guard struct {
	token string
	// hosts are the Host headers the server answers, e.g. 127.0.0.1:3100 and localhost:3100;
	// empty when it listens on every address, where any name may reach it.
	hosts []string
}

// newGuard returns the guard of a server listening on addr.
func newGuard(token string, addr net.Addr) guard {
	g := guard{token: token}
	tcp, ok := addr.(*net.TCPAddr)
	if !ok || tcp.IP.IsUnspecified() {
		return g
	}
	port := fmt.Sprint(tcp.Port)
	g.hosts = append(g.hosts, net.JoinHostPort(tcp.IP.String(), port))
	if tcp.IP.IsLoopback() {
		g.hosts = append(g.hosts, net.JoinHostPort("localhost", port))
	}
	return g
}

// wrap checks every request before next sees it, and sets the headers every answer carries.
func (g guard) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'self'; frame-ancestors 'none'; base-uri 'none'")
		h.Set("X-Frame-Options", "DENY")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		if len(g.hosts) > 0 && !slices.Contains(g.hosts, r.Host) {
			http.Error(w, fmt.Sprintf("this dashboard answers only as %v, not %q", g.hosts, r.Host), http.StatusMisdirectedRequest)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			if err := g.checkWrite(r); err != nil {
				writeJSON(w, http.StatusForbidden, actionAnswer{Error: err.Error()})
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// checkWrite refuses a state-changing request without this run's token, or from a page of
// another origin.
func (g guard) checkWrite(r *http.Request) error {
	origin := r.Header.Get("Origin")
	if origin != "http://"+r.Host {
		return fmt.Errorf("refused: the request comes from origin %q, not from this dashboard (http://%s)", origin, r.Host)
	}
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" {
		return fmt.Errorf("refused: the request comes from a %s page, not from this dashboard", site)
	}
	if subtle.ConstantTimeCompare([]byte(r.Header.Get(tokenHeader)), []byte(g.token)) != 1 {
		return fmt.Errorf("refused: the request does not carry this dashboard's token (reload the page after a restart of 'kubectl gray dashboard')")
	}
	return nil
}
