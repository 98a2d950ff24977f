package cluster

import (
	"context"
	"os"
	"strings"
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
	var c *Cluster
	var err error
	for attempt := 1; ; attempt++ {
		c, err = Start(ctx, opts)
		// FreePorts hands out ports that are free when asked, and another process can take one
		// before a component binds it (seen once in the twenty-odd starts of a make test). A
		// start that failed on that alone is tried again with new ports, in a folder of its own.
		if err == nil || attempt == 3 || opts.Dir != "" || !strings.Contains(err.Error(), "address already in use") {
			break
		}
		t.Logf("start control plane, attempt %d: a port was taken before its component bound it; trying again with new ports", attempt)
	}
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
