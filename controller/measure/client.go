package measure

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"net/url"
)

// NewClient returns the HTTP client of a provider whose certificate must chain to the CAs of
// caPEM (nil: the system's), or is not checked at all when insecure, and which sends token as a
// bearer token when there is one, to origin's scheme and host alone (the provider's URL): a
// request for anywhere else is refused before it leaves, so the token cannot reach another
// server whatever builds the request.
func NewClient(caPEM []byte, insecure bool, token string, origin *url.URL) (*http.Client, error) {
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: insecure} //nolint:gosec // the admin's explicit choice (tls.insecureSkipVerify)
	if len(caPEM) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(caPEM) {
			return nil, errors.New("no PEM certificate in the CA Secret")
		}
		transport.TLSClientConfig.RootCAs = pool
	}
	var rt http.RoundTripper = transport
	if token != "" {
		if origin == nil {
			return nil, errors.New("a bearer token needs the provider's URL")
		}
		rt = bearer{token: token, scheme: origin.Scheme, host: origin.Host, next: transport}
	}
	return &http.Client{Transport: rt}, nil
}

// bearer adds an Authorization header to every request for scheme://host, and refuses any other.
type bearer struct {
	token, scheme, host string
	next                http.RoundTripper
}

func (b bearer) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme != b.scheme || req.URL.Host != b.host {
		return nil, fmt.Errorf("refusing to send the bearer token of %s://%s to %s://%s", b.scheme, b.host, req.URL.Scheme, req.URL.Host)
	}
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(req)
}
