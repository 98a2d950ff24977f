package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	certutil "k8s.io/client-go/util/cert"

	"github.com/kubegray/kubectl-gray/internal/testutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
	"github.com/kubegray/kubectl-gray/test/cluster"
	"github.com/kubegray/kubectl-gray/test/prom"
)

// TestMetricsInPrometheus scrapes gray-controller with a real Prometheus while a gray rollout
// is held and then completed, and reads the series back with PromQL, as a dashboard or an
// alert would: the exposition parses, the target is up, the phase gauges and the hold
// counter follow the rollout, and the deferral counter is there. Prometheus labels its target as
// the Prometheus Operator does (operatorTarget), and honours the series' labels as the chart's
// ServiceMonitor says: the rollout series keep the rollout's namespace (shop), and so does the
// GrayRolloutFailed alert, which fires through a leader kill and resolves after the rollback
// completes. The scrape is HTTPS with a
// ServiceAccount's token, as the ServiceMonitor's; no token, or one whose user lacks the
// metrics-reader role, is refused.
func TestMetricsInPrometheus(t *testing.T) {
	c := cluster.StartForTest(t, cluster.Options{Controllers: cluster.WithoutDeploymentController})
	ports, err := cluster.FreePorts(2)
	if err != nil {
		t.Fatal(err)
	}
	// The replica that leads first, and the one that takes over when it is killed.
	target, standby := "127.0.0.1:"+strconv.Itoa(ports[0]), "127.0.0.1:"+strconv.Itoa(ports[1])
	certDir, ca := metricsCertificate(t)
	startGrayController(t, c, "--mode=instead", "--metrics-bind-address="+target, "--metrics-cert-dir="+certDir)
	reader, stranger := metricsTokens(t, c)
	for _, tc := range []struct {
		who, token string
		code       int
	}{{"no token", "", http.StatusUnauthorized}, {"a forged token", "forged", http.StatusUnauthorized},
		{"a ServiceAccount without the role", stranger, http.StatusForbidden}, {"the metrics reader", reader, http.StatusOK}} {
		if code := scrape(t, target, tc.token); code != tc.code {
			t.Errorf("GET https://%s/metrics with %s: HTTP %d, want %d", target, tc.who, code, tc.code)
		}
	}
	// Another client-go program scraped by the same Prometheus (decoyExposition), whose
	// certificate is its own for the same name.
	var decoyScrapes atomic.Int32
	decoy := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, decoyExposition(int(decoyScrapes.Add(1))))
	}))
	decoyCert, decoyCA := servingCertificate(t)
	decoy.TLS = &tls.Config{Certificates: []tls.Certificate{decoyCert}, MinVersion: tls.VersionTLS12}
	decoy.StartTLS()
	t.Cleanup(decoy.Close)
	// The shipped alerts, evaluated every second.
	p := prom.StartWith(t, prom.Config{Labelled: []prom.Target{operatorTarget(target, "gray-controller-0"), operatorTarget(standby, "gray-controller-1"), decoyTarget(decoy)},
		HonorLabels: serviceMonitorHonorsLabels(t), Rules: alertRules(t), BearerToken: reader,
		CA: append(ca, decoyCA...), ServerName: metricsServerName})
	// The rollouts' namespace, as the operator names it.
	if err := createNamespace(context.Background(), c.Client, "shop"); err != nil {
		t.Fatal(err)
	}
	e := &grayEnv{t: t, client: c.Client, ns: "shop", rec: startRecorder(t, c.Client, "shop")}

	e.startStable(testutil.GrayDeployment("web", 10, "20"))
	// The pods gate, measured every second, two passes.
	gateDefs := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "gates", Labels: map[string]string{grayapi.GatesLabel: grayapi.GatesLabelValue}},
		Data: map[string]string{grayapi.PodsGate: "provider: pods\nsuccess: canary.restarts == 0\ninterval: 1s\ncount: 2\n"}}
	if _, err := c.Client.CoreV1().ConfigMaps(e.ns).Create(context.Background(), gateDefs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.do(setAnnotation("web", grayapi.GatesAnnotation, grayapi.PodsGate))
	e.do(setImage("web", "nginx:1.26"))
	e.expect("web", grayState{phase: grayapi.PhaseHeld, newSpec: 2, oldTotal: 8, paused: true})
	// Every outcome has its series from the start, dry runs apart; the hold's two passes count.
	wantQuery(t, p, `count(gray_controller_gray_gate_measurements_total)`, 10)
	wantQuery(t, p, `gray_controller_gray_gate_measurements_total{outcome="Pass",dry_run="false"}`, 2)
	wantQuery(t, p, `up{job="gray-controller-metrics",namespace="gray-system",instance="`+target+`"}`, 1)
	wantQuery(t, p, `gray_controller_build_info{mode="instead",namespace="gray-system",pod="gray-controller-0"}`, 1)
	wantQuery(t, p, `gray_controller_gray_deployments{phase="Held"}`, 1)
	wantQuery(t, p, `gray_controller_gray_deployments{phase="Complete"}`, 0)
	wantQuery(t, p, `sum(gray_controller_gray_holds_total)`, 1)
	// Every reason a sync waits for a cache has its series from the start (how many syncs waited
	// depends on the informers' timing, not on the rollout).
	wantQuery(t, p, `count(gray_controller_sync_deferred_total)`, 4)

	// The per-rollout series of the hold, with its gate's passes.
	web := `namespace="` + e.ns + `",deployment="web"`
	wantQuery(t, p, `gray_controller_rollout_info{`+web+`,mode="instead",phase="Held",reason=""}`, 1)
	wantQuery(t, p, `gray_controller_rollout_percent{`+web+`}`, 20)
	wantQuery(t, p, `gray_controller_rollout_target_replicas{`+web+`}`, 2)
	wantQuery(t, p, `gray_controller_rollout_canary_available_replicas{`+web+`}`, 2)
	wantQuery(t, p, `gray_controller_rollout_gate_outcomes{`+web+`,gate="pods",kind="pass"}`, 2)
	wantQuery(t, p, `gray_controller_rollout_held_since_seconds{`+web+`}`, float64(heldSince(t, c, e.ns, "web").Unix()))

	e.finish("web", 10)
	wantQuery(t, p, `gray_controller_gray_deployments{phase="Held"}`, 0)
	wantQuery(t, p, `gray_controller_gray_deployments{phase="Complete"}`, 1)
	wantQuery(t, p, `gray_controller_rollout_info{`+web+`,phase="Complete"}`, 1)
	wantQuery(t, p, `absent(gray_controller_rollout_held_since_seconds{`+web+`})`, 1)

	// A canary that never becomes ready misses its deadline: the GrayRolloutFailed alert goes
	// pending at once and fires a minute later (its for), labelled with the rollout and its
	// namespace, not gray-controller's.
	e.startStable(testutil.GrayDeployment("bad", 4, "50", testutil.WithProgressDeadline(5), testutil.WithTemplateAnnotation(cluster.CrashLoopAnnotation, crashImage)))
	e.do(setImage("bad", crashImage))
	want := map[string]string{"alertname": "GrayRolloutFailed", "severity": "warning", "namespace": e.ns, "deployment": "bad",
		"reason": grayapi.ReasonProgressDeadlineExceeded}
	eventually(t, 2*time.Minute, "GrayRolloutFailed firing for bad, and no other alert", func() (bool, string) {
		alerts, err := p.Alerts(context.Background())
		if err != nil {
			return false, err.Error()
		}
		return len(alerts) == 1 && alerts[0].State == "firing" && maps.Equal(alerts[0].Labels, want), fmt.Sprintf("%+v", alerts)
	})
	alertsSurviveLeaderKill(t, c, p, standby, certDir)

	// Rolled back by kubectl gray undo: once Complete, the alert resolves.
	newPluginUser(t, c, e.ns).must("gray", "undo", "bad")
	e.expect("bad", grayState{phase: grayapi.PhaseComplete, newSpec: 4})
	eventually(t, 30*time.Second, "no alert once bad is rolled back", func() (bool, string) {
		alerts, err := p.Alerts(context.Background())
		return err == nil && len(alerts) == 0, fmt.Sprintf("%+v %v", alerts, err)
	})

	// Every panel of the shipped dashboard draws something of this run (but the gate providers',
	// none measured here), and nothing of the decoy.
	wantDashboardData(t, p, false)
	wantDashboardOwnSeries(t, p)

	// A deleted Deployment's series go with it.
	if err := c.Client.AppsV1().Deployments(e.ns).Delete(context.Background(), "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	wantQuery(t, p, `absent(gray_controller_rollout_info{`+web+`})`, 1)
	wantQuery(t, p, `count(gray_controller_rollout_info{namespace="`+e.ns+`"})`, 1)
}

// alertsSurviveLeaderKill starts a second gray-controller serving metrics on standby (with the
// certificate of certDir), SIGKILLs
// the first (the leader) and wants the one alert firing to stay firing, from the same moment, at
// every look until the new leader has served the rollout series for 10 seconds: the gap between
// the leaders neither resolves it nor restarts its for. (GrayControllerNoLeader goes pending in
// the gap and is not looked at.)
func alertsSurviveLeaderKill(t *testing.T, c *cluster.Cluster, p *prom.Server, standby, certDir string) {
	t.Helper()
	alerts, err := p.Alerts(context.Background())
	if err != nil || len(alerts) != 1 || alerts[0].State != "firing" {
		t.Fatalf("before the leader kill: alerts %+v (%v), want one firing", alerts, err)
	}
	firing := alerts[0]
	if err := runGrayController(c, grayControllerName+"-1", ourBinary(t, "gray-controller"), serviceAccountKubeconfig(t, c),
		"--mode=instead", "--metrics-bind-address="+standby, "--metrics-cert-dir="+certDir); err != nil {
		t.Fatal(err)
	}
	wantQuery(t, p, `up{instance="`+standby+`"}`, 1)
	if err := c.KillComponent(grayControllerName); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	var servedSince time.Time
	for time.Since(killed) < 2*time.Minute {
		alerts, err := p.Alerts(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		// GrayControllerNoLeader is pending while no replica leads.
		alerts = slices.DeleteFunc(alerts, func(a prom.Alert) bool { return a.Labels["alertname"] == "GrayControllerNoLeader" })
		if len(alerts) != 1 || alerts[0].State != "firing" || alerts[0].ActiveAt != firing.ActiveAt || !maps.Equal(alerts[0].Labels, firing.Labels) {
			t.Fatalf("%s after the leader was killed: alerts %+v, want %+v still firing", time.Since(killed).Round(time.Millisecond), alerts, firing)
		}
		served, err := p.Query(context.Background(), `gray_controller_rollout_info{namespace="shop",pod="gray-controller-1"}`)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case len(served) == 0:
			servedSince = time.Time{}
		case servedSince.IsZero():
			servedSince = time.Now()
			t.Logf("the new leader serves the rollout series %s after the kill", time.Since(killed).Round(time.Second))
		case time.Since(servedSince) > 10*time.Second:
			return
		}
		time.Sleep(prom.ScrapeInterval / 4)
	}
	t.Fatal("the new leader did not serve the rollout series within 2 minutes of the kill")
}

// metricsServerName is the name the chart's ServiceMonitor verifies gray-controller's certificate
// for (metrics.certSecret): its metrics Service's.
const metricsServerName = "gray-controller-metrics.gray-system.svc"

// newCertificate is a serving certificate and key for metricsServerName, and the PEM of the CA
// that signed it.
func newCertificate(t *testing.T) (certPEM, keyPEM, ca []byte) {
	t.Helper()
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey(metricsServerName, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	// certPEM is the serving certificate, then its CA's.
	_, ca, _ = bytes.Cut(certPEM, []byte("-----END CERTIFICATE-----\n"))
	if len(ca) == 0 {
		t.Fatal("the generated certificate carries no CA")
	}
	return certPEM, keyPEM, ca
}

// servingCertificate is newCertificate's, for a TLS server.
func servingCertificate(t *testing.T) (tls.Certificate, []byte) {
	t.Helper()
	certPEM, keyPEM, ca := newCertificate(t)
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return pair, ca
}

// metricsCertificate is a folder for --metrics-cert-dir with newCertificate's tls.crt and
// tls.key, as the chart mounts metrics.certSecret, and the PEM of their CA (the Secret's ca.crt).
func metricsCertificate(t *testing.T) (dir string, ca []byte) {
	t.Helper()
	certPEM, keyPEM, ca := newCertificate(t)
	dir = t.TempDir()
	for name, data := range map[string][]byte{"tls.crt": certPEM, "tls.key": keyPEM} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir, ca
}

// heldSince is when the status of Deployment namespace/name says its hold was reached.
func heldSince(t *testing.T, c *cluster.Cluster, namespace, name string) time.Time {
	t.Helper()
	d, err := c.Client.AppsV1().Deployments(namespace).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	st, err := grayapi.ParseStatus(d.Annotations[grayapi.StatusAnnotation])
	if err != nil || st.HeldAt == nil {
		t.Fatalf("deployment %s/%s: no hold in its status (%v)", namespace, name, err)
	}
	return st.HeldAt.Time
}

// wantQuery waits until expr's result is one series of value want, which Prometheus has
// scraped from gray-controller.
func wantQuery(t *testing.T, p *prom.Server, expr string, want float64) {
	t.Helper()
	eventually(t, 30*time.Second+10*prom.ScrapeInterval, fmt.Sprintf("%s = %v in Prometheus", expr, want), func() (bool, string) {
		got, err := p.Query(context.Background(), expr)
		if err != nil {
			return false, err.Error()
		}
		return len(got) == 1 && got[0].Value == want, fmt.Sprintf("%+v", got)
	})
}

// metricsTokens are the tokens of two ServiceAccounts of namespace monitoring: prometheus, bound
// to ClusterRole gray-controller-metrics-reader as docs/operations.md says, and stranger, not.
func metricsTokens(t *testing.T, c *cluster.Cluster) (reader, stranger string) {
	t.Helper()
	ctx := context.Background()
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "monitoring"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "prometheus-reads-gray-controller"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "gray-controller-metrics-reader"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "prometheus", Namespace: "monitoring"}}}
	if _, err := c.Client.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var tokens []string
	for _, name := range []string{"prometheus", "stranger"} {
		if _, err := c.Client.CoreV1().ServiceAccounts("monitoring").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		tok, err := c.Client.CoreV1().ServiceAccounts("monitoring").CreateToken(ctx, name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("token of serviceaccount monitoring/%s: %v", name, err)
		}
		tokens = append(tokens, tok.Status.Token)
	}
	return tokens[0], tokens[1]
}

// scrape GETs https://target/metrics with token (none when empty), the certificate unchecked (it
// is self-signed), and returns the status code.
func scrape(t *testing.T, target, token string) int {
	t.Helper()
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // self-signed
	req, err := http.NewRequest(http.MethodGet, "https://"+target+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("GET https://%s/metrics: %v", target, err)
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}

// TestMetricsServedOnlyAtItsPath pins that the metrics port serves /metrics and nothing else, to
// the metrics reader only, with the RBAC gray-controller installs (manifests/base, the chart's)
// and Kubernetes' default roles. A namespace owner's ServiceAccount is an ordinary signed-in
// user: system:discovery and system:public-info-viewer let it get /version, /healthz, /api and
// the like, so a guard that reviewed whatever path was asked, in front of a handler answering
// every path, would give it every namespace's series. Every path those roles allow, and the
// spellings of /metrics a router might clean, must answer 404 before any review; /metrics
// itself 403 to the tenant and the series to the reader.
func TestMetricsServedOnlyAtItsPath(t *testing.T) {
	c := cluster.StartForTest(t, cluster.Options{Controllers: cluster.WithoutDeploymentController})
	port, err := cluster.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	target := "127.0.0.1:" + strconv.Itoa(port)
	startGrayController(t, c, "--mode=instead", "--metrics-bind-address="+target)
	reader, _ := metricsTokens(t, c)
	tenant := namespaceOwnerToken(t, c, "shop")
	for _, path := range []string{"/version", "/version/", "/healthz", "/healthz/ping", "/livez", "/readyz", "/api", "/api/v1", "/apis",
		"/apis/apps/v1", "/openapi/v2", "/openapi/v3", "/", "/metrics/", "/metrics/x", "//metrics", "/Metrics", "/metrics/..", "/./metrics",
		"/metrics%2F", "/debug/pprof/"} {
		for who, token := range map[string]string{"the tenant": tenant, "the metrics reader": reader} {
			if code, body := getRaw(t, target, path, token); code != http.StatusNotFound {
				t.Errorf("GET https://%s%s with %s's token: HTTP %d %.80q, want 404", target, path, who, code, body)
			}
		}
	}
	for _, path := range []string{"/metrics", "/metrics?x=1"} {
		if code, body := getRaw(t, target, path, tenant); code != http.StatusForbidden || strings.Contains(body, "gray_controller_") {
			t.Errorf("GET https://%s%s with the tenant's token: HTTP %d %.80q, want 403 without series", target, path, code, body)
		}
		if code, body := getRaw(t, target, path, reader); code != http.StatusOK || !strings.Contains(body, "gray_controller_sync_total") {
			t.Errorf("GET https://%s%s with the metrics reader's token: HTTP %d %.80q, want 200 with the series", target, path, code, body)
		}
	}
}

// namespaceOwnerToken is the token of ServiceAccount owner of namespace ns (made now), which
// holds ClusterRole admin there: what an app team has.
func namespaceOwnerToken(t *testing.T, c *cluster.Cluster, ns string) string {
	t.Helper()
	ctx := context.Background()
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "owner"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "owner-is-admin"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "admin"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "owner", Namespace: ns}}}
	if _, err := c.Client.RbacV1().RoleBindings(ns).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tok, err := c.Client.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "owner", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token of serviceaccount %s/owner: %v", ns, err)
	}
	return tok.Status.Token
}

// getRaw GETs https://target with path written as it is (no cleaning) and token, the certificate
// unchecked (it is self-signed), and returns the status code and the body.
func getRaw(t *testing.T, target, path, token string) (int, string) {
	t.Helper()
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // self-signed
	req, err := http.NewRequest(http.MethodGet, "https://"+target, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.URL.Opaque = "//" + target + path
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("GET https://%s%s: %v", target, path, err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET https://%s%s: reading the body: %v", target, path, err)
	}
	return resp.StatusCode, string(body)
}
