package controller

import (
	"fmt"
	"os"
	"runtime/debug"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/klog/v2"
)

// softLimitShare is the part of --memory-limit the Go garbage collector aims to stay under.
// The rest is left for what the runtime does not count against its limit (the binary, thread
// stacks outside the heap arenas) and for the time a collection takes to catch up, so that the
// collector, not the kernel's OOM killer, acts first.
const softLimitShare = 0.9

// parseMemoryLimit reads --memory-limit: empty means none, otherwise a Kubernetes quantity
// ("256Mi", or the plain bytes the downward API's resourceFieldRef gives).
func parseMemoryLimit(value string) (int64, error) {
	if value == "" {
		return 0, nil
	}
	q, err := resource.ParseQuantity(value)
	if err != nil {
		return 0, fmt.Errorf("invalid --memory-limit %q: %w", value, err)
	}
	bytes, ok := q.AsInt64()
	if !ok || bytes <= 0 {
		return 0, fmt.Errorf("invalid --memory-limit %q: must be a positive number of bytes", value)
	}
	return bytes, nil
}

// softMemoryLimit is the Go runtime's memory limit for a container limited to limit bytes.
func softMemoryLimit(limit int64) int64 {
	return int64(float64(limit) * softLimitShare)
}

// applyMemoryLimit gives the garbage collector a soft limit below the container's, unless
// GOMEMLIMIT is set: an operator who sets it explicitly knows better than the ratio.
func applyMemoryLimit(logger klog.Logger, value string) error {
	limit, err := parseMemoryLimit(value)
	if err != nil || limit == 0 {
		return err
	}
	if env, set := os.LookupEnv("GOMEMLIMIT"); set {
		logger.Info("GOMEMLIMIT is set, ignoring --memory-limit", "GOMEMLIMIT", env, "memoryLimit", value)
		return nil
	}
	soft := softMemoryLimit(limit)
	debug.SetMemoryLimit(soft)
	logger.Info("Go memory limit set from --memory-limit", "memoryLimit", limit, "goMemoryLimit", soft)
	return nil
}
