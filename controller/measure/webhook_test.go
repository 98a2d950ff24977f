package measure

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/kubegray/kubectl-gray/pkg/gates"
)

// TestCallFollowsNoRedirect: a webhook answering 3xx sends the call nowhere else, so neither the
// bearer token nor the signed body reaches the host in Location; the call is an error naming
// the status and both hosts.
func TestCallFollowsNoRedirect(t *testing.T) {
	for _, code := range []int{http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		t.Run(strconv.Itoa(code), func(t *testing.T) {
			var elsewhere atomic.Int32
			other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				elsewhere.Add(1)
			}))
			defer other.Close()
			provider := httptest.NewServer(http.RedirectHandler(other.URL+"/check", code))
			defer provider.Close()
			client, err := NewClient(nil, false, "s3cret", webhookAt(t, provider.URL).URL)
			if err != nil {
				t.Fatal(err)
			}
			status, answer, err := Call(t.Context(), client, webhookAt(t, provider.URL), []byte("key"), []byte(`{"gate":"smoke"}`))
			if elsewhere.Load() != 0 {
				t.Errorf("the redirect's target got %d requests, want none", elsewhere.Load())
			}
			otherHost := strings.TrimPrefix(other.URL, "http://")
			if err == nil || !strings.Contains(err.Error(), strconv.Itoa(code)) || !strings.Contains(err.Error(), otherHost) {
				t.Errorf("HTTP %d %q, %v; want an error naming HTTP %d and %s", status, answer, err, code, otherHost)
			}
		})
	}
}

// TestCallReadsBoundedAnswers: a 2xx answer is read whole up to the cap and is an error beyond
// it (never its first part taken for the whole); a failed answer's status is what counts, and
// only the start of its body is read, for the message.
func TestCallReadsBoundedAnswers(t *testing.T) {
	for _, tc := range []struct {
		name     string
		code     int
		size     int
		wantBody int
		err      string
	}{
		{"a 2xx at the cap", http.StatusOK, maxAnswer, maxAnswer, ""},
		{"a 2xx over the cap", http.StatusOK, maxAnswer + 1, 0, "over 1048576 bytes"},
		{"a long 4xx", http.StatusUnprocessableEntity, 2 << 20, 512, ""},
		{"a long 5xx", http.StatusBadGateway, 2 << 20, 512, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.WriteHeader(tc.code)
				_, _ = w.Write([]byte(strings.Repeat("x", tc.size)))
			}))
			defer provider.Close()
			status, answer, err := Call(t.Context(), provider.Client(), webhookAt(t, provider.URL), nil, []byte(`{}`))
			switch {
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Errorf("HTTP %d, %d bytes, %v; want an error saying %q", status, len(answer), err, tc.err)
			case tc.err == "" && (err != nil || status != tc.code || len(answer) != tc.wantBody):
				t.Errorf("HTTP %d, %d bytes, %v; want HTTP %d, %d bytes", status, len(answer), err, tc.code, tc.wantBody)
			}
		})
	}
}

// webhookAt is a webhook provider at address.
func webhookAt(t *testing.T, address string) *gates.Provider {
	t.Helper()
	u, err := url.Parse(address + "/check")
	if err != nil {
		t.Fatal(err)
	}
	return &gates.Provider{Name: "smoke", Type: gates.ProviderWebhook, URL: u}
}
