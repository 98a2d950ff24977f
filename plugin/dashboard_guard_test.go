package plugin

import (
	"net/http"
	"strings"
	"testing"

	"k8s.io/client-go/kubernetes/fake"
)

// A write needs this run's token and the dashboard's own origin; a request naming another
// host (DNS rebinding) is refused whatever its method.
func TestDashboardGuard(t *testing.T) {
	cs := fake.NewClientset(dashboardFixture(t)...)
	ts := testDashboard(t, cs, false)
	tests := []struct {
		name      string
		header    map[string]string
		wantCode  int
		wantError string
	}{
		{name: "no token", header: map[string]string{tokenHeader: ""},
			wantCode: http.StatusForbidden, wantError: "does not carry this dashboard's token"},
		{name: "another run's token", header: map[string]string{tokenHeader: "0123"},
			wantCode: http.StatusForbidden, wantError: "does not carry this dashboard's token"},
		{name: "another origin", header: map[string]string{"Origin": "https://evil.example"},
			wantCode: http.StatusForbidden, wantError: `origin "https://evil.example"`},
		{name: "no origin", header: map[string]string{"Origin": ""},
			wantCode: http.StatusForbidden, wantError: `origin ""`},
		{name: "cross-site fetch", header: map[string]string{"Sec-Fetch-Site": "cross-site"},
			wantCode: http.StatusForbidden, wantError: "from a cross-site page"},
		{name: "the page's own request", header: map[string]string{"Sec-Fetch-Site": "same-origin"},
			wantCode: http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, a := post(t, ts, "/api/rollouts/default/web/resume", tt.header)
			if code != tt.wantCode || !strings.Contains(a.Error, tt.wantError) {
				t.Errorf("got %d %+v, want %d with %q", code, a, tt.wantCode, tt.wantError)
			}
		})
	}
	if n := len(patches(cs)); n != 1 {
		t.Errorf("%d patches sent, want only the page's own request's", n)
	}

	req, err := http.NewRequest(http.MethodGet, ts.URL+"/api/rollouts", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = "rebound.example:80"
	res, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusMisdirectedRequest {
		t.Errorf("GET with Host %s: %d, want %d", req.Host, res.StatusCode, http.StatusMisdirectedRequest)
	}
}

// Every answer forbids framing (no clickjacking of the buttons) and scripts from elsewhere.
func TestDashboardHeaders(t *testing.T) {
	ts := testDashboard(t, fake.NewClientset(), false)
	res, err := ts.Client().Get(ts.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if csp := res.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors 'none'") || !strings.Contains(csp, "default-src 'self'") {
		t.Errorf("Content-Security-Policy %q", csp)
	}
	if res.Header.Get("X-Frame-Options") != "DENY" {
		t.Errorf("X-Frame-Options %q", res.Header.Get("X-Frame-Options"))
	}
}
