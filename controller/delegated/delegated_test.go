package delegated

import (
	"crypto/tls"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/cert"
)

// standInAPIServer answers TokenReviews ("reader-token" is user reader, "nobody-token" user
// nobody, any other is refused) and SubjectAccessReviews (reader may get /metrics) over HTTP, as
// the API server does, and counts the reviews. The delegating authenticator and authorizer talk
// to the API server as client-go does, over HTTP.
func standInAPIServer(t *testing.T, reviews *atomic.Int32) kubernetes.Interface {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reviews.Add(1)
		var out any
		switch r.URL.Path {
		case "/apis/authentication.k8s.io/v1/tokenreviews":
			var tr authenticationv1.TokenReview
			if err := json.NewDecoder(r.Body).Decode(&tr); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			if user, ok := map[string]string{"reader-token": "reader", "nobody-token": "nobody"}[tr.Spec.Token]; ok {
				tr.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{Username: user}}
			}
			out = &tr
		case "/apis/authorization.k8s.io/v1/subjectaccessreviews":
			var sar authorizationv1.SubjectAccessReview
			if err := json.NewDecoder(r.Body).Decode(&sar); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			n := sar.Spec.NonResourceAttributes
			sar.Status.Allowed = sar.Spec.User == "reader" && n != nil && n.Path == "/metrics" && n.Verb == "get"
			out = &sar
		default:
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(out)
	}))
	t.Cleanup(srv.Close)
	// JSON, which this stand-in reads; gray-controller speaks protobuf to the real API server.
	client, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL, ContentConfig: rest.ContentConfig{ContentType: "application/json"}})
	if err != nil {
		t.Fatal(err)
	}
	return client
}

// TestProtect: no token or an unknown one is 401, a user without the right 403, a reader gets the
// page; answers are cached, so a second scrape costs no review.
func TestProtect(t *testing.T) {
	var reviews atomic.Int32
	srv := httptest.NewServer(Protect("/metrics", series, standInAPIServer(t, &reviews)))
	defer srv.Close()
	get := func(path, token string) (int, string) {
		return request(t, http.MethodGet, srv.URL, path, token)
	}
	for _, tc := range []struct {
		path, token string
		code        int
		body        string
	}{
		{"/metrics", "", http.StatusUnauthorized, "Unauthorized"},
		{"/metrics", "forged", http.StatusUnauthorized, "Unauthorized"},
		{"/metrics", "nobody-token", http.StatusForbidden, `Forbidden: user "nobody" may not get /metrics`},
		{"/metrics", "reader-token", http.StatusOK, "series"},
	} {
		if code, body := get(tc.path, tc.token); code != tc.code || !strings.Contains(body, tc.body) {
			t.Errorf("GET %s with token %q = %d %q, want %d %q", tc.path, tc.token, code, body, tc.code, tc.body)
		}
	}
	before := reviews.Load()
	if code, _ := get("/metrics", "reader-token"); code != http.StatusOK || reviews.Load() != before {
		t.Errorf("a second scrape: %d, %d more reviews; want 200 from the caches", code, reviews.Load()-before)
	}
}

// TestProtectServesOnlyItsPaths: a path not served is 404 and a method other than GET 405, both
// before any review, whoever asks; a folder serves the paths under it as written. The review is
// of the path served (the stand-in allows the reader /metrics only, so pprof is 403 to it).
func TestProtectServesOnlyItsPaths(t *testing.T) {
	var reviews atomic.Int32
	client := standInAPIServer(t, &reviews)
	metrics := httptest.NewServer(Protect("/metrics", series, client))
	defer metrics.Close()
	pprof := httptest.NewServer(Protect("/debug/pprof/", series, client))
	defer pprof.Close()
	for _, tc := range []struct {
		server              *httptest.Server
		method, path, token string
		code                int
	}{
		{metrics, http.MethodGet, "/metrics", "reader-token", http.StatusOK},
		{metrics, http.MethodGet, "/metrics?x=1", "reader-token", http.StatusOK},
		{metrics, http.MethodGet, "/metrics", "nobody-token", http.StatusForbidden},
		{metrics, http.MethodPost, "/metrics", "reader-token", http.StatusMethodNotAllowed},
		{metrics, http.MethodHead, "/metrics", "reader-token", http.StatusMethodNotAllowed},
		{metrics, http.MethodGet, "/version", "reader-token", http.StatusNotFound},
		{metrics, http.MethodGet, "/healthz", "", http.StatusNotFound},
		{metrics, http.MethodGet, "/", "reader-token", http.StatusNotFound},
		{metrics, http.MethodGet, "/metrics/", "reader-token", http.StatusNotFound},
		{metrics, http.MethodGet, "//metrics", "reader-token", http.StatusNotFound},
		{metrics, http.MethodGet, "/Metrics", "reader-token", http.StatusNotFound},
		{metrics, http.MethodGet, "/metrics/..", "reader-token", http.StatusNotFound},
		{metrics, http.MethodGet, "/debug/pprof/heap", "reader-token", http.StatusNotFound},
		{pprof, http.MethodGet, "/debug/pprof/heap", "nobody-token", http.StatusForbidden},
		{pprof, http.MethodGet, "/debug/pprof/", "reader-token", http.StatusForbidden},
		{pprof, http.MethodGet, "/debug/pprof", "reader-token", http.StatusNotFound},
		{pprof, http.MethodGet, "/debug/pprof//heap", "reader-token", http.StatusNotFound},
		{pprof, http.MethodGet, "/debug/pprof/../../metrics", "reader-token", http.StatusNotFound},
		{pprof, http.MethodGet, "/debug/pprof/./heap", "reader-token", http.StatusNotFound},
		{pprof, http.MethodGet, "/metrics", "reader-token", http.StatusNotFound},
	} {
		before := reviews.Load()
		code, _ := request(t, tc.method, tc.server.URL, tc.path, tc.token)
		if code != tc.code {
			t.Errorf("%s %s on %s with token %q = %d, want %d", tc.method, tc.path, tc.server.URL, tc.token, code, tc.code)
		}
		if reviewed := reviews.Load() - before; (tc.code == http.StatusNotFound || tc.code == http.StatusMethodNotAllowed) && reviewed != 0 {
			t.Errorf("%s %s cost %d reviews, want none", tc.method, tc.path, reviewed)
		}
	}
}

// series stands for the metrics handler.
var series = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "series") })

// request sends method path, written as it is (no cleaning), to the server at base with token
// (none when empty), and returns the status code and the body.
func request(t *testing.T, method, base, path, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, base, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.URL.Opaque = "//" + req.URL.Host + path
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

// TestTLSConfig: without a folder the certificate is self-signed for the host; with one, its
// files are read, and a missing pair is an error naming the folder.
func TestTLSConfig(t *testing.T) {
	c, err := TLSConfig("", "gray-controller-0")
	if err != nil || len(c.Certificates) != 1 {
		t.Fatalf("self-signed: %v, %d certificates", err, len(c.Certificates))
	}
	dir := t.TempDir()
	if _, err := TLSConfig(dir, "x"); err == nil || !strings.Contains(err.Error(), "--metrics-cert-dir "+dir) {
		t.Errorf("an empty folder: %v, want an error naming it", err)
	}
	certPEM, keyPEM, err := cert.GenerateSelfSignedCertKey("metrics.example", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"tls.crt": certPEM, "tls.key": keyPEM} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	c, err = TLSConfig(dir, "x")
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.GetCertificate(&tls.ClientHelloInfo{})
	if err != nil || got.Leaf == nil && len(got.Certificate) == 0 {
		t.Fatalf("the folder's certificate: %v", err)
	}
}
