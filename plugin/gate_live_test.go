package plugin

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubegray/kubectl-gray/internal/testutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// gateWorld is web held at 20% on revision 2 (hash new222) over revision 1 (old111), settled 90 s
// ago, with the gates and providers given.
func gateWorld(t *testing.T, names string, definitions, providers map[string]string, pods ...runtime.Object) *fake.Clientset {
	st := &grayapi.Status{Revision: 2, StableRevision: 1, Step: 0, Percent: 20, Target: 2, Phase: grayapi.PhaseHeld, SettledAt: heldAt(90 * time.Second)}
	d := deployment("web", withGray(t, "20", st), testutil.WithAnnotation(grayapi.GatesAnnotation, names))
	objs := []runtime.Object{d, replicaSet(d, "1", "old111", "nginx:1.25", 8, 8, time.Hour), replicaSet(d, "2", "new222", "nginx:1.26", 2, 2, 2*time.Minute),
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "gates", Namespace: ns, Labels: map[string]string{grayapi.GatesLabel: grayapi.GatesLabelValue}}, Data: definitions},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "providers", Namespace: "gray-system", Labels: map[string]string{grayapi.GatesLabel: grayapi.ProvidersLabelValue}}, Data: providers}}
	return fake.NewClientset(append(objs, pods...)...)
}

// runGateTest runs the command's Run as Complete would set it up, against apiServer (the
// service proxy) and with direct queries going to any URL.
func runGateTest(t *testing.T, cs *fake.Clientset, apiServer string, set func(*GateTestOptions)) (string, error) {
	t.Helper()
	streams, out, _ := testStreams()
	api, err := url.Parse(apiServer)
	if err != nil {
		t.Fatal(err)
	}
	o := &GateTestOptions{TargetOptions: TargetOptions{Namespace: ns, Name: "web", Client: cs}, ControllerNamespace: "gray-system",
		APIServer: api, APIClient: http.DefaultClient, Direct: http.DefaultClient, Now: clock, IOStreams: streams}
	if set != nil {
		set(o)
	}
	if err := o.Validate(); err != nil {
		return "", err
	}
	err = o.Run(context.Background())
	return out.String(), err
}

// TestGateTestThroughTheServiceProxy: a compared metric gate's two queries reach the provider's
// Service through the API server's proxy, rendered for the live hashes and scoped to the
// namespace, and the answer is judged as gray-controller judges it.
func TestGateTestThroughTheServiceProxy(t *testing.T) {
	var asked []string
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/namespaces/monitoring/services/prometheus:9090/proxy/api/v1/query" {
			http.Error(w, "unexpected path "+r.URL.Path, http.StatusNotFound)
			return
		}
		q := r.URL.Query().Get("query")
		asked = append(asked, q)
		value := "0.01"
		if strings.Contains(q, "old111") {
			value = "0.02"
		}
		_, _ = w.Write([]byte(`{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"` + value + `"]}]}}`))
	}))
	defer api.Close()
	cs := gateWorld(t, "vs-stable", map[string]string{"vs-stable": "provider: prometheus\ncompare: true\nquery: sum(rate(errors{pod=~\"$pods\"}[$window]))\nsuccess: canary <= stable\n"},
		map[string]string{"prometheus": "type: prometheus\nurl: http://prometheus.monitoring:9090\n"})
	out, err := runGateTest(t, cs, api.URL, nil)
	if err != nil {
		t.Fatalf("gate test: %v\n%s", err, out)
	}
	want := []string{
		`sum(rate(errors{namespace="default",pod=~"web-new222-[a-z0-9]{5}"}[1m30s]))`,
		`sum(rate(errors{namespace="default",pod=~"web-old111-[a-z0-9]{5}"}[1m30s]))`,
	}
	if strings.Join(asked, "\n") != strings.Join(want, "\n") {
		t.Errorf("queries sent:\n%s\nwant:\n%s", strings.Join(asked, "\n"), strings.Join(want, "\n"))
	}
	for _, line := range []string{
		"gate vs-stable: metric gate, provider prometheus (ConfigMap default/gates, key \"vs-stable\")\n",
		"  query (canary): " + want[0] + "\n",
		"  query (stable): " + want[1] + "\n",
		"  value:   canary 0.01, stable 0.02\n",
		"  outcome: Pass: canary <= stable\n",
	} {
		if !strings.Contains(out, line) {
			t.Errorf("output lacks %q:\n%s", line, out)
		}
	}
}

// TestGateTestDryRunSendsNothing: --dry-run prints the rendered query and the webhook's body and
// sends nothing; the window is --window's when given.
func TestGateTestDryRunSendsNothing(t *testing.T) {
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("dry run sent %s", r.URL)
	}))
	defer api.Close()
	cs := gateWorld(t, "errors,smoke", map[string]string{
		"errors": "provider: prometheus\nquery: sum(rate(errors{pod=~\"$canary_pods\"}[$window]))\nsuccess: result < 1.0\n",
		"smoke":  "provider: smoke-tests\n",
	}, map[string]string{
		"prometheus":  "type: prometheus\nurl: http://prometheus.monitoring:9090\nnamespaceLabel: kubernetes_namespace\n",
		"smoke-tests": "type: webhook\nurl: https://smoke.tools.svc/run\nallowedNamespaces: [default]\n",
	})
	out, err := runGateTest(t, cs, api.URL, func(o *GateTestOptions) { o.DryRun, o.Window = true, 5*time.Minute })
	if err != nil {
		t.Fatalf("gate test --dry-run: %v\n%s", err, out)
	}
	for _, line := range []string{
		"  query (result): sum(rate(errors{kubernetes_namespace=\"default\",pod=~\"web-new222-[a-z0-9]{5}\"}[5m]))\n",
		"gate smoke: webhook gate, provider smoke-tests (ConfigMap default/gates, key \"smoke\")\n",
		`"canaryHash": "new222"`,
		`"stableHash": "old111"`,
		"not called: a webhook gate's calls are signed with a key only gray-controller reads\n",
	} {
		if !strings.Contains(out, line) {
			t.Errorf("output lacks %q:\n%s", line, out)
		}
	}
	if strings.Contains(out, "outcome:") {
		t.Errorf("a dry run judged something:\n%s", out)
	}
}

// TestGateTestPodsGateFails: the built-in pods gate counts the revisions' pods as they are; a
// canary restarting while stable does not fails it, and the command exits non-zero after
// printing why.
func TestGateTestPodsGateFails(t *testing.T) {
	d := deployment("web")
	d.UID = "uid-web"
	canaryRS := replicaSet(d, "2", "new222", "nginx:1.26", 2, 2, 2*time.Minute)
	stableRS := replicaSet(d, "1", "old111", "nginx:1.25", 8, 8, time.Hour)
	cs := gateWorld(t, "pods", nil, nil, pod(canaryRS, "aaaaa", true, 4, time.Minute), pod(canaryRS, "bbbbb", true, 3, time.Minute),
		pod(stableRS, "ccccc", true, 0, time.Hour))
	out, err := runGateTest(t, cs, "https://127.0.0.1:1", nil)
	if !errors.Is(err, errGateFailed) {
		t.Fatalf("error %v, want %v\n%s", err, errGateFailed, out)
	}
	for _, line := range []string{
		"gate pods: pods gate, provider pods (built in)\n",
		"  value:   canary: 2 pods, 7 restarts (3.50/pod), 0 OOMKilled, 0 crash-looping, 0 readiness changes, 0 failed; stable: 1 pods, 0 restarts (0.00/pod)",
		"  outcome: Fail: ",
	} {
		if !strings.Contains(out, line) {
			t.Errorf("output lacks %q:\n%s", line, out)
		}
	}
}

// TestGateTestRefusals: what cannot be measured is said with the object and the value.
func TestGateTestRefusals(t *testing.T) {
	providers := map[string]string{"webhooks": "type: webhook\nurl: https://hooks.tools.svc\nallowedNamespaces: [shop]\n"}
	cs := gateWorld(t, "nowhere", map[string]string{"hook": "provider: webhooks\n", "lat": "provider: thanos\nquery: sum(up)\nsuccess: result > 0.0\n"}, providers)
	for _, tc := range []struct {
		name string
		set  func(*GateTestOptions)
		want string
	}{
		{"undefined", nil, `✖ gate nowhere: gate "nowhere" is defined nowhere: no ConfigMap labelled kubegray.io/gates=true in namespace default or gray-system has the key "nowhere"`},
		{"not served", func(o *GateTestOptions) { o.Gates = []string{"lat"} }, `✖ gate lat: provider "thanos" is in no ConfigMap labelled kubegray.io/gates=providers in namespace gray-system; if gray-controller was given it by --prometheus-url, pass that URL (or a port-forward to it) with --provider-url`},
		{"bad url", func(o *GateTestOptions) { o.ProviderURL = "ftp://x" }, "--provider-url: "},
		{"negative window", func(o *GateTestOptions) { o.Window = -time.Second }, "--window -1s: give a positive duration"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := runGateTest(t, cs, "https://127.0.0.1:1", tc.set)
			if err == nil || !strings.Contains(out+err.Error(), tc.want) {
				t.Errorf("error %v, output %q; want %q", err, out, tc.want)
			}
		})
	}
	// Not held yet: no window unless one is given.
	d, err := cs.AppsV1().Deployments(ns).Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	st := &grayapi.Status{Revision: 2, StableRevision: 1, Percent: 20, Target: 2, Phase: grayapi.PhaseProgressing}
	withGray(t, "20", st)(d)
	if _, err := cs.AppsV1().Deployments(ns).Update(context.Background(), d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = runGateTest(t, cs, "https://127.0.0.1:1", nil)
	if want := "deployment default/web has not settled a hold (phase Progressing), so its gates have no window yet: give one with --window"; err == nil || err.Error() != want {
		t.Errorf("error %v, want %q", err, want)
	}
}
