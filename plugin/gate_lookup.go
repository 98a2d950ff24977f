package plugin

// Where `kubectl gray gate test` (gate_live.go) finds what it measures, by gray-controller's
// rules: a gate's definition and its provider, the address a provider in the cluster is reached
// at through the API server's service proxy, and the pods of the canary and stable revisions.

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubegray/kubectl-gray/pkg/deployutil"
	"github.com/kubegray/kubectl-gray/pkg/gates"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
	"github.com/kubegray/kubectl-gray/pkg/podhealth"
)

// definition is gate name's definition for a Deployment of namespace, found where
// gray-controller finds it (gates.Find).
func (o *GateTestOptions) definition(ctx context.Context, namespace, name string) (*gates.Definition, error) {
	list := func(ns string) ([]*corev1.ConfigMap, error) {
		return o.labelledConfigMaps(ctx, ns, grayapi.GatesLabelValue)
	}
	return gates.Find(name, namespace, o.ControllerNamespace, list, func(cm *corev1.ConfigMap) (*gates.Definition, error) {
		return gates.Parse(name, gates.SourceOf(cm, name), cm.Data[name])
	})
}

// providerFor is the provider a metric gate's queries go to, as a URL this process can reach,
// and the client to send them with.
func (o *GateTestOptions) providerFor(ctx context.Context, namespace string, def *gates.Definition) (*gates.Provider, *http.Client, error) {
	p, err := o.provider(ctx, def.Provider)
	if err != nil {
		return nil, nil, err
	}
	if err := def.CheckProvider(p); err != nil {
		return nil, nil, err
	}
	if !p.Allows(namespace) {
		return nil, nil, fmt.Errorf("provider %q (%s) does not serve namespace %s", p.Name, p.Source, namespace)
	}
	sent := *p
	if o.ProviderURL != "" {
		u, _ := url.Parse(o.ProviderURL) // checked by Validate
		sent.URL = u
		return &sent, o.Direct, nil
	}
	if proxied, ok := serviceProxyURL(o.APIServer, p.URL, o.ControllerNamespace); ok {
		sent.URL = proxied
		return &sent, o.APIClient, nil
	}
	return &sent, o.Direct, nil
}

// provider is provider name from the ConfigMaps labelled kubegray.io/gates=providers in
// gray-controller's namespace; with --provider-url, a provider gray-controller was given by a
// flag (which no ConfigMap shows) is that URL with the default namespace label.
func (o *GateTestOptions) provider(ctx context.Context, name string) (*gates.Provider, error) {
	cms, err := o.labelledConfigMaps(ctx, o.ControllerNamespace, grayapi.ProvidersLabelValue)
	if err != nil {
		return nil, err
	}
	found, err := gates.FindProvider(name, nil, cms, func(cm *corev1.ConfigMap) (*gates.Provider, error) {
		return gates.ParseProvider(name, gates.SourceOf(cm, name), cm.Data[name])
	})
	switch {
	case err != nil:
		return nil, err
	case found != nil:
		return found, nil
	case o.ProviderURL != "":
		p, err := gates.PrometheusURLProvider(o.ProviderURL)
		if err != nil {
			return nil, err
		}
		// Its floor is gray-controller's --prometheus-min-interval, which the plugin cannot read:
		// the test measures whatever interval the gate asks for.
		p.Name, p.Source, p.MinInterval = name, "--provider-url", gates.MinInterval
		return p, nil
	}
	return nil, fmt.Errorf("provider %q is in no ConfigMap labelled %s=%s in namespace %s; if gray-controller was given it by --prometheus-url, pass that URL (or a port-forward to it) with --provider-url",
		name, grayapi.GatesLabel, grayapi.ProvidersLabelValue, o.ControllerNamespace)
}

// labelledConfigMaps lists namespace's ConfigMaps labelled kubegray.io/gates=value.
func (o *GateTestOptions) labelledConfigMaps(ctx context.Context, namespace, value string) ([]*corev1.ConfigMap, error) {
	list, err := o.Client.CoreV1().ConfigMaps(namespace).List(ctx, metav1.ListOptions{
		LabelSelector: labels.SelectorFromSet(labels.Set{grayapi.GatesLabel: value}).String()})
	if err != nil {
		return nil, fmt.Errorf("listing the ConfigMaps labelled %s=%s in namespace %s: %w", grayapi.GatesLabel, value, namespace, err)
	}
	out := make([]*corev1.ConfigMap, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, &list.Items[i])
	}
	return out, nil
}

// revisionPods are the pods of the canary and of the stable ReplicaSet, as the pods gate reads
// them; terminating pods are left out, as gray-controller leaves them out.
func (o *GateTestOptions) revisionPods(ctx context.Context, k liveHold) (canaryPods, stablePods []gates.Pod, err error) {
	selector, err := metav1.LabelSelectorAsSelector(k.d.Spec.Selector)
	if err != nil {
		return nil, nil, fmt.Errorf("deployment %s/%s has an invalid selector: %w", k.d.Namespace, k.d.Name, err)
	}
	list, err := o.Client.CoreV1().Pods(k.d.Namespace).List(ctx, metav1.ListOptions{LabelSelector: selector.String()})
	if err != nil {
		return nil, nil, fmt.Errorf("listing the pods of deployment %s/%s: %w", k.d.Namespace, k.d.Name, err)
	}
	for i := range list.Items {
		pod := &list.Items[i]
		ref := metav1.GetControllerOf(pod)
		switch {
		case pod.DeletionTimestamp != nil || ref == nil:
		case ref.UID == k.canary.UID:
			canaryPods = append(canaryPods, podhealth.Of(pod))
		case ref.UID == k.stable.UID:
			stablePods = append(stablePods, podhealth.Of(pod))
		}
	}
	return canaryPods, stablePods, nil
}

// atRevision is the ReplicaSet of rss at revision rev (nil when none is).
func atRevision(rss []*appsv1.ReplicaSet, rev int64) *appsv1.ReplicaSet {
	for _, rs := range rss {
		if n, err := deployutil.Revision(rs); err == nil && n == rev {
			return rs
		}
	}
	return nil
}

// hashOf is rs's pod-template-hash label.
func hashOf(rs *appsv1.ReplicaSet) string {
	return rs.Labels[appsv1.DefaultDeploymentUniqueLabelKey]
}

// serviceProxyURL is the API server's service proxy address of provider URL u when u names a
// Service: http(s)://NAME.NAMESPACE[.svc[.DOMAIN]][:PORT]/PATH, or a bare NAME, a Service of
// gray-controller's namespace (controllerNamespace), as cluster DNS resolves them. Other hosts
// (IP addresses, names outside the cluster) are reached directly.
func serviceProxyURL(apiServer, u *url.URL, controllerNamespace string) (*url.URL, bool) {
	host := u.Hostname()
	if net.ParseIP(host) != nil {
		return nil, false
	}
	labels := strings.Split(host, ".")
	var name, namespace string
	switch {
	case len(labels) == 1:
		name, namespace = labels[0], controllerNamespace
	case len(labels) == 2 || labels[2] == "svc":
		name, namespace = labels[0], labels[1]
	default:
		return nil, false
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	// The API server's form is [scheme:]name:port; plain HTTP needs no scheme.
	service := name + ":" + port
	if u.Scheme == "https" {
		service = "https:" + service
	}
	return apiServer.JoinPath("api", "v1", "namespaces", namespace, "services", service, "proxy", u.Path), true
}
