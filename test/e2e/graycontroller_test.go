package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubegray/kubectl-gray/internal/testutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"

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
			buildErr = fmt.Errorf("go build: %w\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatalf("build our binaries: %v", buildErr)
	}
	return filepath.Join(binDir, name)
}

// grayControllerName is the component name of our controller in a cluster.
const grayControllerName = "gray-controller"

// controllerSA is the identity gray-controller runs as (manifests/base); the
// alongside guard policy exempts exactly this user.
const controllerSA = "system:serviceaccount:gray-system:gray-controller"

// overlayManifests renders manifests/<overlay> with kubectl kustomize and
// returns its documents, without the controller's own Deployment and Service
// (gray-controller runs as a process here, not as pods of fake nodes).
func overlayManifests(t testing.TB, overlay string) []string {
	t.Helper()
	out, err := exec.Command("kubectl", "kustomize", "../../manifests/"+overlay).Output()
	if err != nil {
		t.Fatalf("kubectl kustomize manifests/%s: %v", overlay, err)
	}
	var docs []string
	for _, doc := range strings.Split(string(out), "\n---\n") {
		if strings.Contains(doc, "\nkind: Deployment\n") || strings.Contains(doc, "\nkind: Service\n") {
			continue
		}
		docs = append(docs, doc)
	}
	return docs
}

// policyDocs keeps the documents of docs of the given kind (ValidatingAdmissionPolicy or
// MutatingAdmissionPolicy) and their bindings.
func policyDocs(docs []string, kind string) []string {
	var kept []string
	for _, doc := range docs {
		if strings.Contains(doc, "\nkind: "+kind+"\n") || strings.Contains(doc, "\nkind: "+kind+"Binding\n") {
			kept = append(kept, doc)
		}
	}
	return kept
}

// applyManifests applies documents with the admin kubeconfig, as a user
// installing the manifests does.
func applyManifests(t testing.TB, c *cluster.Cluster, docs []string) {
	t.Helper()
	cmd := exec.Command("kubectl", "--kubeconfig="+c.Kubeconfig, "apply", "--server-side", "-f", "-")
	cmd.Stdin = strings.NewReader(strings.Join(docs, "\n---\n"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("kubectl apply manifests: %v\n%s", err, out)
	}
	for _, doc := range docs {
		if strings.Contains(doc, "\nkind: MutatingAdmissionPolicyBinding\n") {
			waitTakeoverPolicy(t, c)
		}
	}
	for _, doc := range docs {
		if strings.Contains(doc, "\nkind: ValidatingAdmissionPolicyBinding\n") {
			waitGuardPolicies(t, c)
			return
		}
	}
}

// policyProbeNamespace holds the objects that probe whether the admission policies act.
const policyProbeNamespace = "policy-probe"

// waitTakeoverPolicy returns once the takeover policy acts: kube-apiserver
// loads new admission policies asynchronously, and an image change that
// arrives before that is rolled out by the built-in controller untaken.
// A probe Deployment of 0 replicas is changed until it comes back taken over.
func waitTakeoverPolicy(t testing.TB, c *cluster.Cluster) {
	t.Helper()
	ctx := context.Background()
	const ns = policyProbeNamespace
	if err := createNamespace(ctx, c.Client, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	probe := testutil.Deployment("probe", testutil.WithImage("nginx:1.25"), testutil.WithReplicas(0), testutil.WithAnnotation(grayapi.PercentAnnotation, "50"))
	probe.Namespace = ns
	defer func() {
		_ = c.Client.AppsV1().Deployments(ns).Delete(ctx, "probe", metav1.DeleteOptions{})
	}()
	changes := 0
	err := cluster.Poll(ctx, 60*time.Second, 200*time.Millisecond, func(ctx context.Context) (bool, string, error) {
		d, err := c.Client.AppsV1().Deployments(ns).Get(ctx, "probe", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			// The guard policy may load before the takeover policy does; until
			// then it refuses a Deployment created with kubegray.io/percent.
			_, err = c.Client.AppsV1().Deployments(ns).Create(ctx, probe.DeepCopy(), metav1.CreateOptions{})
			if err != nil && !(apierrors.IsForbidden(err) && strings.Contains(err.Error(), "kubegray-guard")) {
				return false, "", err
			}
			return false, fmt.Sprintf("probe not taken over as it was created (create error: %v)", err), nil
		}
		if err == nil {
			if _, taken := d.Annotations[grayapi.StrategyAnnotation]; taken {
				return true, "", nil
			}
			changes++
			testutil.WithTemplateAnnotation("probe", strconv.Itoa(changes))(d)
			_, err = c.Client.AppsV1().Deployments(ns).Update(ctx, d, metav1.UpdateOptions{})
		}
		return false, fmt.Sprintf("%d template changes not taken over (last error: %v)", changes, err), nil
	})
	if err != nil {
		t.Fatalf("the takeover policy did not act: %v", err)
	}
}

// waitGuardPolicies returns once the guard and freeze policies refuse what they must: the
// unpause of a taken-over probe Deployment, and the resize of its frozen ReplicaSet.
func waitGuardPolicies(t testing.TB, c *cluster.Cluster) {
	t.Helper()
	ctx := context.Background()
	const ns = policyProbeNamespace
	if err := createNamespace(ctx, c.Client, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	probe := testutil.Deployment("guarded", testutil.WithImage("nginx:1.25"), testutil.WithReplicas(0), testutil.WithPaused(), testutil.WithRecreate(),
		testutil.WithAnnotation(grayapi.PercentAnnotation, "50"), testutil.WithAnnotation(grayapi.StrategyAnnotation, "RollingUpdate"))
	probe.Namespace = ns
	d, err := c.Client.AppsV1().Deployments(ns).Create(ctx, probe, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rs := testutil.ReplicaSet("guarded-frozen", 0, testutil.RSOwnedBy(d))
	rs.Namespace = ns
	rs.Labels = map[string]string{"app": "guarded", grayapi.FrozenLabel: grayapi.FrozenLabelValue}
	rs.Spec.Selector = d.Spec.Selector
	rs.Spec.Template = d.Spec.Template
	if _, err := c.Client.AppsV1().ReplicaSets(ns).Create(ctx, rs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Gone before this returns, so that the next installation probes afresh.
	defer func() {
		_ = c.Client.AppsV1().ReplicaSets(ns).Delete(ctx, "guarded-frozen", metav1.DeleteOptions{})
		_ = c.Client.AppsV1().Deployments(ns).Delete(ctx, "guarded", metav1.DeleteOptions{})
	}()
	refused := func(err error, policy string) bool {
		return apierrors.IsForbidden(err) && strings.Contains(err.Error(), policy)
	}
	err = cluster.Poll(ctx, 60*time.Second, 200*time.Millisecond, func(ctx context.Context) (bool, string, error) {
		unpause := []byte(`{"spec":{"paused":false}}`)
		_, guardErr := c.Client.AppsV1().Deployments(ns).Patch(ctx, "guarded", types.MergePatchType, unpause, metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
		resize := []byte(`{"spec":{"replicas":1}}`)
		_, freezeErr := c.Client.AppsV1().ReplicaSets(ns).Patch(ctx, "guarded-frozen", types.MergePatchType, resize, metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
		return refused(guardErr, "kubegray-guard") && refused(freezeErr, "kubegray-freeze"), fmt.Sprintf("unpause: %v; resize: %v", guardErr, freezeErr), nil
	})
	if err != nil {
		t.Fatalf("the guard and freeze policies did not act: %v", err)
	}
}

// serviceAccountKubeconfig writes a copy of the admin kubeconfig that
// impersonates gray-controller's ServiceAccount, so the controller under test
// has exactly the RBAC of manifests/base: a missing verb fails the tests.
func serviceAccountKubeconfig(t testing.TB, c *cluster.Cluster) string {
	t.Helper()
	return impersonatingKubeconfig(t, c, controllerSA)
}

// impersonatingKubeconfig writes a copy of the admin kubeconfig that acts as user.
func impersonatingKubeconfig(t testing.TB, c *cluster.Cluster, user string) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(c.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, auth := range cfg.AuthInfos {
		auth.Impersonate = user
	}
	path := filepath.Join(t.TempDir(), "gray-controller.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// startGrayController installs manifests/base (namespace, ServiceAccount,
// RBAC) and runs gray-controller against c as a separate process, the way a
// user runs it, as that ServiceAccount; it waits for /readyz. Later flags in
// args win.
func startGrayController(t testing.TB, c *cluster.Cluster, args ...string) {
	t.Helper()
	applyManifests(t, c, overlayManifests(t, "base"))
	if err := runGrayController(c, grayControllerName, ourBinary(t, "gray-controller"), serviceAccountKubeconfig(t, c), args...); err != nil {
		t.Fatal(err)
	}
}

// grayControllerFlags are the flags of a gray-controller process acting with kubeconfig, on
// fresh loopback ports, then args; readyz is the URL of its readiness.
func grayControllerFlags(kubeconfig string, args ...string) (flags []string, readyz string, err error) {
	ports, err := cluster.FreePorts(2)
	if err != nil {
		return nil, "", err
	}
	metricsPort, healthPort := ports[0], ports[1]
	flags = append([]string{
		"--kubeconfig=" + kubeconfig,
		"--leader-elect-namespace=gray-system",
		"--controller-namespace=gray-system",
		"--metrics-bind-address=127.0.0.1:" + strconv.Itoa(metricsPort),
		"--health-probe-bind-address=127.0.0.1:" + strconv.Itoa(healthPort),
		"-v=2",
	}, args...)
	return flags, "http://127.0.0.1:" + strconv.Itoa(healthPort) + "/readyz", nil
}

// runGrayController starts one gray-controller process named name (several
// replicas need distinct names, hence distinct logs) with kubeconfig, on
// fresh loopback ports, and waits for its /readyz (a standby replica is
// ready too). It returns an error rather than failing a test so that a
// goroutine replacing a replica can call it.
func runGrayController(c *cluster.Cluster, name, binary, kubeconfig string, args ...string) error {
	all, readyz, err := grayControllerFlags(kubeconfig, args...)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.StartComponent(ctx, name, binary, readyz, all...); err != nil {
		return fmt.Errorf("start %s: %w\n%s", name, err, c.LogTails(40))
	}
	return nil
}
