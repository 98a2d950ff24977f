package cluster

import (
	"context"
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
	t.Logf("control plane (controllers %q) ready in %v at %s", opts.Controllers, time.Since(began).Round(time.Millisecond), c.Dir)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("component logs:\n%s", c.LogTails(40))
		}
		if err := c.Stop(); err != nil {
			t.Errorf("stop control plane: %v", err)
		}
	})
	return c
}
