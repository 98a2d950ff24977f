package promquery

import (
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kubegray/kubectl-gray/pkg/gates"
)

// TestQueryReadsPrometheusAnswers: the answers are Prometheus' documented shapes, written by
// hand; the query and the time arrive as the API takes them.
func TestQueryReadsPrometheusAnswers(t *testing.T) {
	at := time.Date(2026, 12, 4, 12, 0, 0, 500_000_000, time.UTC)
	for _, tc := range []struct {
		name, status, body string
		want               []float64
		err                string
	}{
		{"one series", "200", `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1796385600.5,"0.0125"]}]}}`, []float64{0.0125}, ""},
		{"no series", "200", `{"status":"success","data":{"resultType":"vector","result":[]}}`, []float64{}, ""},
		{"NaN", "200", `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1796385600.5,"NaN"]}]}}`, []float64{math.NaN()}, ""},
		{"scalar", "200", `{"status":"success","data":{"resultType":"scalar","result":[1796385600.5,"+Inf"]}}`, []float64{math.Inf(1)}, ""},
		{"two series", "200", `{"status":"success","data":{"resultType":"vector","result":[{"value":[1,"1"]},{"value":[1,"2"]}]}}`, []float64{1, 2}, ""},
		{"a range vector", "200", `{"status":"success","data":{"resultType":"matrix","result":[]}}`, nil, "the query gives a matrix, not an instant vector or a scalar"},
		{"bad query", "400", `{"status":"error","errorType":"bad_data","error":"parse error"}`, nil, "provider prometheus: HTTP 400, bad_data: parse error"},
		{"not prometheus", "502", `<html>bad gateway</html>`, nil, `provider prometheus: HTTP 502, a failed answer: "<html>bad gateway</html>"`},
		// What the API server's service proxy answers for a Service without endpoints: JSON, but no
		// Prometheus error in it, so the body is what a person must see.
		{"a Kubernetes Status", "503", `{"kind":"Status","status":"Failure","message":"no endpoints available for service \"prometheus\"","code":503}`, nil,
			`provider prometheus: HTTP 503, a failed answer: "{\"kind\":\"Status\",\"status\":\"Failure\",\"message\":\"no endpoints available for service \\\"prometheus\\\"\",\"code\":503}"`},
		// A value in a failed answer is not a value: the status decides first.
		{"a value with a 500", "500", `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1796385600.5,"0.0125"]}]}}`, nil, "provider prometheus: HTTP 500, a failed answer"},
		{"success JSON that is not Prometheus'", "200", `{"kind":"Status"}`, nil, `provider prometheus: HTTP 200, not a Prometheus answer: "{\"kind\":\"Status\"}"`},
		// An answer longer than the cap is an error, not the part of it that fits.
		{"over the cap", "200", `{"status":"success","data":{"resultType":"vector","result":[]}}` + strings.Repeat(" ", maxAnswer), nil, "over 1048576 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/prom/api/v1/query" || r.URL.Query().Get("query") != "sum(up)" || r.URL.Query().Get("time") != "1796385600.500000" {
					http.Error(w, "unexpected request "+r.URL.String(), http.StatusTeapot)
					return
				}
				var code int
				_, _ = fmt.Sscan(tc.status, &code)
				w.WriteHeader(code)
				_, _ = w.Write([]byte(tc.body))
			}))
			defer srv.Close()
			u, _ := url.Parse(srv.URL + "/prom")
			r := Query(t.Context(), srv.Client(), &gates.Provider{Name: "prometheus", URL: u}, "sum(up)", at)
			if tc.err != "" {
				if r.Err == nil || !strings.Contains(r.Err.Error(), tc.err) {
					t.Errorf("error %v, want %q", r.Err, tc.err)
				}
				return
			}
			if r.Err != nil || len(r.Values) != len(tc.want) || (len(tc.want) == 1 && !math.IsNaN(tc.want[0]) && !reflect.DeepEqual(r.Values, tc.want)) ||
				(len(tc.want) == 1 && math.IsNaN(tc.want[0]) && !math.IsNaN(r.Values[0])) {
				t.Errorf("read %+v, want values %v", r, tc.want)
			}
		})
	}
}

// TestQueryFollowsNoRedirect: a provider answering 3xx sends the query nowhere else, so neither
// its bearer token nor the query reaches the host in Location; the reading is an error naming
// the status and both hosts.
func TestQueryFollowsNoRedirect(t *testing.T) {
	for _, code := range []int{http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		t.Run(strconv.Itoa(code), func(t *testing.T) {
			var elsewhere atomic.Int32
			other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				elsewhere.Add(1)
				_, _ = w.Write([]byte(`{"status":"success","data":{"resultType":"scalar","result":[1,"0"]}}`))
			}))
			defer other.Close()
			provider := httptest.NewServer(http.RedirectHandler(other.URL+"/api/v1/query", code))
			defer provider.Close()
			u, _ := url.Parse(provider.URL)
			client := &http.Client{Transport: withToken{next: http.DefaultTransport}}
			r := Query(t.Context(), client, &gates.Provider{Name: "prometheus", URL: u}, "sum(up)", time.Now())
			if elsewhere.Load() != 0 {
				t.Errorf("the redirect's target got %d requests, want none", elsewhere.Load())
			}
			otherHost := strings.TrimPrefix(other.URL, "http://")
			if r.Err == nil || !strings.Contains(r.Err.Error(), strconv.Itoa(code)) || !strings.Contains(r.Err.Error(), otherHost) {
				t.Errorf("reading %+v, want an error naming HTTP %d and %s", r, code, otherHost)
			}
		})
	}
}

// withToken adds a bearer token to every request it sends, as a provider's client does.
type withToken struct{ next http.RoundTripper }

func (w withToken) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer s3cret")
	return w.next.RoundTrip(req)
}
