package controller

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"
)

const (
	testLeaseNamespace = "kube-system"
	testLeaseName      = "gray-controller"
	testIdentity       = "node-1_6f1c"
	// testTimeout bounds every wait so a broken elector fails the test
	// instead of hanging it.
	testTimeout = 30 * time.Second
)

func newTestElection(client kubernetes.Interface) *leaderElection {
	return &leaderElection{
		client: client, namespace: testLeaseNamespace, name: testLeaseName, identity: testIdentity,
		leaseDuration: 15 * time.Second, renewDeadline: 10 * time.Second, retryPeriod: 2 * time.Second,
	}
}

func leaseHolder(t *testing.T, client kubernetes.Interface) string {
	t.Helper()
	lease, err := client.CoordinationV1().Leases(testLeaseNamespace).Get(context.Background(), testLeaseName, metav1.GetOptions{})
	if err != nil {
		// Errorf, not Fatalf: lead functions call this off the test goroutine.
		t.Errorf("reading the lease: %v", err)
		return ""
	}
	return ptr.Deref(lease.Spec.HolderIdentity, "")
}

func waitFor[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(testTimeout):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// TestLeaderElectionShutdownOrder cancels the context while leading: lead
// must see its context cancelled while the lease is still ours, and the lease
// is released only after lead returned.
func TestLeaderElectionShutdownOrder(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	client := fake.NewClientset()

	started := make(chan struct{})
	holderWhileStopping := make(chan string, 1)
	lead := func(ctx context.Context) error {
		close(started)
		<-ctx.Done()
		holderWhileStopping <- leaseHolder(t, client)
		return nil
	}
	result := make(chan error, 1)
	go func() { result <- newTestElection(client).run(ctx, lead) }()

	waitFor(t, started, "leading to start")
	if got := leaseHolder(t, client); got != testIdentity {
		t.Errorf("while leading, lease holder = %q, want %q", got, testIdentity)
	}
	cancel()
	if err := waitFor(t, result, "run to return"); err != nil {
		t.Errorf("run() after cancel = %v, want nil", err)
	}
	if got := <-holderWhileStopping; got != testIdentity {
		t.Errorf("while the workers stopped, lease holder = %q, want still %q", got, testIdentity)
	}
	if got := leaseHolder(t, client); got != "" {
		t.Errorf("after shutdown, lease holder = %q, want released (empty)", got)
	}
}

// TestLeaderElectionLostLease makes every lease update fail while leading:
// after the renew deadline the elector gives up, lead's context is cancelled,
// and run returns an error so the process exits non-zero.
func TestLeaderElectionLostLease(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	client := fake.NewClientset()
	var failUpdates atomic.Bool
	client.PrependReactor("update", "leases", func(clienttesting.Action) (bool, runtime.Object, error) {
		if failUpdates.Load() {
			return true, nil, apierrors.NewServiceUnavailable("etcd is down")
		}
		return false, nil, nil
	})

	e := newTestElection(client)
	// Short but valid timings (renew > 1.2 × retry, lease > renew) keep the
	// test fast; the elector waits the renew deadline before giving up.
	e.leaseDuration, e.renewDeadline, e.retryPeriod = time.Second, 200*time.Millisecond, 50*time.Millisecond

	leadStopped := make(chan struct{})
	lead := func(ctx context.Context) error {
		failUpdates.Store(true)
		<-ctx.Done()
		close(leadStopped)
		return nil
	}
	result := make(chan error, 1)
	go func() { result <- e.run(ctx, lead) }()

	err := waitFor(t, result, "run to return after losing the lease")
	select {
	case <-leadStopped:
	default:
		t.Error("run returned before lead stopped")
	}
	want := `lost the leader-election lease kube-system/gray-controller (identity "node-1_6f1c")`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("run() = %v, want an error containing %q", err, want)
	}
	if ctx.Err() != nil {
		t.Fatal("the test context should still be live: the error must come from the lost lease")
	}
}

func TestLeaderElectionLeadFails(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	client := fake.NewClientset()
	boom := errors.New("creating the deployment controller: boom")
	err := newTestElection(client).run(ctx, func(context.Context) error { return boom })
	if !errors.Is(err, boom) {
		t.Errorf("run() = %v, want %v", err, boom)
	}
	if got := leaseHolder(t, client); got != "" {
		t.Errorf("after lead failed, lease holder = %q, want released so a standby takes over at once", got)
	}
}

func TestLeaderElectionLeadReturnsWhileLeading(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	err := newTestElection(fake.NewClientset()).run(ctx, func(context.Context) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "the controller stopped while still leading") {
		t.Errorf("run() = %v, want an error saying the controller stopped while leading", err)
	}
}

// TestLeaderElectionStandby: another replica holds a fresh lease, so lead
// never runs; cancelling returns nil and leaves the other holder alone.
func TestLeaderElectionStandby(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	now := metav1.NewMicroTime(time.Now())
	client := fake.NewClientset(&coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: testLeaseNamespace, Name: testLeaseName},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity: ptr.To("node-2_a41b"), LeaseDurationSeconds: ptr.To[int32](3600),
			AcquireTime: &now, RenewTime: &now,
		},
	})
	var leaseReads atomic.Int32
	client.PrependReactor("get", "leases", func(clienttesting.Action) (bool, runtime.Object, error) {
		leaseReads.Add(1)
		return false, nil, nil
	})

	var led atomic.Bool
	result := make(chan error, 1)
	go func() {
		result <- newTestElection(client).run(ctx, func(context.Context) error { led.Store(true); return nil })
	}()

	err := wait.PollUntilContextTimeout(ctx, time.Millisecond, testTimeout, true, func(context.Context) (bool, error) {
		return leaseReads.Load() > 0, nil
	})
	if err != nil {
		t.Fatalf("the elector never read the lease: %v", err)
	}
	cancel()
	if err := waitFor(t, result, "run to return"); err != nil {
		t.Errorf("run() = %v, want nil", err)
	}
	if led.Load() {
		t.Error("lead ran although another replica holds the lease")
	}
	if got := leaseHolder(t, client); got != "node-2_a41b" {
		t.Errorf("lease holder = %q, want the other replica's node-2_a41b untouched", got)
	}
}
