package gates

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// MaxGatesConfigMap bounds the data (keys and values) gray-controller keeps of one labelled
// ConfigMap: sixteen definitions of MaxDefinition. Tenants label ConfigMaps at will, so what the
// cache holds of each is bounded, not the ConfigMap.
const MaxGatesConfigMap = 64 << 10

// OversizedKey is the one key kept of a ConfigMap over MaxGatesConfigMap, its value the data's
// size: a real ConfigMap's key cannot hold a slash, so it stands for no definition.
const OversizedKey = grayapi.Prefix + "oversized"

// TrimConfigMap is the transform of gray-controller's informers of labelled ConfigMaps: of each
// it keeps what finding and parsing a definition reads (name, namespace, UID, resourceVersion,
// the kubegray.io/gates label, the data), and of the data at most MaxGatesConfigMap (else only
// OversizedKey). In place (the informer hands over the object it just decoded) and idempotent;
// other objects pass unchanged. (Which ConfigMaps reach it is the informers' label selectors':
// providers only from gray-controller's namespace.)
func TrimConfigMap(obj any) (any, error) {
	cm, ok := obj.(*corev1.ConfigMap)
	if !ok {
		return obj, nil
	}
	data := cm.Data
	size := 0
	for k, v := range data {
		size += len(k) + len(v)
	}
	if size > MaxGatesConfigMap {
		data = map[string]string{OversizedKey: strconv.Itoa(size)}
	}
	cm.ObjectMeta = metav1.ObjectMeta{Name: cm.Name, Namespace: cm.Namespace, UID: cm.UID, ResourceVersion: cm.ResourceVersion,
		Labels: map[string]string{grayapi.GatesLabel: cm.Labels[grayapi.GatesLabel]}}
	cm.Data, cm.BinaryData, cm.Immutable = data, nil, nil
	return cm, nil
}
