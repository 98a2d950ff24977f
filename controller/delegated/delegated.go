// Package delegated serves an HTTP handler (gray-controller's /metrics, and pprof when enabled)
// over TLS to the clients the API server vouches for, as kube-controller-manager serves its own:
// a bearer token the API server authenticates (a TokenReview), whose user it authorizes to get
// the path served (a SubjectAccessReview of a non-resource URL, which RBAC's nonResourceURLs
// grant); any other path is 404 before any review. The reviews go through client-go:
// k8s.io/apiserver's delegating authenticator and authorizer make the same requests per scrape
// but take the binary from 39 to 72 MB (BENCHMARKS.md). docs/operations.md says how Prometheus
// is given such a token.
package delegated

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/flowcontrol"
)

const (
	// allowedFor is how long an authenticated token and an allowed request are remembered: a
	// scrape every 30 s by each Prometheus replica costs a review every few minutes, and a
	// revoked token or role stops working within it. Refusals are not remembered.
	allowedFor = 2 * time.Minute
	// reviewTimeout bounds one review.
	reviewTimeout = 10 * time.Second
	// maxRemembered bounds the memory of answers: beyond it the memory starts afresh.
	maxRemembered = 1000
)

// Protect serves next to the requests whose bearer token the API server authenticates and whose
// user may get the request's path, for the paths served only: a GET of a path served returns
// 401 without such a token and 403 for a user without the right; any other path is 404 and any
// other method 405, both before any review, so the review is always of exactly what next
// serves. served is a path ("/metrics") or, ending in "/", a folder of paths ("/debug/pprof/"),
// matched as written (a path a router would clean, "//metrics" or "/metrics/", is not served).
// The reviews are rate-limited apart from the controller's own requests (5 a second, bursts of
// 10; beyond: 429), so that a client sending made-up tokens cannot spend the API budget that
// rollouts need.
func Protect(served string, next http.Handler, client kubernetes.Interface) http.Handler {
	return &guard{served: served, next: next, client: client, limiter: flowcontrol.NewTokenBucketRateLimiter(5, 10), remembered: map[[32]byte]time.Time{}}
}

// guard is the handler Protect returns.
type guard struct {
	served  string
	next    http.Handler
	client  kubernetes.Interface
	limiter flowcontrol.RateLimiter

	mu sync.Mutex
	// remembered holds, until when, the hashes of the tokens and of the requests the API server
	// allowed.
	remembered map[[32]byte]time.Time
}

// serves reports whether path is one next serves: served itself, or below a served folder by
// plain names (no empty, "." or ".." segment, which a router would clean into another path).
func (g *guard) serves(path string) bool {
	if !strings.HasSuffix(g.served, "/") {
		return path == g.served
	}
	rest, below := strings.CutPrefix(path, g.served)
	if !below {
		return false
	}
	return rest == "" || !slices.ContainsFunc(strings.Split(rest, "/"), func(segment string) bool {
		return segment == "" || segment == "." || segment == ".."
	})
}

func (g *guard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := r.URL.Path
	if !g.serves(path) {
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		http.Error(w, "Method not allowed: only GET", http.StatusMethodNotAllowed)
		return
	}
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || token == "" {
		http.Error(w, "Unauthorized: send a bearer token the API server accepts", http.StatusUnauthorized)
		return
	}
	const verb = "get"
	key := sha256.Sum256([]byte(verb + " " + path + " " + token))
	if g.allowed(key) {
		g.next.ServeHTTP(w, r)
		return
	}
	if !g.limiter.TryAccept() {
		http.Error(w, "Too many requests to review", http.StatusTooManyRequests)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), reviewTimeout)
	defer cancel()
	user, err := g.authenticate(ctx, token)
	if err != nil {
		http.Error(w, "Unauthorized: send a bearer token the API server accepts", http.StatusUnauthorized)
		return
	}
	if reason, err := g.authorize(ctx, user, verb, path); err != nil {
		http.Error(w, fmt.Sprintf("Forbidden: user %q may not %s %s (%s)", user.Username, verb, path, reason), http.StatusForbidden)
		return
	}
	g.remember(key)
	g.next.ServeHTTP(w, r)
}

// authenticate is the user the API server says token stands for.
func (g *guard) authenticate(ctx context.Context, token string) (authenticationv1.UserInfo, error) {
	review, err := g.client.AuthenticationV1().TokenReviews().Create(ctx,
		&authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	switch {
	case err != nil:
		return authenticationv1.UserInfo{}, err
	case !review.Status.Authenticated:
		return authenticationv1.UserInfo{}, fmt.Errorf("not authenticated: %s", review.Status.Error)
	}
	return review.Status.User, nil
}

// authorize asks the API server whether user may verb path; the error says why not.
func (g *guard) authorize(ctx context.Context, user authenticationv1.UserInfo, verb, path string) (string, error) {
	extra := map[string]authorizationv1.ExtraValue{}
	for k, v := range user.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	review, err := g.client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: user.Username, UID: user.UID, Groups: user.Groups, Extra: extra,
		NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: path, Verb: verb},
	}}, metav1.CreateOptions{})
	switch {
	case err != nil:
		return "the review failed", err
	case !review.Status.Allowed:
		return review.Status.Reason, fmt.Errorf("not allowed")
	}
	return "", nil
}

// allowed reports whether the request of key was allowed less than allowedFor ago.
func (g *guard) allowed(key [32]byte) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	until, ok := g.remembered[key]
	return ok && time.Now().Before(until)
}

func (g *guard) remember(key [32]byte) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.remembered) >= maxRemembered {
		g.remembered = map[[32]byte]time.Time{}
	}
	g.remembered[key] = time.Now().Add(allowedFor)
}

// TLSConfig is the server side of the TLS: certDir's tls.crt and tls.key (a Secret of type
// kubernetes.io/tls mounted there), read at each handshake so that a renewed certificate is
// served without a restart; or, without certDir, a self-signed certificate made now, which a
// scraper accepts with insecure_skip_verify (the token, not the certificate, is what is checked).
func TLSConfig(certDir, host string) (*tls.Config, error) {
	config := &tls.Config{MinVersion: tls.VersionTLS12}
	if certDir == "" {
		certPEM, keyPEM, err := cert.GenerateSelfSignedCertKey(host, nil, nil)
		if err != nil {
			return nil, fmt.Errorf("making a self-signed serving certificate: %w", err)
		}
		pair, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			return nil, err
		}
		config.Certificates = []tls.Certificate{pair}
		return config, nil
	}
	certFile, keyFile := filepath.Join(certDir, "tls.crt"), filepath.Join(certDir, "tls.key")
	if _, err := tls.LoadX509KeyPair(certFile, keyFile); err != nil {
		return nil, fmt.Errorf("--metrics-cert-dir %s: %w", certDir, err)
	}
	config.GetCertificate = func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
		pair, err := tls.LoadX509KeyPair(certFile, keyFile)
		return &pair, err
	}
	return config, nil
}

// HostName is the name a self-signed certificate is made for: the pod's.
func HostName() string {
	name, err := os.Hostname()
	if err != nil || name == "" {
		return "gray-controller"
	}
	return name
}
