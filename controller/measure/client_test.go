package measure

import (
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
)

// TestNewClient: a TLS server whose certificate chains to the CA given is reached with the bearer
// token; without the CA it is refused, and insecure skips the check.
func TestNewClient(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(r.Header.Get("Authorization")))
	}))
	defer srv.Close()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})

	get := func(c *http.Client) (string, error) {
		resp, err := c.Get(srv.URL)
		if err != nil {
			return "", err
		}
		defer func() { _ = resp.Body.Close() }()
		body, err := io.ReadAll(resp.Body)
		return string(body), err
	}
	origin, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	trusted, err := NewClient(ca, false, "s3cret", origin)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := get(trusted); err != nil || got != "Bearer s3cret" {
		t.Errorf("with the CA: %q, %v; want the bearer token sent", got, err)
	}
	system, err := NewClient(nil, false, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := get(system); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("without the CA: %v, want a certificate error", err)
	}
	insecure, err := NewClient(nil, true, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := get(insecure); err != nil || got != "" {
		t.Errorf("insecure: %q, %v; want reached without a token", got, err)
	}
	if _, err := NewClient([]byte("not a certificate"), false, "", nil); err == nil {
		t.Error("a CA that is not PEM was taken")
	}
}

// TestBearerTokenGoesToItsProviderOnly: a provider's client sends its bearer token to the
// provider's own scheme and host alone; a request it is handed for any other is refused before it
// leaves, so the other server receives nothing.
func TestBearerTokenGoesToItsProviderOnly(t *testing.T) {
	serve := func(got *[]string) *httptest.Server {
		return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			*got = append(*got, r.Header.Get("Authorization"))
		}))
	}
	var atProvider, elsewhere []string
	provider, other := serve(&atProvider), serve(&elsewhere)
	defer provider.Close()
	defer other.Close()
	origin, err := url.Parse(provider.URL + "/api/v1/query")
	if err != nil {
		t.Fatal(err)
	}
	client, err := NewClient(nil, false, "s3cret", origin)
	if err != nil {
		t.Fatal(err)
	}
	for _, target := range []string{provider.URL + "/api/v1/query", other.URL + "/api/v1/query", strings.Replace(provider.URL, "http:", "https:", 1)} {
		resp, err := client.Get(target)
		if err == nil {
			_ = resp.Body.Close()
		}
		if wantSent := target == provider.URL+"/api/v1/query"; (err == nil) != wantSent {
			t.Errorf("GET %s: error %v, want one: %t", target, err, !wantSent)
		}
	}
	if !slices.Equal(atProvider, []string{"Bearer s3cret"}) || len(elsewhere) != 0 {
		t.Errorf("the provider received %q and the other server %q; want the token once at the provider, nothing elsewhere", atProvider, elsewhere)
	}
}
