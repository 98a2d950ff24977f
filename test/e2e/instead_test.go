package e2e

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegray/kubectl-gray/internal/testutil"
	"github.com/kubegray/kubectl-gray/test/cluster"
)

// Instead mode must refuse to start next to a live built-in deployment
// controller: two controllers rolling the same Deployments would fight.
func TestInsteadModeRefusesNextToBuiltinController(t *testing.T) {
	c := cluster.StartForTest(t, cluster.Options{})
	ctx := context.Background()
	d := testutil.Deployment("web", testutil.WithImage("nginx:1.25"), testutil.WithReplicas(2))
	if _, err := c.Client.AppsV1().Deployments(d.Namespace).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create deployment: %v", err)
	}
	waitRolledOut(t, c.Client, d.Namespace, d.Name, 60*time.Second)

	run := func(timeout time.Duration, extra ...string) (string, error) {
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		args := append([]string{"--kubeconfig=" + c.Kubeconfig, "--mode=instead", "--leader-elect=false",
			"--metrics-bind-address=0", "--health-probe-bind-address=0"}, extra...)
		out, err := exec.CommandContext(ctx, ourBinary(t, "gray-controller"), args...).CombinedOutput()
		return string(out), err
	}

	began := time.Now()
	out, err := run(30 * time.Second)
	t.Logf("refused after %v", time.Since(began).Round(time.Millisecond))
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) || exitErr.ExitCode() != 1 {
		t.Fatalf("gray-controller --mode=instead next to the built-in controller: err %v, want exit status 1; output:\n%s", err, out)
	}
	for _, want := range []string{"default/web", "kube-controller-manager", "--controllers=*,-deployment-controller", "--skip-builtin-controller-check"} {
		if !strings.Contains(out, want) {
			t.Errorf("refusal message does not mention %q:\n%s", want, out)
		}
	}

	// The override starts it anyway; it runs until stopped.
	out, err = run(5*time.Second, "--skip-builtin-controller-check")
	if !errors.Is(err, context.DeadlineExceeded) && (err == nil || !strings.Contains(err.Error(), "killed")) {
		t.Fatalf("with --skip-builtin-controller-check the controller should keep running; err %v, output:\n%s", err, out)
	}
}
