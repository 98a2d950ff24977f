package gates

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// TestTrimConfigMap: the cache keeps a definitions ConfigMap's name, UID, version, gates label
// and data, and nothing else (managed fields, annotations such as kubectl's last-applied copy,
// other labels, binary data); a ConfigMap over 64 KiB of data keeps only its size. Applied twice,
// the same.
func TestTrimConfigMap(t *testing.T) {
	big := strings.Repeat("x", 40<<10)
	meta := func(ns, label string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: ns, Name: "gates", UID: "u1", ResourceVersion: "7",
			Labels:        map[string]string{grayapi.GatesLabel: label, "app": "shop"},
			Annotations:   map[string]string{"kubectl.kubernetes.io/last-applied-configuration": big},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}}
	}
	kept := func(ns, label string, data map[string]string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gates", UID: "u1", ResourceVersion: "7",
			Labels: map[string]string{grayapi.GatesLabel: label}}, Data: data}
	}
	for _, tc := range []struct {
		name string
		in   *corev1.ConfigMap
		want *corev1.ConfigMap
	}{
		{"definitions", &corev1.ConfigMap{ObjectMeta: meta("shop", "true"), Data: map[string]string{"errors": "provider: pods\n"},
			BinaryData: map[string][]byte{"blob": []byte(big)}},
			kept("shop", "true", map[string]string{"errors": "provider: pods\n"})},
		// 2 keys of 6 bytes and 2 values of 40 KiB: 81,932 bytes.
		{"over 64 KiB of data", &corev1.ConfigMap{ObjectMeta: meta("shop", "true"), Data: map[string]string{"first_": big, "second": big}},
			kept("shop", "true", map[string]string{OversizedKey: "81932"})},
		{"providers of gray-controller", &corev1.ConfigMap{ObjectMeta: meta("gray-system", "providers"), Data: map[string]string{"prom": "type: prometheus\n"}},
			kept("gray-system", "providers", map[string]string{"prom": "type: prometheus\n"})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			once, err := TrimConfigMap(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			twice, err := TrimConfigMap(once)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(once, tc.want) || !reflect.DeepEqual(twice, tc.want) {
				t.Errorf("kept %+v, then %+v; want %+v", once, twice, tc.want)
			}
		})
	}
}

// TestFindRefusesAnOversizedConfigMap: a gate not found in a namespace that has a ConfigMap kept
// without its data is refused, naming the ConfigMap and the bound, not looked up further (the
// namespace's own definition might be in it).
func TestFindRefusesAnOversizedConfigMap(t *testing.T) {
	trimmed, err := TrimConfigMap(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "huge"},
		Data: map[string]string{"pods": strings.Repeat("x", 70000)}})
	if err != nil {
		t.Fatal(err)
	}
	list := func(ns string) ([]*corev1.ConfigMap, error) {
		if ns == "shop" {
			return []*corev1.ConfigMap{trimmed.(*corev1.ConfigMap)}, nil
		}
		return nil, nil
	}
	_, err = Find("pods", "shop", "gray-system", list, func(*corev1.ConfigMap) (*Definition, error) { return BuiltinPods(), nil })
	want := `gate "pods": ConfigMap shop/huge has 70004 bytes of data, at most 65536 read: its definitions, "pods" among them perhaps, are refused (split it)`
	if err == nil || err.Error() != want {
		t.Errorf("Find: %v; want %s", err, want)
	}
}
