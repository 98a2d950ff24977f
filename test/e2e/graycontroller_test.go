package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/kubegray/kubectl-gray/test/cluster"
)

var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
)

// ourBinary returns the path of one of our binaries: from $KUBEGRAY_BIN (set
// by `make test`, which has just built them) or built once for this run.
func ourBinary(t testing.TB, name string) string {
	t.Helper()
	if dir := os.Getenv("KUBEGRAY_BIN"); dir != "" {
		return filepath.Join(dir, name)
	}
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "kubegray-bin-")
		if buildErr != nil {
			return
		}
		// Tests run in test/e2e; the main module is two levels up.
		out, err := exec.Command("go", "build", "-C", "../..", "-o", binDir+"/", "./cmd/kubectl-gray", "./cmd/gray-controller").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatalf("build our binaries: %v", buildErr)
	}
	return filepath.Join(binDir, name)
}

// grayControllerName is the component name of our controller in a cluster.
const grayControllerName = "gray-controller"

// startGrayController runs gray-controller against c as a separate process,
// the way a user runs it, and waits for /readyz.
func startGrayController(t testing.TB, c *cluster.Cluster, args ...string) {
	t.Helper()
	metricsPort, err := cluster.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	healthPort, err := cluster.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	all := append([]string{
		"--kubeconfig=" + c.Kubeconfig,
		"--leader-elect-namespace=kube-system",
		"--metrics-bind-address=127.0.0.1:" + strconv.Itoa(metricsPort),
		"--health-probe-bind-address=127.0.0.1:" + strconv.Itoa(healthPort),
		"-v=2",
	}, args...)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	readyz := "http://127.0.0.1:" + strconv.Itoa(healthPort) + "/readyz"
	if err := c.StartComponent(ctx, grayControllerName, ourBinary(t, "gray-controller"), readyz, all...); err != nil {
		t.Fatalf("start gray-controller: %v\n%s", err, c.LogTails(40))
	}
}
