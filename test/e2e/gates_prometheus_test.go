package e2e

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegray/kubectl-gray/pkg/grayapi"
	"github.com/kubegray/kubectl-gray/test/cluster"
	"github.com/kubegray/kubectl-gray/test/prom"
)

// Metric gates against a real Prometheus, in both modes (docs/gates.md): Prometheus scrapes the
// traffic exporter (traffic_test.go) every second and gray-controller is given it by
// --prometheus-url; a second provider, defined in gray-controller's namespace, points at a port
// nothing listens on. The exporter's decoy namespace fails every request of every pod, so a
// query that were not scoped to the Deployment's namespace would fail every canary.

// errorRateGate is the share of the canary's requests that failed since the hold settled.
const errorRateGate = `provider: prometheus
query: sum(rate(http_requests_total{pod=~"$canary_pods",code=~"5.."}[$window])) / sum(rate(http_requests_total{pod=~"$canary_pods"}[$window]))
success: result < 0.05
interval: 3s
count: 2
`

// versusStableGate compares the same error rate of the canary and of the stable revision.
const versusStableGate = `provider: prometheus
compare: true
query: sum(rate(http_requests_total{pod=~"$pods",code=~"5.."}[$window])) / sum(rate(http_requests_total{pod=~"$pods"}[$window]))
success: canary <= stable * 2.0 + 0.01
interval: 3s
count: 2
`

func TestPrometheusGates(t *testing.T) {
	for _, m := range canaryModes {
		t.Run(m.name, func(t *testing.T) {
			traffic := startTrafficExporter(t)
			p := prom.Start(t, traffic.addr)
			// The gates measure every 2 or 3 s, under the default floor of 10 s.
			c := m.start(t, "--prometheus-url="+p.URL, "--prometheus-min-interval=1s")
			client := c.Client
			traffic.client.Store(&client)
			dead, err := cluster.FreePort()
			if err != nil {
				t.Fatal(err)
			}
			providers := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "providers", Labels: map[string]string{grayapi.GatesLabel: grayapi.ProvidersLabelValue}},
				Data: map[string]string{"down": "type: prometheus\nurl: http://127.0.0.1:" + strconv.Itoa(dead) + "\ntimeout: 1s\nminInterval: 1s\n"}}
			if _, err := c.Client.CoreV1().ConfigMaps("gray-system").Create(context.Background(), providers, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			t.Run("scenarios", func(t *testing.T) { runPrometheusGates(t, c, m, p) })
		})
	}
}

func runPrometheusGates(t *testing.T, c *cluster.Cluster, m canaryMode, p *prom.Server) {
	t.Run("a good canary passes its error rate and its comparison with stable, then hold-for resumes it", func(t *testing.T) {
		t.Parallel()
		k := newCanary(t, c, m, "prom-pass")
		k.startGated(map[string]string{"error-rate": errorRateGate, "vs-stable": versusStableGate}, "error-rate,vs-stable")
		// The decoy series of this namespace's pods are there, to be read by a query not scoped.
		wantQuery(t, p, `count(http_requests_total{namespace="`+decoyNamespace+`",pod=~"web-.*"}) > bool 0`, 1)
		k.u.must("gray", "set", "web", "20", "--hold-for", "5s", "--image", "app="+goodImage)
		k.u.must("gray", "status", "web", "--until", "complete", "--timeout", "120s")
		// The sync that records a gate's last pass may leave the hold in the same write (which
		// clears the records): the statuses show each gate's first pass with the query's value,
		// and the events its count reached.
		h := k.history("web")
		left := first(h, 0, func(s seenStatus) bool { return s.ok && s.st.Revision == 2 && s.st.Step > 0 })
		for _, gate := range []struct{ name, value string }{{"error-rate", "result "}, {"vs-stable", "canary "}} {
			once := first(h, 0, func(s seenStatus) bool {
				return s.ok && s.st.Revision == 2 && s.st.Step == 0 && slices.ContainsFunc(s.st.Gates, func(g grayapi.GateStatus) bool {
					return g.Name == gate.name && g.Passes == 1 && g.Fails == 0 && strings.HasPrefix(g.Value, gate.value)
				})
			})
			if once < 0 || left < 0 || once > left {
				t.Errorf("gate %s was not seen passing once (value %s...) before the hold was left:\n%s", gate.name, gate.value, statusLines(h))
			}
		}
		passedEvents := map[string]bool{}
		for _, ev := range k.events("web", grayapi.ReasonGrayGatePassed) {
			passedEvents[strings.Fields(ev.Message)[1]] = true
		}
		if !passedEvents["error-rate"] || !passedEvents["vs-stable"] {
			t.Errorf("%s events for gates %v, want error-rate and vs-stable", grayapi.ReasonGrayGatePassed, passedEvents)
		}
		// Settled, then two passes 3s apart: the 5s hold-for ends no sooner than 6s after.
		if left >= 0 {
			held := first(h, 0, func(s seenStatus) bool { return s.ok && s.st.Revision == 2 && s.st.Phase == grayapi.PhaseHeld })
			if waited := h[left].at.Sub(h[held].st.SettledAt.Time); waited < 6*time.Second {
				t.Errorf("the hold was left %v after it settled, before the gates' second passes (6s)", waited)
			}
		}
		k.released()
	})

	t.Run("kubectl gray gate test measures a held canary's gates now, directly and through the API server's service proxy", func(t *testing.T) {
		t.Parallel()
		k := newCanary(t, c, m, "prom-try")
		// in-cluster's provider is a Service with no endpoints: an Endpoints object may not point
		// at loopback, where every test server listens, so the service proxy's own answer proves
		// the query reached it for that Service.
		k.startGated(map[string]string{"error-rate": errorRateGate, "vs-stable": versusStableGate,
			"in-cluster": "provider: in-cluster\nquery: sum(up)\nsuccess: result > 0.0\n"}, "error-rate,vs-stable")
		ctx := context.Background()
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "prometheus"}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 9090}}}}
		if _, err := c.Client.CoreV1().Services(k.ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		proxied := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "providers-" + k.ns, Labels: map[string]string{grayapi.GatesLabel: grayapi.ProvidersLabelValue}},
			Data: map[string]string{"in-cluster": "type: prometheus\nurl: http://prometheus." + k.ns + ".svc:9090\n"}}
		if _, err := c.Client.CoreV1().ConfigMaps("gray-system").Create(ctx, proxied, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		k.u.must("gray", "set", "web", "20", "--image", "app="+goodImage)
		k.u.must("gray", "status", "web", "--until", "held", "--timeout", "120s")
		canaryHash := k.replicaSetOf("web", 2).Labels["pod-template-hash"]
		stableHash := k.replicaSetOf("web", 1).Labels["pod-template-hash"]

		// The gray-controller's provider came by --prometheus-url, which no ConfigMap shows.
		out := k.u.must("gray", "gate", "test", "web", "--dry-run", "--window", "2m", "--provider-url", p.URL)
		for _, want := range []string{
			`  query (result): sum(rate(http_requests_total{code=~"5..",namespace="` + k.ns + `",pod=~"web-` + canaryHash + `-[a-z0-9]{5}"}[2m])) / sum(rate(http_requests_total{namespace="` + k.ns + `",pod=~"web-` + canaryHash + `-[a-z0-9]{5}"}[2m]))` + "\n",
			`  query (stable): sum(rate(http_requests_total{code=~"5..",namespace="` + k.ns + `",pod=~"web-` + stableHash + `-[a-z0-9]{5}"}[2m])) / sum(rate(http_requests_total{namespace="` + k.ns + `",pod=~"web-` + stableHash + `-[a-z0-9]{5}"}[2m]))` + "\n",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("kubectl gray gate test --dry-run lacks %q:\n%s", want, out)
			}
		}
		// Measured now against the real Prometheus: the good canary passes both, once the window
		// since the hold settled holds a few scrapes.
		eventually(t, 30*time.Second, "both gates passing when measured now", func() (bool, string) {
			out := k.u.must("gray", "gate", "test", "web", "--provider-url", p.URL)
			return strings.Count(out, "  outcome: Pass: ") == 2 && strings.Contains(out, "  value:   result ") && strings.Contains(out, "  value:   canary "), out
		})
		out = k.u.must("gray", "gate", "test", "web", "--gate", "in-cluster")
		for _, want := range []string{"  to:      " + c.Config.Host + "/api/v1/namespaces/" + k.ns + "/services/prometheus:9090/proxy (window ",
			"  outcome: Error: query (result): provider in-cluster: HTTP 503", "no endpoints available for service"} {
			if !strings.Contains(out, want) {
				t.Errorf("kubectl gray gate test --gate in-cluster lacks %q:\n%s", want, out)
			}
		}
		k.u.must("gray", "resume", "web", "--full")
		k.expect("web", completeAt10)
		k.released()
	})

	t.Run("a canary failing a fifth of its requests fails its gate and is aborted", func(t *testing.T) {
		t.Parallel()
		k := newCanary(t, c, m, "prom-fail")
		k.startGated(map[string]string{"error-rate": errorRateGate}, "error-rate")
		k.u.must("gray", "set", "web", "20", "--on-failure", "abort", "--image", "app="+errorImage)
		st := k.abortedToStable("web", 10, errorImage, stableImage, grayapi.ReasonGateFailed, m.alongside)
		if msg := st.Failure.Message; !strings.Contains(msg, "gate error-rate failed") || !strings.Contains(msg, "not result < 0.05; measured result 0.") {
			t.Errorf("failure message %q does not name the gate, its condition and the error rate measured", msg)
		}
		k.u.must("gray", "undo", "web")
		k.expect("web", completeAt10)
		k.released()
	})

	t.Run("a query that finds nothing and a provider that is down keep the hold for a person", func(t *testing.T) {
		t.Parallel()
		k := newCanary(t, c, m, "prom-unsure")
		k.startGated(map[string]string{
			"latency": "provider: prometheus\nquery: histogram_quantile(0.99, sum by (le) (rate(http_request_duration_seconds_bucket{pod=~\"$canary_pods\"}[$window])))\n" +
				"success: result < 0.5\ninterval: 2s\ninconclusiveLimit: 1\n",
			"down-gate": "provider: down\nquery: sum(up)\nsuccess: result > 0\ninterval: 2s\ninconclusiveLimit: 1\n",
		}, "latency,down-gate", grayapi.HoldForAnnotation+"=2s")
		k.u.must("gray", "set", "web", "20", "--on-failure", "abort", "--image", "app="+goodImage)
		eventually(t, 60*time.Second, "both gates unable to tell", func() (bool, string) {
			msg := k.grayStatus(k.get("web")).Message
			return strings.Contains(msg, "gate latency could not tell 2 times (NoData: the query (result) returned no series)") &&
				strings.Contains(msg, "gate down-gate could not tell 2 times (Error: query (result): provider down: "), msg
		})
		k.wantHeldCondition("web", corev1.ConditionTrue, grayapi.ReasonGateInconclusive)
		k.stays("web", heldAt20, 3*time.Second)
		k.u.must("gray", "resume", "web", "--full")
		k.expect("web", completeAt10)
		if i := first(k.history("web"), 0, inPhase(grayapi.PhaseDegraded)); i >= 0 {
			t.Errorf("gates that could not tell failed the rollout: phases %v", phases(k.history("web"), 0))
		}
		k.released()
	})
}
