package controller

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2/ktesting"

	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// runOptions are valid Options for Run against a fake clientset, with the
// HTTP servers off and a fixed clock.
func runOptions(client *fake.Clientset) *Options {
	o := NewOptions()
	o.Mode = grayapi.ModeInstead
	o.LeaderElectNamespace = testLeaseNamespace
	o.MetricsBindAddress, o.HealthProbeBindAddress = disabledAddress, disabledAddress
	o.Client = client
	o.Now = func() time.Time { return checkNow }
	o.Identity = testIdentity
	return o
}

// watching reports whether the fake client has seen a watch of resource,
// which the informers start only once the controller runs.
func watching(client *fake.Clientset, resource string) bool {
	for _, a := range client.Actions() {
		if a.GetVerb() == "watch" && a.GetResource().Resource == resource {
			return true
		}
	}
	return false
}

func TestRunRefusesWhileBuiltinControllerActive(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	rs := replicaSetManagedBy("default", "web-5d8c7", managed(kcm, update, "", time.Minute))
	client := fake.NewClientset(&rs)
	o := runOptions(client)
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}

	err := o.Run(ctx)
	if err == nil || !strings.Contains(err.Error(), "replicaset default/web-5d8c7") ||
		!strings.Contains(err.Error(), "--skip-builtin-controller-check") {
		t.Fatalf("Run() = %v, want the built-in controller error", err)
	}
	for _, a := range client.Actions() {
		if a.GetResource().Resource == "leases" {
			t.Errorf("Run campaigned for the lease (%s) although it refused to start", a.GetVerb())
		}
	}
}

func TestRunSkipsBuiltinCheckWhenAsked(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	rs := replicaSetManagedBy("default", "web-5d8c7", managed(kcm, update, "", time.Minute))
	client := fake.NewClientset(&rs)
	o := runOptions(client)
	o.SkipBuiltinControllerCheck = true
	o.LeaderElect = false

	result := make(chan error, 1)
	go func() { result <- o.Run(ctx) }()
	pollUntil(t, ctx, "the deployment informer to start", func() bool { return watching(client, "deployments") })
	cancel()
	if err := waitFor(t, result, "Run to return"); err != nil {
		t.Errorf("Run() = %v, want nil", err)
	}
}

// TestRunWithLeaderElection drives the whole wiring against a fake API
// server: campaign, start informers only once leading, then on cancel stop
// and release the lease.
func TestRunWithLeaderElection(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	d := appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}}
	client := fake.NewClientset(&d)
	o := runOptions(client)

	result := make(chan error, 1)
	go func() { result <- o.Run(ctx) }()

	pollUntil(t, ctx, "the lease to be held and the informers to start", func() bool {
		lease, err := client.CoordinationV1().Leases(testLeaseNamespace).Get(ctx, testLeaseName, metav1.GetOptions{})
		return err == nil && lease.Spec.HolderIdentity != nil && *lease.Spec.HolderIdentity == testIdentity &&
			watching(client, "deployments")
	})
	cancel()
	if err := waitFor(t, result, "Run to return"); err != nil {
		t.Errorf("Run() after cancel = %v, want nil", err)
	}
	if got := leaseHolder(t, client); got != "" {
		t.Errorf("after shutdown, lease holder = %q, want released", got)
	}
}

func TestRunWithoutLeaderElection(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	client := fake.NewClientset()
	o := runOptions(client)
	o.LeaderElect = false

	result := make(chan error, 1)
	go func() { result <- o.Run(ctx) }()
	pollUntil(t, ctx, "the informers to start", func() bool {
		return watching(client, "deployments") && watching(client, "replicasets") && watching(client, "pods")
	})
	cancel()
	if err := waitFor(t, result, "Run to return"); err != nil {
		t.Errorf("Run() = %v, want nil", err)
	}
	_, err := client.CoordinationV1().Leases(testLeaseNamespace).Get(context.Background(), testLeaseName, metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("without --leader-elect, getting the lease = %v, want NotFound", err)
	}
}

// TestRunServesProbesMetricsAndProfiles checks the endpoints of a running leader:
// /readyz turns "ok" once the caches synced, and /metrics shows the
// controller's own queue, instrumented through the workqueue provider.
func TestRunServesProbesMetricsAndProfiles(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	d := appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}}
	o := runOptions(fake.NewClientset(&d))
	o.HealthProbeBindAddress, o.MetricsBindAddress, o.PprofBindAddress = freeAddress(t), freeAddress(t), freeAddress(t)
	// Plain HTTP: the fake client reviews no token (controller/delegated has its own tests, the
	// e2e suite the real API server's reviews).
	o.MetricsSecure = false

	result := make(chan error, 1)
	go func() { result <- o.Run(ctx) }()

	pollUntil(t, ctx, "/readyz to report synced caches", func() bool {
		code, body, err := httpGet("http://" + o.HealthProbeBindAddress + "/readyz")
		return err == nil && code == http.StatusOK && body == "ok"
	})
	if code, body, err := httpGet("http://" + o.HealthProbeBindAddress + "/healthz?verbose"); err != nil ||
		code != http.StatusOK || body != "[+]leaderElection ok\nhealthz check passed\n" {
		t.Errorf("GET /healthz?verbose = %d %q %v, want 200 with the leader-election check passing", code, body, err)
	}
	// The metrics are process-wide and other tests run queues too, so look
	// for the series rather than their values.
	pollUntil(t, ctx, "/metrics to show the deployment queue", func() bool {
		_, body, err := httpGet("http://" + o.MetricsBindAddress + "/metrics")
		return err == nil && strings.Contains(body, `workqueue_adds_total{name="deployment"} `) &&
			strings.Contains(body, `leader_election_master_status{name="gray-controller"} 1`)
	})

	// A heap profile in the text format names the allocating functions.
	if code, body, err := httpGet("http://" + o.PprofBindAddress + "/debug/pprof/heap?debug=1"); err != nil ||
		code != http.StatusOK || !strings.Contains(body, "heap profile:") {
		t.Errorf("GET /debug/pprof/heap?debug=1 = %d, %v, want 200 with a heap profile; body starts %.80q", code, err, body)
	}

	cancel()
	if err := waitFor(t, result, "Run to return"); err != nil {
		t.Errorf("Run() = %v, want nil", err)
	}
	if _, _, err := httpGet("http://" + o.HealthProbeBindAddress + "/healthz"); err == nil {
		t.Error("the health server still answers after Run returned")
	}
}

// freeAddress returns a loopback address whose port was free a moment ago.
func freeAddress(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return l.Addr().String()
}

func httpGet(url string) (int, string, error) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

func pollUntil(t *testing.T, ctx context.Context, what string, condition func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, testTimeout, true, func(context.Context) (bool, error) {
		return condition(), nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// TestHandOverOnlyInInsteadMode: only a replica of instead mode that elects a leader and knows
// its pod may hand its lease to its own Deployment's canary; handing over stops leading with
// errHandedOver and the reason, which Run takes as a clean exit.
func TestHandOverOnlyInInsteadMode(t *testing.T) {
	for _, tt := range []struct {
		name        string
		edit        func(*Options)
		handsOver   bool
		wantMessage string
	}{
		{"instead mode, a pod, leader election", nil, true,
			"handed the leader-election lease to the canary of gray-controller's own Deployment: canary ready"},
		{"alongside mode", func(o *Options) { o.Mode = grayapi.ModeAlongside }, false, ""},
		{"no pod name", func(o *Options) { o.PodName = "" }, false, ""},
		{"no leader election", func(o *Options) { o.LeaderElect = false }, false, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := runOptions(fake.NewClientset())
			o.PodName = "gray-controller-7d9f8c5b4-x2x9q"
			if tt.edit != nil {
				tt.edit(o)
			}
			ctx, stepDown := context.WithCancelCause(context.Background())
			defer stepDown(nil)
			handOver := o.handOver(stepDown)
			if (handOver != nil) != tt.handsOver {
				t.Fatalf("handOver set: %t, want %t", handOver != nil, tt.handsOver)
			}
			if handOver == nil {
				return
			}
			handOver("canary ready")
			cause := context.Cause(ctx)
			if !errors.Is(cause, errHandedOver) || cause.Error() != tt.wantMessage {
				t.Errorf("stepped down with %v, want errHandedOver saying %q", cause, tt.wantMessage)
			}
		})
	}
}
