package cluster

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// Condition is one look at what a poll waits for: done when it holds, and otherwise what is
// still missing, for the timeout's message. An error ends the poll at once (a process that
// exited will not become healthy).
type Condition func(ctx context.Context) (done bool, missing string, err error)

// Poll looks at cond every interval, the first time at once, until it is done, returns an
// error, ctx ends or timeout passes. A timeout's error carries cond's last message.
func Poll(ctx context.Context, timeout, interval time.Duration, cond Condition) error {
	missing := ""
	err := wait.PollUntilContextTimeout(ctx, interval, timeout, true, func(ctx context.Context) (bool, error) {
		done, why, err := cond(ctx)
		missing = why
		return done, err
	})
	if err != nil && wait.Interrupted(err) && ctx.Err() == nil {
		return fmt.Errorf("not within %v: %s", timeout, missing)
	}
	return err
}
