package providerhttp

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
)

// TestExchangeNamesWhereARedirectPoints: the error names the host the Location points to,
// resolved against the request's URL, so a relative one names the provider's own host.
func TestExchangeNamesWhereARedirectPoints(t *testing.T) {
	for _, tc := range []struct{ location, want string }{
		{"http://elsewhere.example:8080/x", "redirects to elsewhere.example:8080"},
		{"/api/v2/query", "redirects to 127.0.0.1:"},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Location", tc.location)
			w.WriteHeader(http.StatusFound)
		}))
		req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
		_, err := Exchange(srv.Client(), "p", req, 10)
		srv.Close()
		if err == nil || !strings.Contains(err.Error(), "HTTP 302 from 127.0.0.1:") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Location %q: %v, want an error saying %q", tc.location, err, tc.want)
		}
	}
}

// TestExchangeRefusesADeclaredLongAnswer: a Content-Length over the limit is an error before any
// of the body is read.
func TestExchangeRefusesADeclaredLongAnswer(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(strings.Repeat("x", 11)))
	}))
	defer srv.Close()
	req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
	if a, err := Exchange(srv.Client(), "p", req, 10); err == nil || !strings.Contains(err.Error(), "provider p: HTTP 200, the answer is over 10 bytes") {
		t.Errorf("%+v, %v; want an error saying the answer is over 10 bytes", a, err)
	}
}

// TestExchangeSaysTheCauseFirst: a request that fails (here, out of time) is an error that says
// why before anything else and leaves the query string out, so that the why a gate's record
// keeps (its first 256 bytes) holds the cause even for a long query.
func TestExchangeSaysTheCauseFirst(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-release }))
	defer srv.Close()
	defer close(release)
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	query := strings.Repeat("sum(rate(http_requests_total[5m])) + ", 20)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/api/v1/query?query="+url.QueryEscape(query), nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Exchange(srv.Client(), "prometheus", req, 1<<20)
	want := "provider prometheus: context deadline exceeded (GET " + srv.URL + "/api/v1/query)"
	if err == nil || err.Error() != want {
		t.Errorf("error %v, want %q", err, want)
	}
}
