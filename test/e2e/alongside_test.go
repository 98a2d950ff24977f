package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kubegray/kubectl-gray/internal/testutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
	"github.com/kubegray/kubectl-gray/test/cluster"
)

// alongsidePolicies are the admission policy documents among docs.
func alongsidePolicies(docs []string) []string {
	var out []string
	for _, doc := range docs {
		if strings.Contains(doc, "AdmissionPolicy") {
			out = append(out, doc)
		}
	}
	return out
}

// startAlongsideController runs gray-controller in alongside mode.
func startAlongsideController(t *testing.T, c *cluster.Cluster, args ...string) {
	t.Helper()
	startGrayController(t, c, append([]string{"--mode=alongside"}, args...)...)
}

// newAlongsideEnv is newGrayEnv that logs the recorder's scale writes per
// ReplicaSet once it has verified them (cleanups run last-registered first).
func newAlongsideEnv(t *testing.T, c *cluster.Cluster, name string) *grayEnv {
	t.Helper()
	var e *grayEnv
	t.Cleanup(func() {
		if e == nil {
			return
		}
		e.rec.mu.Lock()
		defer e.rec.mu.Unlock()
		keys := make([]string, 0, len(e.rec.scaleWrites))
		for k := range e.rec.scaleWrites {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var b strings.Builder
		for _, k := range keys {
			fmt.Fprintf(&b, " %s=%d", k, e.rec.scaleWrites[k])
		}
		t.Logf("namespace %s: scale writes per ReplicaSet (deployment/revision by writer):%s", e.ns, b.String())
	})
	t.Cleanup(func() {
		if e != nil {
			alongsideNoRecreate(t, e)
		}
	})
	e = newGrayEnv(t, c, "al-"+name)
	return e
}

// alongsideNoRecreate fails if any Deployment of the scenario is left on
// Recreate or taken over.
func alongsideNoRecreate(t *testing.T, e *grayEnv) {
	t.Helper()
	eachDeploymentLeft(t, e, func(d appsv1.Deployment) {
		if _, taken := d.Annotations[grayapi.StrategyAnnotation]; taken || d.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType || d.Spec.Paused {
			t.Errorf("deployment %s/%s left taken over: strategy %s, paused %t, %s=%q", d.Namespace, d.Name, d.Spec.Strategy.Type,
				d.Spec.Paused, grayapi.StrategyAnnotation, d.Annotations[grayapi.StrategyAnnotation])
		}
	})
}

// eachDeploymentLeft calls check for every Deployment of the scenario's namespace.
func eachDeploymentLeft(t *testing.T, e *grayEnv, check func(d appsv1.Deployment)) {
	t.Helper()
	list, err := e.client.AppsV1().Deployments(e.ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Error(err)
		return
	}
	for _, d := range list.Items {
		check(d)
	}
}

// alongsideTakenOver checks the Deployment is taken over with saved.
func alongsideTakenOver(t *testing.T, d *appsv1.Deployment, saved string) {
	t.Helper()
	if d.Annotations[grayapi.StrategyAnnotation] != saved || !d.Spec.Paused || d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
		t.Fatalf("deployment %s not taken over with %q: paused %t strategy %+v annotations %v", d.Name, saved, d.Spec.Paused, d.Spec.Strategy, d.Annotations)
	}
}

// alongsideReleased waits until the Deployment is released to 25%/25%.
func alongsideReleased(t *testing.T, e *grayEnv, name string) {
	t.Helper()
	alongsideReleasedTo(t, e, name, "25%", "25%")
}

// alongsideReleasedTo is alongsideReleased for a Deployment whose own strategy has the given
// maxSurge and maxUnavailable.
func alongsideReleasedTo(t *testing.T, e *grayEnv, name, maxSurge, maxUnavailable string) {
	t.Helper()
	eventually(t, 60*time.Second, "deployment "+name+" released", func() (bool, string) {
		d, err := e.client.AppsV1().Deployments(e.ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		_, taken := d.Annotations[grayapi.StrategyAnnotation]
		ru := d.Spec.Strategy.RollingUpdate
		ok := !taken && !d.Spec.Paused && d.Spec.Strategy.Type == appsv1.RollingUpdateDeploymentStrategyType &&
			ru != nil && ru.MaxSurge.String() == maxSurge && ru.MaxUnavailable.String() == maxUnavailable
		return ok, fmt.Sprintf("paused %t strategy %+v %s=%q", d.Spec.Paused, d.Spec.Strategy, grayapi.StrategyAnnotation, d.Annotations[grayapi.StrategyAnnotation])
	})
}

// alongsideKubectlGray runs the built kubectl-gray binary as a user would.
func alongsideKubectlGray(t *testing.T, c *cluster.Cluster, ns string, args ...string) string {
	t.Helper()
	cmd := exec.Command(ourBinary(t, "kubectl-gray"), append([]string{"--kubeconfig=" + c.Kubeconfig, "-n", ns}, args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.Env = append(os.Environ(), "NO_COLOR=1")
	if err := cmd.Run(); err != nil {
		t.Fatalf("kubectl gray %s: %v\n%s", strings.Join(args, " "), err, out.String())
	}
	return out.String()
}

const alongsideSaved = "RollingUpdate;maxSurge=25%;maxUnavailable=25%"

// TestAlongside runs gray-controller --mode=alongside as its ServiceAccount
// next to the stock kube-controller-manager, with the policies of
// manifests/alongside applied by kubectl.
func TestAlongside(t *testing.T) {
	c := cluster.StartForTest(t, cluster.Options{})
	docs := overlayManifests(t, "alongside")
	applyManifests(t, c, docs)
	startAlongsideController(t, c)
	held := grayState{phase: grayapi.PhaseHeld, newSpec: 2, oldTotal: 8, paused: true}
	done := grayState{phase: grayapi.PhaseComplete, newSpec: 10}

	t.Run("scenarios", func(t *testing.T) {
		t.Run("takeover by the policy", func(t *testing.T) {
			t.Parallel()
			e := newAlongsideEnv(t, c, "policy")
			e.startStable(testutil.GrayDeployment("web", 10, "20"))
			e.do(setImage("web", "nginx:1.26"))
			d := e.expect("web", held)
			alongsideTakenOver(t, d, alongsideSaved)
			if cond := e.heldCondition("web"); cond == nil || cond.Status != "True" {
				t.Fatalf("GrayHeld = %+v, want True", cond)
			}
			e.resume("web", true)
			e.expect("web", done)
			alongsideReleased(t, e, "web")
			waitRolledOut(t, e.client, e.ns, "web", 60*time.Second)
		})

		t.Run("takeover by kubectl gray set --image", func(t *testing.T) {
			t.Parallel()
			e := newAlongsideEnv(t, c, "plugin")
			e.do(createDeployment(testutil.Deployment("web", testutil.WithImage("nginx:1.25"), testutil.WithReplicas(10))))
			waitRolledOut(t, e.client, e.ns, "web", 60*time.Second)
			out := alongsideKubectlGray(t, c, e.ns, "set", "web", "20", "--image", "app=nginx:1.26")
			if !strings.Contains(out, "taken over by kubectl gray (strategy "+alongsideSaved+" saved)") {
				t.Fatalf("kubectl gray set said %q, want the takeover reported", out)
			}
			d := e.expect("web", held)
			alongsideTakenOver(t, d, alongsideSaved)
			status := alongsideKubectlGray(t, c, e.ns, "status", "web")
			if !strings.Contains(status, "Mode:        alongside (--takeover=admission), taken over: paused on strategy Recreate until the rollout ends") {
				t.Fatalf("kubectl gray status does not show the takeover:\n%s", status)
			}
			alongsideKubectlGray(t, c, e.ns, "resume", "web", "--full")
			e.expect("web", done)
			alongsideReleased(t, e, "web")
		})

		t.Run("non-annotated deployment is left to the built-in controller", func(t *testing.T) {
			t.Parallel()
			e := newAlongsideEnv(t, c, "plain")
			e.do(createDeployment(testutil.Deployment("plain", testutil.WithImage("nginx:1.25"), testutil.WithReplicas(10))))
			e.startStable(testutil.GrayDeployment("web", 10, "20"))
			waitRolledOut(t, e.client, e.ns, "plain", 60*time.Second)
			e.do(setImage("plain", "nginx:1.26"))
			e.do(setImage("web", "nginx:1.26"))
			waitRolledOut(t, e.client, e.ns, "plain", 60*time.Second)
			e.expect("web", held)
			d, err := e.client.AppsV1().Deployments(e.ns).Get(context.Background(), "plain", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for k := range d.Annotations {
				if strings.HasPrefix(k, grayapi.Prefix) {
					t.Errorf("plain deployment got annotation %s", k)
				}
			}
			alongsideNoWritesBy(t, d.ManagedFields, "deployment plain")
			for _, rs := range ownedReplicaSets(t, e.client, d) {
				alongsideNoWritesBy(t, rs.ManagedFields, "replicaset "+rs.Name)
			}
			e.resume("web", true)
			e.expect("web", done)
			alongsideReleased(t, e, "web")
		})

		t.Run("guard rejects unpausing, a strategy set is saved for the release", func(t *testing.T) {
			t.Parallel()
			e := newAlongsideEnv(t, c, "guard")
			e.startStable(testutil.GrayDeployment("web", 10, "20"))
			e.do(setImage("web", "nginx:1.26"))
			e.expect("web", held)
			err := mutateDeployment("web", func(d *appsv1.Deployment) { d.Spec.Paused = false })(context.Background(), e.client, e.ns)
			want := `run "kubectl gray resume web -n ` + e.ns + `" to continue it`
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("unpause as admin: %v, want rejection containing %q", err, want)
			}
			// A strategy set while taken over (an apply of a manifest that spells it out) is
			// the one restored at the end; the takeover stands.
			one, zero := intstr.FromInt32(1), intstr.FromInt32(0)
			e.do(mutateDeployment("web", func(d *appsv1.Deployment) {
				d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
					RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &one, MaxUnavailable: &zero}}
			}))
			d := e.expect("web", held)
			alongsideTakenOver(t, d, "RollingUpdate;maxSurge=1;maxUnavailable=0")
			e.resume("web", true)
			e.expect("web", done)
			eventually(t, 60*time.Second, "released to the strategy set while held", func() (bool, string) {
				d := e.get("web")
				ru := d.Spec.Strategy.RollingUpdate
				return !d.Spec.Paused && ru != nil && ru.MaxSurge.String() == "1" && ru.MaxUnavailable.String() == "0",
					fmt.Sprintf("paused %t strategy %+v", d.Spec.Paused, d.Spec.Strategy)
			})
		})

		t.Run("annotation removed mid-rollout releases it", func(t *testing.T) {
			t.Parallel()
			e := newAlongsideEnv(t, c, "removed")
			e.startStable(testutil.GrayDeployment("web", 10, "20"))
			e.do(setImage("web", "nginx:1.26"))
			e.expect("web", held)
			e.do(removeAnnotation("web", grayapi.PercentAnnotation))
			alongsideReleased(t, e, "web")
			e.expect("web", grayState{newSpec: 10})
			waitRolledOut(t, e.client, e.ns, "web", 60*time.Second)
		})
	})

	// Not in parallel: it stops the controller all scenarios share.
	t.Run("controller killed mid-rollout and policies deleted", func(t *testing.T) {
		e := newAlongsideEnv(t, c, "killed")
		e.startStable(testutil.GrayDeployment("web", 10, "20"))
		e.do(setImage("web", "nginx:1.26"))
		e.expect("web", held)
		if err := c.StopComponent(grayControllerName, 10*time.Second); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("kubectl", "--kubeconfig="+c.Kubeconfig, "delete", "-f", "-")
		cmd.Stdin = strings.NewReader(strings.Join(alongsidePolicies(docs), "\n---\n"))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("kubectl delete policies: %v\n%s", err, out)
		}
		e.resume("web", true)
		// Nobody runs the rollout now; the built-in controller must not either.
		consistently(5*time.Second, 500*time.Millisecond, func() {
			s, d, msg := e.observed("web")
			if s != held {
				t.Fatalf("without gray-controller the Deployment moved: %s", msg)
			}
			alongsideTakenOver(t, d, alongsideSaved)
		})
		// Without the takeover policy, --takeover=admission must not start: nothing would take
		// the next new template over before the built-in controller rolls it out.
		wantRefusedToStart(t, c, "refusing to start in --mode=alongside --takeover=admission: "+
			"MutatingAdmissionPolicy kubegray-takeover and MutatingAdmissionPolicyBinding kubegray-takeover not found", "manifests/alongside-eager")
		applyManifests(t, c, alongsidePolicies(docs))
		startAlongsideController(t, c)
		e.expect("web", done)
		alongsideReleased(t, e, "web")
		waitRolledOut(t, e.client, e.ns, "web", 60*time.Second)
	})
}

// wantRefusedToStart runs gray-controller --mode=alongside (admission takeover) as its
// ServiceAccount and wants it to exit with an error saying each of want.
func wantRefusedToStart(t *testing.T, c *cluster.Cluster, want ...string) {
	t.Helper()
	wantRefusedToStartWith(t, c, nil, want...)
}

// wantRefusedToStartWith is wantRefusedToStart with more flags.
func wantRefusedToStartWith(t *testing.T, c *cluster.Cluster, args []string, want ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, ourBinary(t, "gray-controller"), append([]string{"--mode=alongside", "--leader-elect=false",
		"--kubeconfig=" + serviceAccountKubeconfig(t, c), "--metrics-bind-address=0", "--health-probe-bind-address=0"}, args...)...)
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil || err == nil {
		t.Fatalf("gray-controller did not refuse to start (err %v, context %v):\n%s", err, ctx.Err(), out)
	}
	for _, w := range want {
		if !strings.Contains(string(out), w) {
			t.Fatalf("gray-controller refused to start without saying %q:\n%s", w, out)
		}
	}
}

// TestAlongsideEager is alongside mode as manifests/alongside-eager installs it
// (for clusters without MutatingAdmissionPolicy, before Kubernetes 1.36):
// --takeover=eager takes a Deployment over as soon as it is annotated, and a
// plain image change then holds.
func TestAlongsideEager(t *testing.T) {
	c := cluster.StartForTest(t, cluster.Options{})
	applyManifests(t, c, overlayManifests(t, "alongside-eager"))
	startAlongsideController(t, c, "--takeover=eager")

	e := newAlongsideEnv(t, c, "eager")
	// Without the takeover policy nothing takes a Deployment over as it is created.
	err := createDeployment(testutil.GrayDeployment("web", 10, "20"))(context.Background(), e.client, e.ns)
	if err == nil || !strings.Contains(err.Error(), "create it without kubegray.io/percent and annotate it afterwards") {
		t.Fatalf("creating an annotated Deployment: %v, want the guard's refusal naming the two ways", err)
	}
	e.do(createDeployment(testutil.Deployment("web", testutil.WithReplicas(10))))
	waitRolledOut(t, e.client, e.ns, "web", 60*time.Second)
	e.do(setPercent("web", "20"))
	eventually(t, 60*time.Second, "eager takeover", func() (bool, string) {
		d, err := e.client.AppsV1().Deployments(e.ns).Get(context.Background(), "web", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return d.Annotations[grayapi.StrategyAnnotation] == alongsideSaved && d.Spec.Paused, fmt.Sprintf("annotations %v paused %t", d.Annotations, d.Spec.Paused)
	})
	e.expect("web", grayState{phase: grayapi.PhaseComplete, newSpec: 10, paused: true})
	e.do(setImage("web", "nginx:1.26"))
	e.expect("web", grayState{phase: grayapi.PhaseHeld, newSpec: 2, oldTotal: 8, paused: true})
	e.resume("web", true)
	// Complete, and still taken over while annotated.
	d := e.expect("web", grayState{phase: grayapi.PhaseComplete, newSpec: 10, paused: true})
	alongsideTakenOver(t, d, alongsideSaved)
	// The user is told which takeover path is in force.
	if out := alongsideKubectlGray(t, c, e.ns, "status", "web"); !strings.Contains(out, "alongside (--takeover=eager), taken over while annotated") {
		t.Fatalf("kubectl gray status does not name the eager takeover:\n%s", out)
	}
	e.do(removeAnnotation("web", grayapi.PercentAnnotation))
	alongsideReleased(t, e, "web")
	waitRolledOut(t, e.client, e.ns, "web", 60*time.Second)
}

// alongsideNoWritesBy fails if gray-controller's field manager wrote obj.
func alongsideNoWritesBy(t *testing.T, fields []metav1.ManagedFieldsEntry, what string) {
	t.Helper()
	for _, f := range fields {
		if f.Manager == grayControllerName {
			t.Errorf("%s was written by %s (%s %s)", what, f.Manager, f.Operation, f.Subresource)
		}
	}
}
