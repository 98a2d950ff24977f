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
	h := Protect(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "series") }), standInAPIServer(t, &reviews))
	srv := httptest.NewServer(h)
	defer srv.Close()
	get := func(path, token string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	for _, tc := range []struct {
		path, token string
		code        int
		body        string
	}{
		{"/metrics", "", http.StatusUnauthorized, "Unauthorized"},
		{"/metrics", "forged", http.StatusUnauthorized, "Unauthorized"},
		{"/metrics", "nobody-token", http.StatusForbidden, `Forbidden: user "nobody" may not get /metrics`},
		{"/debug/pprof/heap", "reader-token", http.StatusForbidden, `Forbidden: user "reader" may not get /debug/pprof/heap`},
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
