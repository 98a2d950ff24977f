package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegray/kubectl-gray/internal/testutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
	"github.com/kubegray/kubectl-gray/test/cluster"
)

// BenchmarkStatusVsRolloutStatus compares the wall time of `kubectl gray
// status web` with `kubectl rollout status deployment/web` on the same
// completed gray Deployment (10 replicas) of one control plane run by
// gray-controller in instead mode. Each iteration is a whole run of the real
// kubectl, which execs kubectl-gray for the first: process start-up,
// kubeconfig loading and the API calls (gray status: get the Deployment,
// list its ReplicaSets, pods and events; rollout status: discovery from the
// warm cache, then a list and watch of the Deployment until it is rolled
// out, which it already is).
//
//	go test -run '^$' -bench BenchmarkStatusVsRolloutStatus -benchtime 20x ./e2e/
func BenchmarkStatusVsRolloutStatus(b *testing.B) {
	c := cluster.StartForTest(b, cluster.Options{Controllers: cluster.WithoutDeploymentController})
	startGrayController(b, c, "--mode=instead")
	ctx := context.Background()
	const ns = "gray-bench"
	if err := createNamespace(ctx, c.Client, ns); err != nil {
		b.Fatal(err)
	}
	if err := createDeployment(testutil.GrayDeployment("web", 10, "20"))(ctx, c.Client, ns); err != nil {
		b.Fatal(err)
	}
	waitGrayComplete(b, c, ns, "web", 10)

	u := newPluginUser(b, c, ns)
	u.quiet = true
	perOp := map[string]time.Duration{}
	for _, bc := range []struct {
		name string
		args []string
		// want is a line each run must print, so a failing command cannot
		// pass for a fast one.
		want string
	}{
		{name: "kubectl-gray-status", args: []string{"gray", "status", "web"}, want: "Phase:       Complete\n"},
		{name: "kubectl-rollout-status", args: []string{"rollout", "status", "deployment/web"}, want: "deployment \"web\" successfully rolled out\n"},
	} {
		// A run outside the timer warms the discovery cache and the page
		// cache, for both commands alike.
		if out := u.must(bc.args...); !strings.Contains(out, bc.want) {
			b.Fatalf("kubectl %s printed %q, want a line %q", strings.Join(bc.args, " "), out, bc.want)
		}
		b.Run(bc.name, func(b *testing.B) {
			start := time.Now()
			for b.Loop() {
				r := u.kubectl(bc.args...)
				if r.code != 0 || !strings.Contains(r.stdout, bc.want) {
					b.Fatalf("want exit 0 and a line %q, got %s", bc.want, r)
				}
			}
			perOp[bc.name] = time.Since(start) / time.Duration(b.N)
		})
	}
	gray, rollout := perOp["kubectl-gray-status"], perOp["kubectl-rollout-status"]
	if gray > 0 && rollout > 0 {
		b.Logf("kubectl gray status %v/op, kubectl rollout status %v/op: ratio %.2f", gray, rollout, float64(gray)/float64(rollout))
	}
}

// waitGrayComplete waits until gray-controller reports the gray Deployment
// Complete with every replica updated and available.
func waitGrayComplete(b *testing.B, c *cluster.Cluster, ns, name string, replicas int32) {
	b.Helper()
	err := cluster.Poll(context.Background(), 60*time.Second, 100*time.Millisecond, func(ctx context.Context) (bool, string, error) {
		d, err := c.Client.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		st, _ := grayapi.ParseStatus(d.Annotations[grayapi.StatusAnnotation])
		s := d.Status
		return st.Phase == grayapi.PhaseComplete && s.ObservedGeneration >= d.Generation &&
				s.UpdatedReplicas == replicas && s.AvailableReplicas == replicas && s.Replicas == replicas,
			fmt.Sprintf("phase %q, replicas %d updated %d available %d", st.Phase, s.Replicas, s.UpdatedReplicas, s.AvailableReplicas), nil
	})
	if err != nil {
		b.Fatalf("deployment %s/%s not complete: %v", ns, name, err)
	}
}
