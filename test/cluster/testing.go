package cluster

import (
	"context"
	"os"
	"testing"
	"time"
)

// StartForTest starts a control plane for t and stops it when t ends. When t
// has failed, the tail of every component's log is written to the test log.
func StartForTest(t testing.TB, opts Options) *Cluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	began := time.Now()
	c, err := Start(ctx, opts)
	if err != nil {
		t.Fatalf("start control plane: %v", err)
	}
	ready := time.Since(began)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("component logs:\n%s", c.LogTails(40))
		}
		if err := c.Stop(); err != nil {
			t.Errorf("stop control plane: %v", err)
		}
	})
	version, err := c.Client.Discovery().ServerVersion()
	if err != nil {
		t.Fatalf("control plane version: %v", err)
	}
	t.Logf("control plane %s (controllers %q) ready in %v at %s", version.GitVersion, opts.Controllers, ready.Round(time.Millisecond), c.Dir)
	// KUBEGRAY_K8S picks the version test/hack/build-controlplane.sh builds; a leg meant for one
	// version must not pass on another because KUBEGRAY_CONTROLPLANE named the wrong folder.
	if want := os.Getenv("KUBEGRAY_K8S"); want != "" && version.GitVersion != "v"+want {
		t.Fatalf("control plane is %s, KUBEGRAY_K8S wants v%s (KUBEGRAY_CONTROLPLANE=%s)", version.GitVersion, want, os.Getenv("KUBEGRAY_CONTROLPLANE"))
	}
	return c
}
