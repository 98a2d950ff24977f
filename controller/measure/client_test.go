package measure

import (
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
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
	trusted, err := NewClient(ca, false, "s3cret")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := get(trusted); err != nil || got != "Bearer s3cret" {
		t.Errorf("with the CA: %q, %v; want the bearer token sent", got, err)
	}
	system, err := NewClient(nil, false, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := get(system); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("without the CA: %v, want a certificate error", err)
	}
	insecure, err := NewClient(nil, true, "")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := get(insecure); err != nil || got != "" {
		t.Errorf("insecure: %q, %v; want reached without a token", got, err)
	}
	if _, err := NewClient([]byte("not a certificate"), false, ""); err == nil {
		t.Error("a CA that is not PEM was taken")
	}
}
