// Package providerhttp sends one request to a gate's provider and reads its answer, the same way
// for Prometheus queries (pkg/promquery) and webhook calls (controller/measure): no redirect is
// followed, so a provider's bearer token and a call's signature reach the provider's own host
// only; a failed answer's status is what counts, and only the start of its body is read, for a
// message; an answer over the caller's cap is an error, never its first part taken for the whole
// (docs/security.md).
package providerhttp

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// MaxShownFailure bounds what is read of a failed (non-2xx) answer's body: enough for the
// message a person reads, never enough to cost memory.
const MaxShownFailure = 512

// Answer is what a provider answered.
type Answer struct {
	Status int
	// Body is the whole body of a 2xx answer, or at most MaxShownFailure bytes of another.
	Body []byte
}

// OK reports whether the answer is a 2xx.
func (a Answer) OK() bool {
	return a.Status >= 200 && a.Status < 300
}

// Exchange sends req, for provider (its name, for messages), with client's transport and TLS, and
// reads the answer: a 2xx body of at most limit bytes (beyond: an error). A 3xx is an error naming
// the status and where it points, and is not followed, whatever client's own redirect policy.
func Exchange(client *http.Client, provider string, req *http.Request, limit int64) (Answer, error) {
	noRedirects := *client
	noRedirects.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := noRedirects.Do(req)
	if err != nil {
		// The cause first, and the request without its query string: a gate's record keeps the
		// first 256 bytes of a why, which a long query would fill before the cause.
		var failed *url.Error
		if errors.As(err, &failed) {
			return Answer{}, fmt.Errorf("provider %s: %w (%s %s://%s%s)", provider, failed.Err, strings.ToUpper(failed.Op), req.URL.Scheme, req.URL.Host,
				req.URL.Path)
		}
		return Answer{}, fmt.Errorf("provider %s: %w", provider, err)
	}
	defer func() { _ = resp.Body.Close() }()
	switch {
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		return Answer{}, fmt.Errorf("provider %s: HTTP %d from %s redirects to %s; redirects are not followed",
			provider, resp.StatusCode, req.URL.Host, redirectHost(req.URL, resp.Header.Get("Location")))
	case resp.StatusCode < 200 || resp.StatusCode >= 300:
		shown, err := io.ReadAll(io.LimitReader(resp.Body, MaxShownFailure))
		if err != nil {
			return Answer{}, fmt.Errorf("provider %s: HTTP %d, reading the answer: %w", provider, resp.StatusCode, err)
		}
		return Answer{Status: resp.StatusCode, Body: shown}, nil
	case resp.ContentLength > limit:
		return Answer{}, overLimit(provider, resp.StatusCode, limit)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	switch {
	case err != nil:
		return Answer{}, fmt.Errorf("provider %s: HTTP %d, reading the answer: %w", provider, resp.StatusCode, err)
	case int64(len(body)) > limit:
		return Answer{}, overLimit(provider, resp.StatusCode, limit)
	}
	return Answer{Status: resp.StatusCode, Body: body}, nil
}

func overLimit(provider string, status int, limit int64) error {
	return fmt.Errorf("provider %s: HTTP %d, the answer is over %d bytes", provider, status, limit)
}

// redirectHost is the host a redirect's Location points to, relative to the request's URL (the
// client has parsed it already; should it not parse, it is quoted, capped).
func redirectHost(from *url.URL, location string) string {
	to, err := from.Parse(location)
	if err != nil || to.Host == "" {
		return fmt.Sprintf("%.100q", location)
	}
	return to.Host
}
