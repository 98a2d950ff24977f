package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/kubegray/kubectl-gray/internal/testutil"
	"github.com/kubegray/kubectl-gray/pkg/gates"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
	"github.com/kubegray/kubectl-gray/test/cluster"
	"github.com/kubegray/kubectl-gray/test/image"
)

// The chart installs as this release, in this namespace, in every test: the
// names manifests/ uses, so that the two render the same objects.
const (
	chartPath           = "../../charts/gray-controller"
	releaseName         = "gray-controller"
	releaseNS           = "gray-system"
	chartServiceAccount = "gray-controller"
)

// helmLabels are the labels Helm charts conventionally add; the chart has
// them and the kustomize overlays do not. They are the one difference in
// objects both render.
var helmLabels = []string{"helm.sh/chart", "app.kubernetes.io/instance", "app.kubernetes.io/version", "app.kubernetes.io/managed-by"}

// helmCmd runs the pinned helm ($KUBEGRAY_HELM, set by the Makefile from
// test/tools/helm) and returns its standard output.
func helmCmd(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(helmBinary(t), args...)
	// Keep helm's cache, config and data out of the home folder.
	home := t.TempDir()
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+home+"/cache", "HELM_CONFIG_HOME="+home+"/config", "HELM_DATA_HOME="+home+"/data")
	out, err := cmd.Output()
	if err != nil {
		stderr := ""
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	return string(out)
}

// objects parses a multi-document YAML stream into objects keyed by
// kind/namespace/name.
func objects(t *testing.T, stream string) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for _, doc := range strings.Split(stream, "\n---") {
		var obj map[string]any
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			t.Fatalf("parse %q: %v", doc, err)
		}
		if len(obj) == 0 {
			continue
		}
		u := unstructured.Unstructured{Object: obj}
		out[u.GetKind()+"/"+u.GetNamespace()+"/"+u.GetName()] = obj
	}
	return out
}

func sortedKeys(m map[string]map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// TestHelmMatchesKustomize renders the chart with its defaults (and
// mode=instead, and installPolicies=false for alongside-eager, and
// networkPolicy.enabled=true for alongside with the networkpolicy component) and
// the matching kustomize overlay, and wants the same objects. The differences it explains, and nothing else:
//   - the Namespace: kustomize makes gray-system with the restricted Pod
//     Security label; Helm installs into a namespace that exists or that
//     `helm install --create-namespace` makes;
//   - Helm's standard labels (helmLabels) on the chart's objects (all but
//     the admission policies, which the chart takes verbatim from
//     manifests/alongside through the links in its files/ folder).
func TestHelmMatchesKustomize(t *testing.T) {
	for overlay, values := range map[string]string{
		"alongside":               "mode=alongside",
		"alongside-eager":         "mode=alongside,installPolicies=false",
		"instead":                 "mode=instead",
		"alongside+networkpolicy": "mode=alongside,networkPolicy.enabled=true",
	} {
		t.Run(overlay, func(t *testing.T) {
			chart := objects(t, helmCmd(t, "template", releaseName, chartPath, "--namespace", releaseNS, "--set", values))
			out, err := exec.Command("kubectl", "kustomize", kustomizeDir(t, overlay)).Output()
			if err != nil {
				t.Fatalf("kubectl kustomize manifests/%s: %v", overlay, err)
			}
			kust := objects(t, string(out))
			delete(kust, "Namespace//"+releaseNS)
			for key, obj := range chart {
				u := unstructured.Unstructured{Object: obj}
				labels := u.GetLabels()
				for _, l := range helmLabels {
					// The policies come verbatim from manifests/alongside,
					// without labels; every other object has Helm's.
					if _, ok := labels[l]; !ok && labels["app.kubernetes.io/name"] != "" {
						t.Errorf("%s: no Helm label %s", key, l)
					}
					delete(labels, l)
				}
				u.SetLabels(labels)
				if len(labels) == 0 {
					unstructured.RemoveNestedField(obj, "metadata", "labels")
				}
			}
			if diff := cmp.Diff(sortedKeys(kust), sortedKeys(chart)); diff != "" {
				t.Fatalf("objects differ (-kustomize +helm):\n%s", diff)
			}
			for _, key := range sortedKeys(kust) {
				if diff := cmp.Diff(kust[key], chart[key]); diff != "" {
					t.Errorf("%s differs (-kustomize +helm):\n%s", key, diff)
				}
			}
			t.Logf("%s: helm template renders %d objects, the kustomize overlay %d (with its Namespace)", overlay, len(chart), len(kust)+1)
		})
	}
}

// kustomizeDir is the folder to kustomize for overlay: manifests/<overlay>, or for
// "<overlay>+<component>" a new kustomization of that overlay with that component.
func kustomizeDir(t *testing.T, overlay string) string {
	t.Helper()
	overlay, component, ok := strings.Cut(overlay, "+")
	manifests, err := filepath.Abs("../../manifests")
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		return filepath.Join(manifests, overlay)
	}
	dir := t.TempDir()
	// kustomize takes relative paths only.
	rel, err := filepath.Rel(dir, manifests)
	if err != nil {
		t.Fatal(err)
	}
	kustomization := "resources:\n  - " + filepath.Join(rel, overlay) + "\ncomponents:\n  - " + filepath.Join(rel, component) + "\n"
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(kustomization), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestHelmInstall installs the chart with helm into a real control plane in
// alongside mode (the built-in deployment controller running), runs the
// controller from the image with the chart's ServiceAccount, RBAC and
// arguments, holds a gray rollout, and checks that `helm uninstall` leaves
// none of the chart's objects behind.
func TestHelmInstall(t *testing.T) {
	if os.Getenv("KUBEGRAY_HELM") == "" {
		t.Skip("KUBEGRAY_HELM is not set: run `make helm-check`")
	}
	_, idx := servedImage(t)
	amd64, err := image.PlatformImage(idx, image.Platforms[0])
	if err != nil {
		t.Fatal(err)
	}
	c := cluster.StartForTest(t, cluster.Options{})
	kc := "--kubeconfig=" + c.Kubeconfig
	// --wait: kwok's fake nodes make the chart's pods Running and Ready, so
	// this also proves the Deployment, its pod security and its scheduling
	// are acceptable to the API server.
	helmCmd(t, "install", releaseName, chartPath, kc, "--namespace", releaseNS, "--create-namespace", "--wait", "--timeout", "2m")
	manifest := objects(t, helmCmd(t, "get", "manifest", releaseName, kc, "--namespace", releaseNS))
	waitTakeoverPolicy(t, c)

	ctx := context.Background()
	d, err := c.Client.AppsV1().Deployments(releaseNS).Get(ctx, "gray-controller", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod := d.Spec.Template.Spec
	if pod.ServiceAccountName != chartServiceAccount || len(pod.Containers) != 1 {
		t.Fatalf("chart Deployment: serviceAccount %q, %d containers", pod.ServiceAccountName, len(pod.Containers))
	}
	// The chart's image tag is a release not published from here; the
	// image built by `make image` stands in for it.
	t.Logf("chart image %s, run from the local build instead", pod.Containers[0].Image)
	args := hostArgs(t, pod.Containers[0], releaseNS)
	if !slices.Contains(args, "--memory-limit=268435456") {
		t.Errorf("chart args %q: want --memory-limit from limits.memory, 256Mi in bytes", args)
	}
	ctrl := runFromImage(t, c, amd64, releaseNS, chartServiceAccount, args...)

	e := newGrayEnv(t, c, "helm")
	e.startStable(testutil.GrayDeployment("web", 10, "20"))
	e.do(setImage("web", "nginx:1.26"))
	e.expect("web", grayState{phase: grayapi.PhaseHeld, newSpec: 2, oldTotal: 8, paused: true})
	e.finish("web", 10)
	ctrl.terminate(t)

	helmCmd(t, "uninstall", releaseName, kc, "--namespace", releaseNS, "--wait", "--timeout", "2m")
	dyn, err := dynamic.NewForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range sortedKeys(manifest) {
		u := unstructured.Unstructured{Object: manifest[key]}
		gvr, err := resourceOf(c, u.GroupVersionKind().GroupVersion().String(), u.GetKind())
		if err != nil {
			t.Fatal(err)
		}
		_, err = dyn.Resource(gvr).Namespace(u.GetNamespace()).Get(ctx, u.GetName(), metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			t.Errorf("%s still there after helm uninstall (%v)", key, err)
		}
	}
	leftovers(t, c, dyn)
}

// resourceOf maps a kind to its resource through discovery.
func resourceOf(c *cluster.Cluster, groupVersion, kind string) (schema.GroupVersionResource, error) {
	list, err := c.Client.Discovery().ServerResourcesForGroupVersion(groupVersion)
	if err != nil {
		return schema.GroupVersionResource{}, err
	}
	gv, err := schema.ParseGroupVersion(groupVersion)
	if err != nil {
		return schema.GroupVersionResource{}, err
	}
	for _, r := range list.APIResources {
		if r.Kind == kind && !strings.Contains(r.Name, "/") {
			return gv.WithResource(r.Name), nil
		}
	}
	return schema.GroupVersionResource{}, fmt.Errorf("no resource for %s %s", groupVersion, kind)
}

// leftovers lists what is left in the release namespace and the admission
// policies of the cluster. What the namespace itself makes (ServiceAccount
// default, ConfigMap kube-root-ca.crt), the controller's leader-election
// Lease and events are not the chart's: they go with the namespace.
func leftovers(t *testing.T, c *cluster.Cluster, dyn dynamic.Interface) {
	t.Helper()
	ctx := context.Background()
	notChart := map[string]bool{
		"serviceaccounts/default": true, "configmaps/kube-root-ca.crt": true, "leases/gray-controller": true,
	}
	namespaced := []schema.GroupVersionResource{
		{Version: "v1", Resource: "serviceaccounts"}, {Version: "v1", Resource: "configmaps"},
		{Version: "v1", Resource: "secrets"}, {Version: "v1", Resource: "services"},
		{Group: "apps", Version: "v1", Resource: "deployments"}, {Group: "apps", Version: "v1", Resource: "replicasets"},
		{Version: "v1", Resource: "pods"}, {Group: "policy", Version: "v1", Resource: "poddisruptionbudgets"},
		{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "roles"},
		{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"},
		{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"},
	}
	var kept []string
	for _, gvr := range namespaced {
		list, err := dyn.Resource(gvr).Namespace(releaseNS).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, item := range list.Items {
			key := gvr.Resource + "/" + item.GetName()
			if notChart[key] {
				kept = append(kept, key)
				continue
			}
			// Pods of the uninstalled Deployment may still be terminating.
			if gvr.Resource == "pods" && item.GetDeletionTimestamp() != nil {
				continue
			}
			t.Errorf("%s/%s left in namespace %s after helm uninstall", gvr.Resource, item.GetName(), releaseNS)
		}
	}
	t.Logf("left in namespace %s, none of them the chart's: %v", releaseNS, kept)
	for _, res := range []string{"mutatingadmissionpolicies", "mutatingadmissionpolicybindings", "validatingadmissionpolicies", "validatingadmissionpolicybindings"} {
		list, err := dyn.Resource(schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: res}).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, item := range list.Items {
			t.Errorf("%s %s left after helm uninstall", res, item.GetName())
		}
	}
	for _, res := range []string{"clusterroles", "clusterrolebindings"} {
		_, err := dyn.Resource(schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: res}).Get(ctx, "gray-controller", metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			t.Errorf("%s gray-controller left after helm uninstall (%v)", res, err)
		}
	}
}

// hostArgs are the chart container's arguments for a gray-controller process run on this host:
// expanded as the kubelet would, less the bind addresses (the harness gives each process loopback
// ports of its own).
func hostArgs(t *testing.T, container corev1.Container, namespace string) []string {
	t.Helper()
	var args []string
	for _, a := range expandContainerArgs(t, container, namespace) {
		if !strings.HasPrefix(a, "--metrics-bind-address=") && !strings.HasPrefix(a, "--health-probe-bind-address=") {
			args = append(args, a)
		}
	}
	return args
}

// hostPodName is the pod name $(POD_NAME) stands for in the args of a controller run as a process.
const hostPodName = "gray-controller-on-host"

// expandContainerArgs does what the kubelet does to a container's args: $(NAME) becomes the
// value of the container's env var NAME. It knows the env sources the chart uses (a value, the
// pod's name and namespace, the container's memory limit) and fails on any other.
func expandContainerArgs(t *testing.T, container corev1.Container, namespace string) []string {
	t.Helper()
	var pairs []string
	for _, env := range container.Env {
		value := env.Value
		switch from := env.ValueFrom; {
		case from == nil:
		case from.FieldRef != nil && from.FieldRef.FieldPath == "metadata.namespace":
			value = namespace
		case from.FieldRef != nil && from.FieldRef.FieldPath == "metadata.name":
			// The process the tests run stands for a pod of this name.
			value = hostPodName
		case from.ResourceFieldRef != nil && from.ResourceFieldRef.Resource == "limits.memory":
			value = strconv.FormatInt(container.Resources.Limits.Memory().Value(), 10)
		default:
			t.Fatalf("env %s of the chart's container: a source this test does not resolve: %+v", env.Name, from)
		}
		pairs = append(pairs, "$("+env.Name+")", value)
	}
	replacer := strings.NewReplacer(pairs...)
	args := make([]string, len(container.Args))
	for i, a := range container.Args {
		args[i] = replacer.Replace(a)
	}
	return args
}

// TestHelmGateProviders renders the chart with a Prometheus URL and a provider, and wants the
// flag on the controller and the provider in a ConfigMap gray-controller reads as one.
func TestHelmGateProviders(t *testing.T) {
	rendered := helmCmd(t, "template", releaseName, chartPath, "--namespace", releaseNS,
		"--set", "gates.prometheusURL=http://prometheus.monitoring:9090",
		"--set", "gates.providers.thanos.type=prometheus,gates.providers.thanos.url=http://thanos-query.monitoring:9090,gates.providers.thanos.timeout=5s")
	objs := objects(t, rendered)
	cm, ok := objs["ConfigMap/"+releaseNS+"/gray-controller-gate-providers"]
	if !ok {
		t.Fatalf("no ConfigMap gray-controller-gate-providers among %v", sortedKeys(objs))
	}
	u := unstructured.Unstructured{Object: cm}
	if got := u.GetLabels()[grayapi.GatesLabel]; got != grayapi.ProvidersLabelValue {
		t.Errorf("providers ConfigMap label %s=%q, want %q", grayapi.GatesLabel, got, grayapi.ProvidersLabelValue)
	}
	text, _, _ := unstructured.NestedString(cm, "data", "thanos")
	p, err := gates.ParseProvider("thanos", "chart", text)
	if err != nil || p.URL.String() != "http://thanos-query.monitoring:9090" || p.Timeout != 5*time.Second {
		t.Errorf("provider thanos as rendered (%q): %+v, %v", text, p, err)
	}
	if !strings.Contains(rendered, "- --prometheus-url=http://prometheus.monitoring:9090\n") {
		t.Errorf("the controller's args do not carry --prometheus-url:\n%s", rendered)
	}
	if _, ok := objs["Role/"+releaseNS+"/gray-controller-gate-secrets"]; ok {
		t.Errorf("a Role for Secrets, though no provider names one")
	}

	// Every field the values schema allows a provider is one pkg/gates reads.
	objs = objects(t, helmCmd(t, "template", releaseName, chartPath, "--namespace", releaseNS,
		"--set", "gates.providers.thanos.type=prometheus,gates.providers.thanos.url=https://thanos:9091,gates.providers.thanos.timeout=5s",
		"--set", "gates.providers.thanos.namespaceLabel=tenant,gates.providers.thanos.concurrency=4,gates.providers.thanos.bearerTokenSecret=thanos-token,gates.providers.thanos.minInterval=30s",
		"--set", "gates.providers.thanos.tls.caSecret=thanos-ca",
		"--set", "gates.providers.smoke.type=webhook,gates.providers.smoke.url=https://smoke:8443,gates.providers.smoke.signingSecret=smoke-key",
		"--set", "gates.providers.smoke.allowedNamespaces={shop},gates.providers.smoke.tls.insecureSkipVerify=true"))
	for _, name := range []string{"thanos", "smoke"} {
		text, _, _ := unstructured.NestedString(objs["ConfigMap/"+releaseNS+"/gray-controller-gate-providers"], "data", name)
		if _, err := gates.ParseProvider(name, "chart", text); err != nil {
			t.Errorf("provider %s as rendered (%q): %v", name, text, err)
		}
	}
}

// TestHelmGateSecrets: gray-controller may read the Secrets its providers name (and those
// gates.secrets adds, for providers defined outside the chart), no other.
func TestHelmGateSecrets(t *testing.T) {
	rendered := helmCmd(t, "template", releaseName, chartPath, "--namespace", releaseNS,
		"--set", "gates.providers.smoke.type=webhook,gates.providers.smoke.url=https://smoke.tools.svc/run,gates.providers.smoke.allowedNamespaces={shop}",
		"--set", "gates.providers.smoke.signingSecret=smoke-key,gates.providers.smoke.bearerTokenSecret=smoke-token,gates.providers.smoke.tls.caSecret=tools-ca",
		"--set", "gates.providers.thanos.type=prometheus,gates.providers.thanos.url=https://thanos.monitoring:9090,gates.providers.thanos.tls.caSecret=tools-ca",
		"--set", "gates.secrets={team-hooks-key}")
	objs := objects(t, rendered)
	role, ok := objs["Role/"+releaseNS+"/gray-controller-gate-secrets"]
	if !ok {
		t.Fatalf("no Role gray-controller-gate-secrets among %v", sortedKeys(objs))
	}
	rules, _, _ := unstructured.NestedSlice(role, "rules")
	want := []any{map[string]any{"apiGroups": []any{""}, "resources": []any{"secrets"}, "verbs": []any{"get"},
		"resourceNames": []any{"smoke-key", "smoke-token", "team-hooks-key", "tools-ca"}}}
	if !reflect.DeepEqual(rules, want) {
		t.Errorf("Role rules %v, want %v", rules, want)
	}
	if _, ok := objs["RoleBinding/"+releaseNS+"/gray-controller-gate-secrets"]; !ok {
		t.Errorf("no RoleBinding gray-controller-gate-secrets among %v", sortedKeys(objs))
	}
}

// TestHelmPrometheusRule: the chart's PrometheusRule and dashboard, when enabled, carry the rules
// and the dashboard of manifests/monitoring unchanged (a template must not read their {{ $labels }}
// as its own).
func TestHelmPrometheusRule(t *testing.T) {
	if _, ok := objects(t, helmCmd(t, "template", releaseName, chartPath, "--namespace", releaseNS))["PrometheusRule/"+releaseNS+"/gray-controller"]; ok {
		t.Errorf("a PrometheusRule by default")
	}
	objs := objects(t, helmCmd(t, "template", releaseName, chartPath, "--namespace", releaseNS, "--set", "metrics.prometheusRule.enabled=true"))
	rule, ok := objs["PrometheusRule/"+releaseNS+"/gray-controller"]
	if !ok {
		t.Fatalf("no PrometheusRule gray-controller among %v", sortedKeys(objs))
	}
	var want map[string]any
	if err := yaml.Unmarshal(alertRules(t), &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(rule["spec"], want) {
		t.Errorf("the chart's rules differ from %s:\n%v\nwant\n%v", prometheusRulePath, rule["spec"], want)
	}
	wantRuleValues(t)
	objs = objects(t, helmCmd(t, "template", releaseName, chartPath, "--namespace", releaseNS, "--set", "metrics.grafanaDashboard.enabled=true"))
	cm, ok := objs["ConfigMap/"+releaseNS+"/gray-controller-dashboard"]
	if !ok {
		t.Fatalf("no ConfigMap gray-controller-dashboard among %v", sortedKeys(objs))
	}
	dashboard, err := os.ReadFile(dashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	u := unstructured.Unstructured{Object: cm}
	// objects splits the documents at "\n---", which takes the block's last line break with it.
	got, _, _ := unstructured.NestedString(cm, "data", "gray-controller.json")
	if strings.TrimSuffix(got, "\n") != strings.TrimSuffix(string(dashboard), "\n") || u.GetLabels()["grafana_dashboard"] != "1" {
		t.Errorf("the chart's dashboard ConfigMap (labels %v) does not carry %s as it is", u.GetLabels(), dashboardPath)
	}
}

// wantRuleValues: metrics.prometheusRule.alertLabels labels every alert, and alerts.<alert> sets
// that alert's severity and for, the others keeping the rule file's; the schema names exactly
// the rule file's alerts.
func wantRuleValues(t *testing.T) {
	t.Helper()
	objs := objects(t, helmCmd(t, "template", releaseName, chartPath, "--namespace", releaseNS, "--set", "metrics.prometheusRule.enabled=true",
		"--set", "metrics.prometheusRule.alertLabels.team=platform",
		"--set", "metrics.prometheusRule.alerts.GrayControllerNoLeader.severity=warning",
		"--set", "metrics.prometheusRule.alerts.GrayControllerNoLeader.for=10m"))
	rules := map[string]map[string]any{}
	groups, _, _ := unstructured.NestedSlice(objs["PrometheusRule/"+releaseNS+"/gray-controller"], "spec", "groups")
	for _, g := range groups {
		rs, _, _ := unstructured.NestedSlice(g.(map[string]any), "rules")
		for _, r := range rs {
			rule := r.(map[string]any)
			rules[rule["alert"].(string)] = rule
		}
	}
	want := map[string]string{"GrayControllerNoLeader": "warning 10m team=platform", "GrayRolloutFailed": "warning 1m team=platform",
		"GrayRolloutHeldTooLong": "info 5m team=platform"}
	for alert, w := range want {
		r := rules[alert]
		labels, _, _ := unstructured.NestedStringMap(r, "labels")
		if got := fmt.Sprintf("%s %v team=%s", labels["severity"], r["for"], labels["team"]); got != w {
			t.Errorf("alert %s rendered with severity, for and team %q, want %q", alert, got, w)
		}
	}
	data, err := os.ReadFile(chartPath + "/values.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var schema struct {
		Properties struct {
			Metrics struct {
				Properties struct {
					PrometheusRule struct {
						Properties struct {
							Alerts struct {
								Properties map[string]any `json:"properties"`
							} `json:"alerts"`
						} `json:"properties"`
					} `json:"prometheusRule"`
				} `json:"properties"`
			} `json:"metrics"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(data, &schema); err != nil {
		t.Fatal(err)
	}
	inSchema := slices.Sorted(maps.Keys(schema.Properties.Metrics.Properties.PrometheusRule.Properties.Alerts.Properties))
	if shipped := slices.Sorted(maps.Keys(rules)); !slices.Equal(inSchema, shipped) {
		t.Errorf("values.schema.json names alerts %v, the rules are %v", inSchema, shipped)
	}
}

// helmBinary is the helm the Makefile built ($KUBEGRAY_HELM).
func helmBinary(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("KUBEGRAY_HELM")
	if bin == "" {
		t.Skip("KUBEGRAY_HELM is not set: run `make helm-check`")
	}
	return bin
}

// TestHelmValuesSchema: values.schema.json refuses values the templates would render into
// objects the API server refuses or, worse, accepts meaning something else; each refusal names
// the value.
func TestHelmValuesSchema(t *testing.T) {
	for _, tc := range []struct{ set, want string }{
		{"replicas=abc", "at '/replicas': got string, want integer"},
		{"replicas=0", "at '/replicas': minimum: got 0, want 1"},
		{"mode=instaed", "at '/mode': value must be one of 'alongside', 'instead'"},
		{"takeover=lazy", "at '/takeover': value must be one of '', 'admission', 'eager'"},
		{"metrics.serviceMonitor.interval=30", "at '/metrics/serviceMonitor/interval'"},
		{"gates.providers.p.url=http://x", "at '/gates/providers/p': missing property 'type'"},
		{"replica=3", "additional properties 'replica' not allowed"},
		{"namespaces={shop,Web}", "at '/namespaces/1': 'Web' does not match pattern"},
		{"namespaces={shop,shop}", "at '/namespaces': items at 0 and 1 are equal"},
		// The Kubernetes objects passed through are checked field by field.
		{"resources.limit.cpu=1", "at '/resources': additional properties 'limit' not allowed"},
		{"resources.limits.memory=lots", "at '/resources/limits/memory': 'lots' does not match pattern"},
		{"affinity.podAntiAfinity.x=1", "at '/affinity': additional properties 'podAntiAfinity' not allowed"},
		{"affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologykey=x",
			"at '/affinity/podAntiAffinity/requiredDuringSchedulingIgnoredDuringExecution/0': missing property 'topologyKey'"},
		{"tolerations[0].operator=Exist", "at '/tolerations/0/operator': value must be one of 'Exists', 'Equal'"},
		{"securityContext.readOnlyRootFileSystem=true", "at '/securityContext': additional properties 'readOnlyRootFileSystem' not allowed"},
		{"podSecurityContext.runAsUser=-1", "at '/podSecurityContext/runAsUser': minimum: got -1, want 0"},
		{"strategy.type=Rolling", "at '/strategy/type': value must be one of 'RollingUpdate', 'Recreate'"},
		{"topologySpreadConstraints[0].maxSkew=1", "at '/topologySpreadConstraints/0': missing properties 'topologyKey', 'whenUnsatisfiable'"},
		{"imagePullSecrets[0].nam=x", "at '/imagePullSecrets/0': missing property 'name'"},
		{"metrics.serviceMonitor.tlsConfig.insecureSkipVerfy=true", "at '/metrics/serviceMonitor/tlsConfig': additional properties 'insecureSkipVerfy' not allowed"},
		{"gates.providers.p.type=prometheus,gates.providers.p.url=http://x,gates.providers.p.timout=5s", "at '/gates/providers/p': additional properties 'timout' not allowed"},
		{"metrics.prometheusRule.alerts.GrayNope.for=1m", "at '/metrics/prometheusRule/alerts': additional properties 'GrayNope' not allowed"},
		{"metrics.prometheusRule.alerts.GrayRolloutFailed.for=soon", "at '/metrics/prometheusRule/alerts/GrayRolloutFailed/for': 'soon' does not match pattern"},
		{"networkPolicy.apiServer.ports={0}", "at '/networkPolicy/apiServer/ports/0': minimum: got 0, want 1"},
		{"networkPolicy.provider=x", "at '/networkPolicy': additional properties 'provider' not allowed"},
		{"mode=instead,namespaces={shop}", "namespaces [shop] needs mode alongside: in instead mode gray-controller is the cluster's only Deployment controller"},
	} {
		out, err := exec.Command(helmBinary(t), "template", releaseName, chartPath, "--set", tc.set).CombinedOutput()
		if err == nil || !strings.Contains(string(out), tc.want) {
			t.Errorf("--set %s: %v, output lacks %q:\n%s", tc.set, err, tc.want, out)
		}
	}
}

// TestHelmServiceMonitor: the chart's ServiceMonitor honours the series' labels (the rollouts'
// namespace) and verifies gray-controller's certificate: with metrics.certSecret it mounts that
// Secret for --metrics-cert-dir and verifies with its ca.crt for the Service's name; with neither
// that nor a tlsConfig it is refused. metrics.prometheusServiceAccount binds the metrics reader.
func TestHelmServiceMonitor(t *testing.T) {
	objs := objects(t, helmCmd(t, "template", releaseName, chartPath, "--namespace", releaseNS,
		"--set", "metrics.serviceMonitor.enabled=true", "--set", "metrics.certSecret=metrics-tls",
		"--set", "metrics.serviceMonitor.scrapeTimeout=5s", "--set", "metrics.serviceMonitor.relabelings[0].targetLabel=cluster",
		"--set", "metrics.serviceMonitor.relabelings[0].replacement=prod",
		"--set", "metrics.prometheusServiceAccount.name=prometheus-k8s", "--set", "metrics.prometheusServiceAccount.namespace=monitoring"))
	endpoints, _, _ := unstructured.NestedSlice(objs["ServiceMonitor/"+releaseNS+"/gray-controller"], "spec", "endpoints")
	if len(endpoints) != 1 {
		t.Fatalf("ServiceMonitor endpoints %v, want one", endpoints)
	}
	want := map[string]any{"port": "metrics", "path": "/metrics", "scheme": "https", "bearerTokenFile": "/var/run/secrets/kubernetes.io/serviceaccount/token",
		"honorLabels": true, "interval": "30s", "scrapeTimeout": "5s",
		"tlsConfig":   map[string]any{"ca": map[string]any{"secret": map[string]any{"name": "metrics-tls", "key": "ca.crt"}}, "serverName": "gray-controller-metrics.gray-system.svc"},
		"relabelings": []any{map[string]any{"targetLabel": "cluster", "replacement": "prod"}}}
	if diff := cmp.Diff(want, endpoints[0]); diff != "" {
		t.Errorf("ServiceMonitor endpoint (-want +got):\n%s", diff)
	}
	d := objs["Deployment/"+releaseNS+"/gray-controller"]
	containers, _, _ := unstructured.NestedSlice(d, "spec", "template", "spec", "containers")
	args, _, _ := unstructured.NestedStringSlice(containers[0].(map[string]any), "args")
	mounts, _, _ := unstructured.NestedSlice(containers[0].(map[string]any), "volumeMounts")
	volumes, _, _ := unstructured.NestedSlice(d, "spec", "template", "spec", "volumes")
	if !slices.Contains(args, "--metrics-cert-dir=/etc/gray-controller/metrics-tls") || len(mounts) != 1 || len(volumes) != 1 ||
		fmt.Sprint(mounts[0]) != "map[mountPath:/etc/gray-controller/metrics-tls name:metrics-tls readOnly:true]" ||
		fmt.Sprint(volumes[0]) != "map[name:metrics-tls secret:map[secretName:metrics-tls]]" {
		t.Errorf("the Deployment does not serve Secret metrics-tls: args %v, mounts %v, volumes %v", args, mounts, volumes)
	}
	binding := objs["ClusterRoleBinding//gray-controller-metrics-reader"]
	subjects, _, _ := unstructured.NestedSlice(binding, "subjects")
	role, _, _ := unstructured.NestedString(binding, "roleRef", "name")
	if role != "gray-controller-metrics-reader" || fmt.Sprint(subjects) != "[map[kind:ServiceAccount name:prometheus-k8s namespace:monitoring]]" {
		t.Errorf("ClusterRoleBinding gray-controller-metrics-reader binds %s to %v, want the metrics reader to monitoring/prometheus-k8s", role, subjects)
	}

	out, err := exec.Command(helmBinary(t), "template", releaseName, chartPath, "--set", "metrics.serviceMonitor.enabled=true").CombinedOutput()
	if want := "metrics.serviceMonitor needs metrics.certSecret"; err == nil || !strings.Contains(string(out), want) {
		t.Errorf("a ServiceMonitor with no way to verify the certificate: %v, output lacks %q:\n%s", err, want, out)
	}
}
