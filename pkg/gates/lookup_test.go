package gates

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestFind: the Deployment's namespace first, then gray-controller's, then the built-in pods
// gate; two ConfigMaps of one namespace defining a gate, or none anywhere, are errors naming
// them. Rows written by hand.
func TestFind(t *testing.T) {
	cm := func(ns, name string, keys ...string) *corev1.ConfigMap {
		c := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string]string{}}
		for _, k := range keys {
			c.Data[k] = "provider: pods\n"
		}
		return c
	}
	byNamespace := map[string][]*corev1.ConfigMap{
		"shop":        {cm("shop", "gates", "restarts"), cm("shop", "more", "twice"), cm("shop", "again", "twice")},
		"gray-system": {cm("gray-system", "defaults", "restarts", "cluster-wide")},
	}
	var listed []string
	list := func(ns string) ([]*corev1.ConfigMap, error) { listed = append(listed, ns); return byNamespace[ns], nil }
	parse := func(c *corev1.ConfigMap) (*Definition, error) {
		return &Definition{Name: "x", Source: c.Namespace + "/" + c.Name}, nil
	}
	for _, tc := range []struct{ name, namespace, source, err string }{
		{"restarts", "shop", "shop/gates", ""},
		{"cluster-wide", "shop", "gray-system/defaults", ""},
		{"pods", "shop", "built in", ""},
		{"twice", "shop", "", `gate "twice" is defined twice in namespace shop: by ConfigMaps again and more`},
		{"nowhere", "shop", "", `gate "nowhere" is defined nowhere: no ConfigMap labelled kubegray.io/gates=true in namespace shop or gray-system has the key "nowhere"`},
		{"restarts", "gray-system", "gray-system/defaults", ""},
	} {
		listed = nil
		def, err := Find(tc.name, tc.namespace, "gray-system", list, parse)
		switch {
		case tc.err != "" && (err == nil || err.Error() != tc.err):
			t.Errorf("%s in %s: error %v, want %q", tc.name, tc.namespace, err, tc.err)
		case tc.err == "" && (err != nil || def.Source != tc.source):
			t.Errorf("%s in %s: %+v, %v; want the definition of %s", tc.name, tc.namespace, def, err, tc.source)
		}
		if tc.namespace == "gray-system" && len(listed) != 1 {
			t.Errorf("a Deployment of gray-controller's namespace listed %v, want it once", listed)
		}
	}
}

// TestFindProvider: a provider given by a flag or by one ConfigMap of gray-controller's
// namespace is found; given twice it is refused naming both places; nowhere it is nil.
func TestFindProvider(t *testing.T) {
	providers := func(name, data string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "gray-system", Name: name}, Data: map[string]string{"prom": data}}
	}
	parse := func(cm *corev1.ConfigMap) (*Provider, error) {
		return ParseProvider("prom", SourceOf(cm, "prom"), cm.Data["prom"])
	}
	flagged, err := PrometheusURLProvider("http://prometheus.monitoring:9090")
	if err != nil {
		t.Fatal(err)
	}
	good := providers("providers", "type: prometheus\nurl: http://prom.monitoring:9090\n")
	other := providers("more", "type: prometheus\nurl: http://other.monitoring:9090\n")
	unrelated := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "gray-system", Name: "unrelated"}, Data: map[string]string{"smoke": "type: webhook\n"}}
	for _, tc := range []struct {
		name    string
		flagged *Provider
		cms     []*corev1.ConfigMap
		wantURL string
		wantErr string
	}{
		{name: "by a flag", flagged: flagged, cms: []*corev1.ConfigMap{unrelated}, wantURL: "http://prometheus.monitoring:9090"},
		{name: "by a ConfigMap", cms: []*corev1.ConfigMap{unrelated, good}, wantURL: "http://prom.monitoring:9090"},
		{name: "nowhere", cms: []*corev1.ConfigMap{unrelated}},
		{name: "twice by ConfigMaps", cms: []*corev1.ConfigMap{good, other},
			wantErr: `provider "prom" is defined 2 times: ConfigMap gray-system/more, key "prom"; ConfigMap gray-system/providers, key "prom"`},
		{name: "by a flag and a ConfigMap", flagged: flagged, cms: []*corev1.ConfigMap{good},
			wantErr: `provider "prom" is defined 2 times: --prometheus-url; ConfigMap gray-system/providers, key "prom"`},
		{name: "by a ConfigMap that does not parse", cms: []*corev1.ConfigMap{providers("bad", "type: carrier-pigeon\n")},
			wantErr: `provider "prom" (ConfigMap gray-system/bad, key "prom"): `},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := FindProvider("prom", tc.flagged, tc.cms, parse)
			switch {
			case tc.wantErr != "":
				if err == nil || !strings.HasPrefix(err.Error(), tc.wantErr) {
					t.Errorf("FindProvider = %v, %v; want the error %q", p, err, tc.wantErr)
				}
			case err != nil:
				t.Errorf("FindProvider: %v", err)
			case tc.wantURL == "" && p != nil:
				t.Errorf("FindProvider = %+v, want none", p)
			case tc.wantURL != "" && (p == nil || p.URL.String() != tc.wantURL):
				t.Errorf("FindProvider = %+v, want the provider at %s", p, tc.wantURL)
			}
		})
	}
}
