package measure

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/http"
)

// NewClient returns the HTTP client of a provider whose certificate must chain to the CAs of
// caPEM (nil: the system's), or is not checked at all when insecure, and which sends token as a
// bearer token when there is one.
func NewClient(caPEM []byte, insecure bool, token string) (*http.Client, error) {
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
		rt = bearer{token: token, next: transport}
	}
	return &http.Client{Transport: rt}, nil
}

// bearer adds an Authorization header to every request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(req)
}
