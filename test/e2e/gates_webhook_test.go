package e2e

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegray/kubectl-gray/pkg/grayapi"
	"github.com/kubegray/kubectl-gray/test/cluster"
)

// Webhook gates in both modes (docs/gates.md): gray-controller calls a receiver this test runs
// on loopback over TLS, a provider of the admin's that names the namespaces it serves and the
// Secrets of its CA, its bearer token and the key that signs the calls. The receiver checks every
// call's token and signature itself (HMAC-SHA256 of the body under the key it was given, not
// through the controller's code) and answers what a scenario set.

// webhookKey signs the calls, webhookToken authorizes them: the data of Secrets webhook-key and
// webhook-token in gray-system.
const (
	webhookKey   = "an admin's signing key"
	webhookToken = "an admin's bearer token"
)

// receiver is the webhook gates' other end: it answers each Deployment's calls with the status
// and body set for its namespace, and keeps the calls it was sent.
type receiver struct {
	t    *testing.T
	addr string
	// ca is the PEM of the certificate it serves.
	ca []byte

	mu      sync.Mutex
	answers map[string]webhookAnswer
	calls   map[string][]webhookCall
	// delay holds every answer that long; answering, when set, hears of each call as it
	// arrives (dropped when nobody listens).
	delay     time.Duration
	answering chan struct{}

	// redirector answers every request with a 307 to elsewhere, a second server that counts the
	// requests it gets (none is right: a redirect is never followed).
	redirector string
	elsewhere  atomic.Int32
}

type webhookAnswer struct {
	status int
	body   string
}

// webhookCall is a call as the receiver read it: the body's fields and whether its signature was
// right.
type webhookCall struct {
	Gate, Namespace, Name, CanaryHash, StableHash string
	Revision, StableRevision                      int64
	Step, Percent                                 int32
	SettledAt, SentAt                             time.Time
	signed, authorized                            bool
}

// startReceiver serves on loopback over TLS (httptest's certificate for 127.0.0.1) until the
// test ends.
func startReceiver(t *testing.T) *receiver {
	t.Helper()
	r := &receiver{t: t, answers: map[string]webhookAnswer{}, calls: map[string][]webhookCall{}}
	srv := httptest.NewTLSServer(http.HandlerFunc(r.serve))
	t.Cleanup(srv.Close)
	r.addr = srv.Listener.Addr().String()
	r.ca = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		r.elsewhere.Add(1)
		_, _ = w.Write([]byte(`{"failed": 0}`))
	}))
	t.Cleanup(elsewhere.Close)
	redirector := httptest.NewServer(http.RedirectHandler(elsewhere.URL+"/check", http.StatusTemporaryRedirect))
	t.Cleanup(redirector.Close)
	r.redirector = redirector.Listener.Addr().String()
	return r
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	if err != nil || req.Method != http.MethodPost {
		http.Error(w, "want a POST with a body", http.StatusBadRequest)
		return
	}
	mac := hmac.New(sha256.New, []byte(webhookKey))
	mac.Write(body)
	var call webhookCall
	if err := json.Unmarshal(body, &call); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	call.signed = hmac.Equal([]byte(req.Header.Get("X-Kubegray-Signature")), []byte("sha256="+hex.EncodeToString(mac.Sum(nil))))
	call.authorized = req.Header.Get("Authorization") == "Bearer "+webhookToken
	r.mu.Lock()
	r.calls[call.Namespace] = append(r.calls[call.Namespace], call)
	answer, ok := r.answers[call.Namespace]
	delay, answering := r.delay, r.answering
	r.mu.Unlock()
	select {
	case answering <- struct{}{}:
	default:
	}
	time.Sleep(delay)
	if !ok {
		answer = webhookAnswer{status: http.StatusInternalServerError, body: "no answer set"}
	}
	w.WriteHeader(answer.status)
	_, _ = w.Write([]byte(answer.body))
}

func (r *receiver) answer(namespace string, status int, body string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.answers[namespace] = webhookAnswer{status, body}
}

func (r *receiver) callsFrom(namespace string) []webhookCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]webhookCall(nil), r.calls[namespace]...)
}

func TestWebhookGates(t *testing.T) {
	for _, m := range canaryModes {
		t.Run(m.name, func(t *testing.T) {
			c := m.start(t)
			r := startReceiver(t)
			// Served to the namespaces of the first two scenarios only.
			prefix := "gray-"
			if m.alongside {
				prefix = "gray-al-"
			}
			r.install(t, c, prefix+"hook-pass", prefix+"hook-fail", prefix+"hook-ungranted")
			t.Run("scenarios", func(t *testing.T) { runWebhookGates(t, c, m, r) })
		})
	}
}

// install gives gray-controller's namespace the receiver's Secrets (its CA, the bearer token,
// the signing key) and provider smoke, which serves namespaces; and provider smoke-redirect, at
// the redirector, with the same token and key, which serves every namespace.
func (r *receiver) install(t *testing.T, c *cluster.Cluster, namespaces ...string) {
	t.Helper()
	for name, data := range map[string]map[string][]byte{
		"webhook-key": {"key": []byte(webhookKey)}, "webhook-token": {"token": []byte(webhookToken)}, "webhook-ca": {"ca.crt": r.ca},
		"webhook-key-ungranted": {"key": []byte(webhookKey)},
	} {
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: data}
		if _, err := c.Client.CoreV1().Secrets("gray-system").Create(context.Background(), secret, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// The gates ask every 2 s, under the default floor of 10 s: the admin's minInterval lets them.
	// manifests/base grants no Secret: the admin grants these three by name (docs/gates.md), and
	// not webhook-key-ungranted, which provider smoke-ungranted names.
	grantSecrets(t, c, "webhook-ca", "webhook-key", "webhook-token")
	providers := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "webhooks", Labels: map[string]string{grayapi.GatesLabel: grayapi.ProvidersLabelValue}},
		Data: map[string]string{"smoke": "type: webhook\nurl: https://" + r.addr + "/check\ntimeout: 5s\nminInterval: 1s\nsigningSecret: webhook-key\n" +
			"bearerTokenSecret: webhook-token\ntls:\n  caSecret: webhook-ca\n" +
			"allowedNamespaces: [" + strings.Join(namespaces, ", ") + "]\n",
			"smoke-ungranted": "type: webhook\nurl: https://" + r.addr + "/check\ntimeout: 5s\nminInterval: 1s\nsigningSecret: webhook-key-ungranted\n" +
				"allowedNamespaces: [" + strings.Join(namespaces, ", ") + "]\n",
			"smoke-redirect": "type: webhook\nurl: http://" + r.redirector + "/check\ntimeout: 5s\nminInterval: 1s\nsigningSecret: webhook-key\n" +
				"bearerTokenSecret: webhook-token\nallowedNamespaces: [\"*\"]\n"}}
	if _, err := c.Client.CoreV1().ConfigMaps("gray-system").Create(context.Background(), providers, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// smokeGate asks provider smoke every 2s and judges its JSON answer.
const smokeGate = "provider: smoke\nsuccess: result.failed == 0\nfailure: result.failed > 2\ninterval: 2s\ncount: 2\n"

func runWebhookGates(t *testing.T, c *cluster.Cluster, m canaryMode, r *receiver) {
	t.Run("a webhook that says yes lets hold-for resume, every call signed and describing the hold", func(t *testing.T) {
		t.Parallel()
		k := newCanary(t, c, m, "hook-pass")
		r.answer(k.ns, http.StatusOK, `{"failed": 0}`)
		k.startGated(map[string]string{"smoke": smokeGate}, "smoke")
		k.u.must("gray", "set", "web", "20", "--hold-for", "3s", "--image", "app="+goodImage)
		k.u.must("gray", "status", "web", "--until", "complete", "--timeout", "90s")
		calls := r.callsFrom(k.ns)
		canary, stable := k.replicaSetOf("web", 2), k.replicaSetOf("web", 1)
		if len(calls) < 2 {
			t.Fatalf("the receiver got %d calls, want at least 2 (count 2)", len(calls))
		}
		for _, call := range calls {
			if !call.signed || !call.authorized || call.Gate != "smoke" || call.Name != "web" || call.Revision != 2 || call.StableRevision != 1 || call.Step != 0 || call.Percent != 20 ||
				call.CanaryHash != canary.Labels[appsv1.DefaultDeploymentUniqueLabelKey] || call.StableHash != stable.Labels[appsv1.DefaultDeploymentUniqueLabelKey] ||
				call.SettledAt.IsZero() || call.SentAt.Sub(call.SettledAt) < 2*time.Second {
				t.Errorf("call %+v: want it signed and authorized, for gate smoke of web, revision 2 (stable 1) at step 0 (20%%), with the revisions' hashes, sent an interval or more after the hold settled", call)
			}
		}
		k.released()
	})

	t.Run("a webhook that reports failures fails the gate and on-failure aborts", func(t *testing.T) {
		t.Parallel()
		k := newCanary(t, c, m, "hook-fail")
		r.answer(k.ns, http.StatusOK, `{"failed": 7}`)
		k.startGated(map[string]string{"smoke": smokeGate}, "smoke")
		k.u.must("gray", "set", "web", "20", "--on-failure", "abort", "--image", "app="+goodImage)
		st := k.abortedToStable("web", 10, goodImage, stableImage, grayapi.ReasonGateFailed, m.alongside)
		if msg := st.Failure.Message; !strings.Contains(msg, "gate smoke failed") || !strings.Contains(msg, `measured HTTP 200: {"failed": 7}`) {
			t.Errorf("failure message %q does not name the gate and show the webhook's answer", msg)
		}
		k.u.must("gray", "undo", "web")
		k.expect("web", completeAt10)
		k.released()
	})

	t.Run("a Secret the admin did not grant keeps the hold unsure, without a call and without a rollback", func(t *testing.T) {
		t.Parallel()
		k := newCanary(t, c, m, "hook-ungranted")
		r.answer(k.ns, http.StatusOK, `{"failed": 0}`)
		k.startGated(map[string]string{"smoke": "provider: smoke-ungranted\ninterval: 2s\ninconclusiveLimit: 1\n"}, "smoke")
		k.u.must("gray", "set", "web", "20", "--on-failure", "abort", "--image", "app="+goodImage)
		eventually(t, 60*time.Second, "the gate unable to tell, for the Secret it may not read", func() (bool, string) {
			msg := k.grayStatus(k.get("web")).Message
			return strings.Contains(msg, "gate smoke could not tell 2 times (Error: ") &&
				strings.Contains(msg, `secrets "webhook-key-ungranted" is forbidden`), msg
		})
		k.wantHeldCondition("web", corev1.ConditionTrue, grayapi.ReasonGateInconclusive)
		if calls := r.callsFrom(k.ns); len(calls) != 0 {
			t.Errorf("the webhook was called %d times without its signing key", len(calls))
		}
		k.u.must("gray", "undo", "web")
		k.expect("web", completeAt10)
		k.released()
	})

	t.Run("a webhook that redirects is an Error naming where to, and the redirect's target gets nothing", func(t *testing.T) {
		t.Parallel()
		k := newCanary(t, c, m, "hook-redirect")
		k.startGated(map[string]string{"smoke": "provider: smoke-redirect\ninterval: 2s\ninconclusiveLimit: 1\n"}, "smoke")
		k.u.must("gray", "set", "web", "20", "--on-failure", "abort", "--image", "app="+goodImage)
		want := "HTTP 307 from " + r.redirector + " redirects to 127.0.0.1:"
		eventually(t, 60*time.Second, "the gate unable to tell, for the redirect", func() (bool, string) {
			msg := k.grayStatus(k.get("web")).Message
			return strings.Contains(msg, "gate smoke could not tell 2 times (Error: ") && strings.Contains(msg, want), msg
		})
		k.wantHeldCondition("web", corev1.ConditionTrue, grayapi.ReasonGateInconclusive)
		if n := r.elsewhere.Load(); n != 0 {
			t.Errorf("the redirect's target got %d requests (with the bearer token and the signed call), want none", n)
		}
		k.u.must("gray", "undo", "web")
		k.expect("web", completeAt10)
		k.released()
	})

	t.Run("a namespace the webhook does not serve is refused without a call", func(t *testing.T) {
		t.Parallel()
		k := newCanary(t, c, m, "hook-denied")
		r.answer(k.ns, http.StatusOK, `{"failed": 0}`)
		k.startGated(map[string]string{"smoke": smokeGate}, "smoke")
		k.u.must("gray", "set", "web", "20", "--image", "app="+goodImage)
		d := k.expect("web", grayState{phase: grayapi.PhaseInvalid, newSpec: 0, oldTotal: 10, paused: m.alongside})
		if msg := k.grayStatus(d).Message; !strings.Contains(msg, `provider "smoke"`) || !strings.Contains(msg, "does not serve namespace "+k.ns) {
			t.Errorf("Invalid message %q does not say that provider smoke does not serve %s", msg, k.ns)
		}
		if calls := r.callsFrom(k.ns); len(calls) != 0 {
			t.Errorf("the webhook was called %d times for a namespace it does not serve", len(calls))
		}
		if m.alongside {
			// The guard policy refuses a URL in a gray annotation at admission.
			k.u.fails(1, []string{`the annotation kubegray.io/gates-dry-run holds a URL ("://")`},
				"annotate", "deployment", "web", grayapi.GatesDryRunAnnotation+"=http://169.254.169.254/latest")
		}
		k.u.must("annotate", "deployment", "web", grayapi.GatesAnnotation+"-")
		k.expect("web", heldAt20)
		k.u.must("gray", "undo", "web")
		k.expect("web", completeAt10)
		k.released()
	})
}

// grantSecrets lets gray-controller's ServiceAccount get the Secrets named in its namespace, as
// docs/gates.md tells an admin to: a Role with their names, bound to it.
func grantSecrets(t *testing.T, c *cluster.Cluster, names ...string) {
	t.Helper()
	ctx := context.Background()
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "gray-controller-gate-secrets"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: names, Verbs: []string{"get"}}}}
	if _, err := c.Client.RbacV1().Roles("gray-system").Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "gray-controller-gate-secrets"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "gray-controller", Namespace: "gray-system"}}}
	if _, err := c.Client.RbacV1().RoleBindings("gray-system").Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}
