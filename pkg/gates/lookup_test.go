package gates

import (
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
