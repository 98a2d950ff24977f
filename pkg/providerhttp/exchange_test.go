package providerhttp

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
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
