package e2e

import (
	"context"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/kubegray/kubectl-gray/internal/testutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"

	"github.com/kubegray/kubectl-gray/test/cluster"
)

// TestAlongsideSomeNamespaces installs the chart with namespaces set (gray-controller bound by
// RoleBindings in those namespaces only, the admission policies' bindings scoped to them) and
// runs gray-controller with the chart's arguments as its ServiceAccount, next to the built-in
// deployment controller. A gray rollout in a watched namespace holds and completes; in a
// namespace left out, a Deployment annotated kubegray.io/percent is the built-in controller's
// alone (rolled out to every replica, never taken over, never written by gray-controller, which
// may not even list it there); and a controller told to watch a namespace the policies do not
// bind in refuses to start.
func TestAlongsideSomeNamespaces(t *testing.T) {
	if os.Getenv("KUBEGRAY_HELM") == "" {
		t.Skip("KUBEGRAY_HELM is not set: run `make helm-check`")
	}
	c := cluster.StartForTest(t, cluster.Options{})
	ctx := context.Background()
	e := newAlongsideEnv(t, c, "shop") // namespace gray-shop, watched
	const leftOut = "gray-elsewhere"
	for _, ns := range []string{releaseNS, leftOut, policyProbeNamespace} {
		if err := createNamespace(ctx, c.Client, ns); err != nil {
			t.Fatal(err)
		}
	}

	// The chart's objects but its Deployment and Service (the controller runs as a process here);
	// the policy probes run in policyProbeNamespace, so it is watched too.
	rendered := helmCmd(t, "template", releaseName, chartPath, "--namespace", releaseNS,
		"--set", "namespaces={"+e.ns+","+policyProbeNamespace+"}")
	var docs []string
	var chartDeployment appsv1.Deployment
	for _, doc := range strings.Split(rendered, "\n---\n") {
		switch {
		case strings.Contains(doc, "\nkind: Deployment\n"):
			if err := yaml.Unmarshal([]byte(doc), &chartDeployment); err != nil {
				t.Fatalf("the chart's Deployment: %v", err)
			}
		case strings.Contains(doc, "\nkind: Service\n"):
		default:
			docs = append(docs, doc)
		}
	}
	if len(chartDeployment.Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("the chart rendered no Deployment with one container:\n%s", rendered)
	}
	applyManifests(t, c, docs)

	args := hostArgs(t, chartDeployment.Spec.Template.Spec.Containers[0], releaseNS)
	if want := "--namespaces=" + e.ns + "," + policyProbeNamespace; !slices.Contains(args, want) {
		t.Fatalf("chart args %q: want %s", args, want)
	}
	for ns, want := range map[string]string{e.ns: "yes", leftOut: "no"} {
		out, _ := exec.Command("kubectl", "--kubeconfig="+serviceAccountKubeconfig(t, c), "auth", "can-i", "list", "deployments.apps", "-n", ns).Output()
		if got := strings.TrimSpace(string(out)); got != want {
			t.Errorf("may gray-controller list deployments in %s? %q, want %q", ns, got, want)
		}
	}

	t.Run("a namespace the policies do not bind in is refused", func(t *testing.T) {
		wantRefusedToStartWith(t, c, []string{"--namespaces=" + e.ns + "," + leftOut},
			"MutatingAdmissionPolicyBinding kubegray-takeover does not bind in namespace "+leftOut,
			"kubernetes.io/metadata.name in ("+e.ns+","+policyProbeNamespace+")")
	})

	if err := runGrayController(c, grayControllerName, ourBinary(t, "gray-controller"), serviceAccountKubeconfig(t, c), args...); err != nil {
		t.Fatal(err)
	}

	t.Run("watched", func(t *testing.T) {
		e.startStable(testutil.GrayDeployment("web", 10, "20"))
		e.do(setImage("web", "nginx:1.26"))
		d := e.expect("web", grayState{phase: grayapi.PhaseHeld, newSpec: 2, oldTotal: 8, paused: true})
		alongsideTakenOver(t, d, alongsideSaved)
		e.resume("web", true)
		e.expect("web", grayState{phase: grayapi.PhaseComplete, newSpec: 10})
		alongsideReleased(t, e, "web")
	})

	t.Run("left out", func(t *testing.T) {
		d := testutil.GrayDeployment("web", 10, "20")
		d.Namespace = leftOut
		if _, err := c.Client.AppsV1().Deployments(leftOut).Create(ctx, d, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitRolledOut(t, c.Client, leftOut, "web", 60*time.Second)
		if err := setImage("web", "nginx:1.26")(ctx, c.Client, leftOut); err != nil {
			t.Fatal(err)
		}
		// Rolled out to every replica by the built-in controller: no hold, no takeover.
		d = waitRolledOut(t, c.Client, leftOut, "web", 60*time.Second)
		if d.Spec.Template.Spec.Containers[0].Image != "nginx:1.26" || d.Spec.Paused {
			t.Errorf("%s/web: image %s, paused %v; want nginx:1.26 rolled out, not paused", leftOut, d.Spec.Template.Spec.Containers[0].Image, d.Spec.Paused)
		}
		for _, a := range []string{grayapi.StrategyAnnotation, grayapi.StatusAnnotation} {
			if v, ok := d.Annotations[a]; ok {
				t.Errorf("%s/web has %s=%q; want nothing of gray-controller's", leftOut, a, v)
			}
		}
		alongsideNoWritesBy(t, d.ManagedFields, leftOut+"/web")
		for _, rs := range ownedReplicaSets(t, c.Client, d) {
			alongsideNoWritesBy(t, rs.ManagedFields, "replica set "+leftOut+"/"+rs.Name)
		}
	})
}
