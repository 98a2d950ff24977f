package gates

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// SearchOrder is where a gate named by a Deployment of namespace is looked for, in order: its
// own namespace, then gray-controller's (cluster-wide defaults); the built-in pods gate comes
// after both. An empty namespace is never searched: listing it would read every namespace's
// ConfigMaps, another tenant's definitions among them.
func SearchOrder(namespace, controllerNamespace string) []string {
	order := []string{namespace}
	if controllerNamespace != "" && controllerNamespace != namespace {
		order = append(order, controllerNamespace)
	}
	return order
}

// Defining is the one ConfigMap of cms (the definitions of one namespace) that has key name;
// nil when none has it. Two having it is an error, since neither can be said to win.
func Defining(name, namespace string, cms []*corev1.ConfigMap) (*corev1.ConfigMap, error) {
	var found *corev1.ConfigMap
	for _, cm := range cms {
		if _, ok := cm.Data[name]; !ok {
			continue
		}
		if found != nil {
			a, b := found.Name, cm.Name
			if b < a {
				a, b = b, a
			}
			return nil, fmt.Errorf("gate %q is defined twice in namespace %s: by ConfigMaps %s and %s", name, namespace, a, b)
		}
		found = cm
	}
	return found, nil
}

// DefinedNowhere is the error of a gate that none of the namespaces searched defines, and that
// is not built in.
func DefinedNowhere(name string, searched []string) error {
	return fmt.Errorf("gate %q is defined nowhere: no ConfigMap labelled %s=%s in namespace %s has the key %q",
		name, grayapi.GatesLabel, grayapi.GatesLabelValue, strings.Join(searched, " or "), name)
}

// SourceOf is how messages name key of cm.
func SourceOf(cm *corev1.ConfigMap, key string) string {
	return fmt.Sprintf("ConfigMap %s/%s, key %q", cm.Namespace, cm.Name, key)
}
