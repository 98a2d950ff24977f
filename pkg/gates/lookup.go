package gates

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// Find is gate name's definition for a Deployment of namespace, where gray-controller and kubectl
// gray find it: the first namespace of searchOrder whose ConfigMaps labelled
// kubegray.io/gates=true (list) define it, read by parse; else the built-in pods gate.
func Find(name, namespace, controllerNamespace string, list func(namespace string) ([]*corev1.ConfigMap, error),
	parse func(cm *corev1.ConfigMap) (*Definition, error)) (*Definition, error) {
	searched := searchOrder(namespace, controllerNamespace)
	for _, ns := range searched {
		cms, err := list(ns)
		if err != nil {
			return nil, err
		}
		cm, err := defining(name, ns, cms)
		if err != nil {
			return nil, err
		}
		if cm != nil {
			return parse(cm)
		}
	}
	if name == grayapi.PodsGate {
		return BuiltinPods(), nil
	}
	return nil, fmt.Errorf("gate %q is defined nowhere: no ConfigMap labelled %s=%s in namespace %s has the key %q",
		name, grayapi.GatesLabel, grayapi.GatesLabelValue, strings.Join(searched, " or "), name)
}

// searchOrder is where a gate named by a Deployment of namespace is looked for, in order: its
// own namespace, then gray-controller's (cluster-wide defaults); the built-in pods gate comes
// after both. An empty namespace is never searched: listing it would read every namespace's
// ConfigMaps, another tenant's definitions among them.
func searchOrder(namespace, controllerNamespace string) []string {
	order := []string{namespace}
	if controllerNamespace != "" && controllerNamespace != namespace {
		order = append(order, controllerNamespace)
	}
	return order
}

// defining is the one ConfigMap of cms (the definitions of one namespace) that has key name;
// nil when none has it. Two having it is an error, since neither can be said to win; so is a
// ConfigMap kept without its data (TrimConfigMap) when no other has it, since that one might.
func defining(name, namespace string, cms []*corev1.ConfigMap) (*corev1.ConfigMap, error) {
	var found, oversized *corev1.ConfigMap
	for _, cm := range cms {
		if _, ok := cm.Data[OversizedKey]; ok && (oversized == nil || cm.Name < oversized.Name) {
			oversized = cm
		}
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
	if found == nil && oversized != nil {
		return nil, fmt.Errorf("gate %q: ConfigMap %s/%s has %s bytes of data, at most %d read: its definitions, %q among them perhaps, are refused (split it)",
			name, namespace, oversized.Name, oversized.Data[OversizedKey], MaxGatesConfigMap, name)
	}
	return found, nil
}

// SourceOf is how messages name key of cm.
func SourceOf(cm *corev1.ConfigMap, key string) string {
	return fmt.Sprintf("ConfigMap %s/%s, key %q", cm.Namespace, cm.Name, key)
}

// FindProvider is provider name where gray-controller and kubectl gray find it: flagged (the one
// a flag of gray-controller gave, or nil) or the one ConfigMap of cms (those labelled
// kubegray.io/gates=providers in gray-controller's namespace) that has key name, read by parse.
// Two definitions are an error naming both, since neither can be said to win; none is nil, for
// the caller to say where it looked.
func FindProvider(name string, flagged *Provider, cms []*corev1.ConfigMap, parse func(cm *corev1.ConfigMap) (*Provider, error)) (*Provider, error) {
	var sources []string
	found := flagged
	if found != nil {
		sources = append(sources, found.Source)
	}
	for _, cm := range cms {
		if _, ok := cm.Data[name]; !ok {
			continue
		}
		sources = append(sources, SourceOf(cm, name))
		if len(sources) > 1 {
			continue
		}
		p, err := parse(cm)
		if err != nil {
			return nil, err
		}
		found = p
	}
	if len(sources) > 1 {
		slices.Sort(sources)
		return nil, fmt.Errorf("provider %q is defined %d times: %s", name, len(sources), strings.Join(sources, "; "))
	}
	return found, nil
}
