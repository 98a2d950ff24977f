package graysync

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/kubegray/kubectl-gray/internal/testutil"
	"github.com/kubegray/kubectl-gray/pkg/gates"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// putPods puts n ready pods of ReplicaSet name, none restarted, into the pod cache.
func (w *grayWorld) putPods(name string, n int) {
	w.t.Helper()
	rs := w.replicaSet(name)
	for i := range n {
		name := fmt.Sprintf("%s-%d", rs.Name, i)
		w.f.cache(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: rs.Namespace, Name: name, UID: types.UID(name),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(rs, appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))}},
			Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}})
	}
}

// TestGatePassedSaidWhenTheReportConflicts: the sync whose measurement completes the pods
// gate's passes also leaves the hold (hold-for ran out before); its hold write lands and its
// status write conflicts. The GrayGatePassed event must go out all the same: the next sync
// reads the next step and has no hold left to say it of.
func TestGatePassedSaidWhenTheReportConflicts(t *testing.T) {
	w := startGray(t, testutil.GrayWeb(10, "20,50", testutil.WithAnnotation(grayapi.GatesAnnotation, "pods"),
		testutil.WithAnnotation(grayapi.HoldForAnnotation, "5s")))
	w.setImage("v2")
	w.settle()
	wantPhase(t, w, grayapi.PhaseHeld)
	canary := w.canaryName()
	w.putPods(canary, 2)
	w.putPods("web-v1", 8)
	// The built-in pods gate: the baseline now, then a pass every 30 s.
	at := func(seconds int) {
		w.f.now = testNow.Add(time.Duration(seconds) * time.Second)
	}
	for _, s := range []int{1, 31, 61} {
		at(s)
		w.sync()
	}
	if st := w.status(); len(st.Gates) != 1 || st.Gates[0].Passes != 2 || st.Step != 0 {
		t.Fatalf("status %+v, want step 0 with 2 passes of the pods gate", st)
	}
	w.takeEvents()
	conflicted := w.conflictNextStatusWrite()
	at(91)
	w.sync()
	if !*conflicted {
		t.Fatal("the sync wrote no status: nothing conflicted")
	}
	if st := w.status(); st.Step != 1 {
		t.Fatalf("status %+v after the third pass, want the hold left (step 1)", st)
	}
	w.settle()
	if events := w.takeEvents(); !slices.ContainsFunc(events, func(e string) bool { return strings.Contains(e, grayapi.ReasonGrayGatePassed) }) {
		t.Fatalf("no %s event for the hold left on the gate's third pass: %q", grayapi.ReasonGrayGatePassed, events)
	}
}

// TestGateWithoutDefinitionIsInvalid: a gate defined nowhere, or by a definition that does not
// compile, stops the rollout as Invalid with a message naming the gate and where it looked
// (the Deployment's namespace only, when gray-controller's is unknown: never every namespace's),
// and a fixed definition lets it go on.
func TestGateWithoutDefinitionIsInvalid(t *testing.T) {
	w := startGray(t, testutil.GrayWeb(10, "20,50"))
	w.setAnnotation(grayapi.GatesAnnotation, "pods,error-rate")
	w.setImage("v2")
	w.settle()
	wantPhase(t, w, grayapi.PhaseInvalid)
	if msg := w.status().Message; !strings.Contains(msg, `gate "error-rate" is defined nowhere`) || !strings.Contains(msg, "in namespace default or gray-system has the key") {
		t.Errorf("Invalid message %q does not name the gate and where it looked", msg)
	}
	w.wantSizes(sz("v1", 10))

	cms := w.f.factory.Core().V1().ConfigMaps().Informer().GetIndexer()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "gates", UID: "cm", ResourceVersion: "1",
		Labels: map[string]string{grayapi.GatesLabel: grayapi.GatesLabelValue}},
		Data: map[string]string{"error-rate": "provider: pods\nsuccess: canary.restart == 0\n"}}
	if err := cms.Add(cm); err != nil {
		t.Fatal(err)
	}
	w.settle()
	wantPhase(t, w, grayapi.PhaseInvalid)
	if msg := w.status().Message; !strings.Contains(msg, `gate "error-rate" (ConfigMap default/gates, key "error-rate")`) || !strings.Contains(msg, "restart") {
		t.Errorf("Invalid message %q does not name the gate, its ConfigMap and the bad field", msg)
	}

	fixed := cm.DeepCopy()
	fixed.ResourceVersion = "2"
	fixed.Data["error-rate"] = "provider: pods\nsuccess: canary.restarts == 0\n"
	if err := cms.Update(fixed); err != nil {
		t.Fatal(err)
	}
	w.settle()
	wantPhase(t, w, grayapi.PhaseHeld)
	w.wantSizes(sz("v1", 8, "v2", 2))
	// No pod in the cache: the window opens, nothing is judged yet.
	if msg := w.status().Message; !strings.Contains(msg, "gates to pass: pods 0/3, error-rate 0/3") {
		t.Errorf("Held message %q does not say which gates the hold waits for", msg)
	}
}

// TestGateBookFinds: a gate is defined by the Deployment's namespace first, then by
// gray-controller's (cluster-wide defaults, which may replace the built-in pods gate), then
// built in; two ConfigMaps of one namespace defining it are an error naming both.
func TestGateBookFinds(t *testing.T) {
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	def := func(success string) string { return "provider: pods\nsuccess: " + success + "\n" }
	labelled := map[string]string{grayapi.GatesLabel: grayapi.GatesLabelValue}
	for _, cm := range []*corev1.ConfigMap{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "defaults", UID: "d", Labels: labelled}, Data: map[string]string{
			"errors": def("canary.failedPods == 0"), grayapi.PodsGate: def("canary.restarts == 0")}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "gates", UID: "g", Labels: labelled}, Data: map[string]string{
			grayapi.PodsGate: def("canary.oomKills == 0")}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "more", UID: "m", Labels: labelled}, Data: map[string]string{"latency": def("true")}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "again", UID: "a", Labels: labelled}, Data: map[string]string{"latency": def("true")}},
		// Labelled as providers: never read as gate definitions.
		{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "odd", UID: "o", Labels: map[string]string{grayapi.GatesLabel: grayapi.ProvidersLabelValue}},
			Data: map[string]string{"nope": def("true")}},
	} {
		if err := indexer.Add(cm); err != nil {
			t.Fatal(err)
		}
	}
	b := &gateBook{definitions: everyNamespace(indexer), namespace: "kube-system", parsed: map[types.UID]parsedConfigMap{}}
	for _, tc := range []struct{ namespace, gate, success, err string }{
		{"shop", grayapi.PodsGate, "canary.oomKills == 0", ""},
		{"shop", "errors", "canary.failedPods == 0", ""},
		{"web", grayapi.PodsGate, "canary.restarts == 0", ""},
		{"shop", "latency", "", `gate "latency" is defined twice in namespace shop: by ConfigMaps again and more`},
		{"shop", "nope", "", `gate "nope" is defined nowhere: no ConfigMap labelled kubegray.io/gates=true in namespace shop or kube-system has the key "nope"`},
	} {
		got, err := b.find(tc.namespace, tc.gate)
		switch {
		case tc.err != "" && (err == nil || err.Error() != tc.err):
			t.Errorf("gate %s in %s: error %v, want %q", tc.gate, tc.namespace, err, tc.err)
		case tc.err == "" && (err != nil || got.Success != tc.success):
			t.Errorf("gate %s in %s: %+v, %v; want the definition whose success is %q", tc.gate, tc.namespace, got, err, tc.success)
		}
	}
}

// TestGateBookProviders: a metric gate's provider is the admin's, from a ConfigMap labelled
// kubegray.io/gates=providers in gray-controller's namespace or from a flag; a tenant's
// ConfigMap so labelled is not read, one defined twice is refused, and so is a query selecting
// the provider's namespace label.
func TestGateBookProviders(t *testing.T) {
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	providers := map[string]string{grayapi.GatesLabel: grayapi.ProvidersLabelValue}
	for _, cm := range []*corev1.ConfigMap{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "gray-system", Name: "providers", UID: "p", Labels: providers}, Data: map[string]string{
			"metrics": "type: prometheus\nurl: http://prometheus.monitoring:9090\nnamespaceLabel: kubernetes_namespace\n",
			"twice":   "type: prometheus\nurl: http://other:9090\n",
			"smoke":   "type: webhook\nurl: http://smoke.ci/check\nallowedNamespaces: [shop]\n"}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "bank", Name: "gates", UID: "b", Labels: map[string]string{grayapi.GatesLabel: grayapi.GatesLabelValue}}, Data: map[string]string{
			"hook": "provider: smoke\n"}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "mine", UID: "t", Labels: providers}, Data: map[string]string{
			"evil": "type: prometheus\nurl: http://169.254.169.254\n"}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "gates", UID: "g", Labels: map[string]string{grayapi.GatesLabel: grayapi.GatesLabelValue}}, Data: map[string]string{
			"errors":  "provider: metrics\nquery: sum(errors)\nsuccess: result < 1\n",
			"evil":    "provider: evil\nquery: sum(errors)\nsuccess: result < 1\n",
			"twice":   "provider: twice\nquery: sum(errors)\nsuccess: result < 1\n",
			"peeking": "provider: metrics\nquery: sum(errors{kubernetes_namespace=\"bank\"})\nsuccess: result < 1\n",
			"hook":    "provider: smoke\nsuccess: result.failed == 0\n",
			"queried": "provider: smoke\nquery: sum(errors)\nsuccess: result < 1\n",
			"asked":   "provider: metrics\n",
			"often":   "provider: metrics\nquery: sum(errors)\nsuccess: result < 1\ninterval: 2s\n"}},
	} {
		if err := indexer.Add(cm); err != nil {
			t.Fatal(err)
		}
	}
	flagged, err := gates.PrometheusURLProvider("http://127.0.0.1:9090")
	if err != nil {
		t.Fatal(err)
	}
	flagged.Name = "twice"
	b := &gateBook{definitions: everyNamespace(indexer), providers: corelisters.NewConfigMapLister(indexer).ConfigMaps("gray-system"),
		namespace: "gray-system", flagged: map[string]*gates.Provider{"twice": flagged},
		parsed: map[types.UID]parsedConfigMap{}}
	n, err := b.resolve("shop", grayapi.Policy{Gates: []string{"errors"}})
	if err != nil || n.providers["errors"] == nil || n.providers["errors"].URL.String() != "http://prometheus.monitoring:9090" {
		t.Errorf("gate errors: providers %v, %v; want provider metrics", n.providers, err)
	}
	if n, err := b.resolve("shop", grayapi.Policy{Gates: []string{"hook"}}); err != nil || n.providers["hook"] == nil || n.providers["hook"].Name != "smoke" {
		t.Errorf("gate hook in shop: providers %v, %v; want provider smoke", n.providers, err)
	}
	if _, err := b.resolve("bank", grayapi.Policy{Gates: []string{"hook"}}); err == nil ||
		!strings.HasPrefix(err.Error(), `gate "hook" (ConfigMap bank/gates, key "hook"): provider "smoke" (ConfigMap gray-system/providers, key "smoke") does not serve namespace bank: its allowedNamespaces are shop`) {
		t.Errorf("gate hook in bank: error %v, want the webhook refused for bank", err)
	}
	for gate, want := range map[string]string{
		"queried": `gate "queried" (ConfigMap shop/gates, key "queried"): provider "smoke" is a webhook, and a gate with a query needs a prometheus`,
		"asked":   `gate "asked" (ConfigMap shop/gates, key "asked"): provider "metrics" is a prometheus: the gate needs a query`,
		"often":   `gate "often" (ConfigMap shop/gates, key "often"): interval 2s is shorter than provider "metrics"'s minInterval 10s`,
		"evil":    `gate "evil" (ConfigMap shop/gates, key "evil"): provider "evil" is not one gray-controller has: define it in a ConfigMap labelled kubegray.io/gates=providers in namespace gray-system`,
		"twice":   `gate "twice" (ConfigMap shop/gates, key "twice"): provider "twice" is defined 2 times: --prometheus-url; ConfigMap gray-system/providers, key "twice"`,
		"peeking": `gate "peeking" (ConfigMap shop/gates, key "peeking"): query "sum(errors{kubernetes_namespace=\"bank\"})": selector errors{kubernetes_namespace="bank"} names the label kubernetes_namespace: leave it out`,
	} {
		if _, err := b.resolve("shop", grayapi.Policy{Gates: []string{gate}}); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("gate %s: error %v, want one starting %q", gate, err, want)
		}
	}
}

// TestGateDefinitionChangeQueuesTakenOverDeployments: a changed gate definition queues the gray
// Deployments that name gates, including one alongside mode has taken over (strategy Recreate,
// paused) and one named only as a dry run, and not one without kubegray.io/percent. (A taken-over
// Deployment stopped Invalid by an undefined gate once waited for an unrelated event to see its
// ConfigMap come: TestGates' "gate defined nowhere" scenario, alongside, under CI load.)
func TestGateDefinitionChangeQueuesTakenOverDeployments(t *testing.T) {
	f := newFixture(t)
	rolling := newDeployment("rolling", 10, testutil.WithAnnotation(grayapi.PercentAnnotation, "20"), testutil.WithAnnotation(grayapi.GatesAnnotation, "crashes"))
	takenOver := newDeployment("taken", 10, testutil.WithRecreate(), testutil.WithPaused(), testutil.WithAnnotation(grayapi.PercentAnnotation, "20"),
		testutil.WithAnnotation(grayapi.StrategyAnnotation, "RollingUpdate;maxSurge=25%;maxUnavailable=25%"), testutil.WithAnnotation(grayapi.GatesAnnotation, "crashes"))
	dryRun := newDeployment("dry", 10, testutil.WithAnnotation(grayapi.PercentAnnotation, "20"), testutil.WithAnnotation(grayapi.GatesDryRunAnnotation, "crashes"))
	plain := newDeployment("plain", 10, testutil.WithAnnotation(grayapi.GatesAnnotation, "crashes"))
	ungated := newDeployment("ungated", 10, testutil.WithAnnotation(grayapi.PercentAnnotation, "20"))
	f.cache(rolling, takenOver, dryRun, plain, ungated)
	f.gs.enqueueGated(klog.Background(), metav1.NamespaceDefault)
	got := f.enqueued
	slices.Sort(got)
	if want := []string{"default/dry", "default/rolling", "default/taken"}; !slices.Equal(got, want) {
		t.Errorf("queued %v, want %v", got, want)
	}
}

// everyNamespace is a gate book's lister over one cache of every namespace's ConfigMaps.
func everyNamespace(indexer cache.Indexer) corelisters.ConfigMapLister {
	return corelisters.NewConfigMapLister(indexer)
}
