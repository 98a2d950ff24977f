package plugin

import (
	"net/url"
	"testing"
)

// TestServiceProxyURL: a provider URL naming a Service goes through the API server's service
// proxy, as the API server spells it; others go directly. Rows written by hand.
func TestServiceProxyURL(t *testing.T) {
	api, _ := url.Parse("https://10.0.0.1:6443/prefix")
	for _, tc := range []struct{ provider, want string }{
		{"http://prometheus.monitoring:9090", "https://10.0.0.1:6443/prefix/api/v1/namespaces/monitoring/services/prometheus:9090/proxy"},
		{"http://prometheus.monitoring.svc:9090/prom", "https://10.0.0.1:6443/prefix/api/v1/namespaces/monitoring/services/prometheus:9090/proxy/prom"},
		{"https://thanos.obs.svc.cluster.local", "https://10.0.0.1:6443/prefix/api/v1/namespaces/obs/services/https:thanos:443/proxy"},
		{"http://prometheus", "https://10.0.0.1:6443/prefix/api/v1/namespaces/gray-system/services/prometheus:80/proxy"},
		{"http://127.0.0.1:9090", ""},
		{"https://prometheus.example.com", ""},
	} {
		u, _ := url.Parse(tc.provider)
		got, ok := serviceProxyURL(api, u, "gray-system")
		if (tc.want == "") != !ok || (ok && got.String() != tc.want) {
			t.Errorf("%s: got %v (%t), want %q", tc.provider, got, ok, tc.want)
		}
	}
}
