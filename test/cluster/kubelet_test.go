package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
)

// kubeletAppEnv, in a pod's env, makes the test binary, which is the image of
// TestKubelet's pods, run TestKubeletApp's server rather than tests.
const kubeletAppEnv = "KUBEGRAY_KUBELET_TEST_APP"

// TestKubeletApp is the program of TestKubelet's pods, not a test: a server on
// its --listen address that answers /readyz (200, or 503 once told by
// /readiness?ready=false), /info (its args and env, as JSON), and exits 0 on
// SIGTERM.
func TestKubeletApp(t *testing.T) {
	if os.Getenv(kubeletAppEnv) == "" {
		t.Skip("the program that TestKubelet's pods run")
	}
	os.Exit(runKubeletApp(flag.Args()))
}

// kubeletAppInfo is what the app's /info answers.
type kubeletAppInfo struct {
	Args []string
	Env  []string
}

func runKubeletApp(args []string) int {
	var listen string
	for _, arg := range args {
		if value, ok := strings.CutPrefix(arg, "--listen="); ok {
			listen = value
		}
	}
	var unready atomic.Bool
	mux := http.NewServeMux()
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if unready.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})
	mux.HandleFunc("/readiness", func(_ http.ResponseWriter, r *http.Request) {
		unready.Store(r.URL.Query().Get("ready") == "false")
	})
	mux.HandleFunc("/info", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(kubeletAppInfo{Args: args, Env: os.Environ()})
	})
	terminated := make(chan os.Signal, 1)
	signal.Notify(terminated, syscall.SIGTERM)
	l, err := net.Listen("tcp", listen)
	if err != nil {
		fmt.Println(err)
		return 1
	}
	fmt.Println("listening on", l.Addr())
	go func() { _ = http.Serve(l, mux) }()
	<-terminated
	fmt.Println("SIGTERM: exiting")
	return 0
}

// TestKubelet runs pods on a stand-in kubelet: a server that becomes ready
// through its readiness probe on a rewritten port, with its args and env as a
// kubelet would give them, and leaves readiness and comes back; a crashing
// container restarted into CrashLoopBackOff; an unknown image in ErrImagePull;
// a pod of two containers refused; a graceful and a forced deletion that end
// their processes; and a Deployment whose pods the scheduler places on the
// node and whose rollout the kubelet's reports let complete.
func TestKubelet(t *testing.T) {
	app, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	c := StartForTest(t, Options{})
	ctx := t.Context()
	const node = "stand-in"
	k, err := c.StartKubelet(ctx, KubeletOptions{Node: node,
		Images: map[string]string{"app:v1": app, "app:v2": app, "sh": "/bin/sh"}})
	if err != nil {
		t.Fatal(err)
	}
	pods := c.Client.CoreV1().Pods("default")
	onNode := func(name string, spec corev1.PodSpec) *corev1.Pod {
		spec.NodeName = node
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}
	}
	shell := func(names ...string) corev1.PodSpec {
		var spec corev1.PodSpec
		for _, name := range names {
			spec.Containers = append(spec.Containers, corev1.Container{Name: name, Image: "sh",
				Command: []string{"sh", "-c", "echo running; sleep 600"}})
		}
		return spec
	}
	crash := shell("sh")
	crash.Containers[0].Command = []string{"sh", "-c", "echo crashing; exit 3"}
	unpullable := shell("sh")
	unpullable.Containers[0].Image = "nope:1"
	for _, pod := range []*corev1.Pod{onNode("web", kubeletAppSpec("app:v1")), onNode("crash", crash),
		onNode("unpullable", unpullable), onNode("two", shell("one", "two")), onNode("sleeper", shell("sh"))} {
		if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	deployment := kubeletAppDeployment(node)
	if _, err := c.Client.AppsV1().Deployments("default").Create(ctx, deployment, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	web := waitPod(t, c, "web", "running and ready", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning && podReady(p) })
	port, ok := k.PodPort("default", "web", 8080)
	if !ok {
		t.Fatal("no host port for web's port 8080")
	}
	checkAppInfo(t, fmt.Sprintf("http://127.0.0.1:%d", port), port)
	setAppReadiness(t, port, false)
	waitPod(t, c, "web", "not ready after failed probes", func(p *corev1.Pod) bool { return !podReady(p) && p.Status.Phase == corev1.PodRunning })
	setAppReadiness(t, port, true)
	waitPod(t, c, "web", "ready again", podReady)

	waitPod(t, c, "crash", "CrashLoopBackOff after a restart", func(p *corev1.Pod) bool {
		s := p.Status.ContainerStatuses
		return len(s) == 1 && s[0].RestartCount >= 2 && s[0].State.Waiting != nil && s[0].State.Waiting.Reason == "CrashLoopBackOff" &&
			strings.HasPrefix(s[0].State.Waiting.Message, "back-off 5s restarting failed container=sh pod=crash_default(") &&
			s[0].LastTerminationState.Terminated != nil && s[0].LastTerminationState.Terminated.ExitCode == 3 &&
			s[0].LastTerminationState.Terminated.Reason == "Error" && !podReady(p) && p.Status.Phase == corev1.PodRunning
	})
	if log, err := os.ReadFile(k.Log("default", "crash")); err != nil || !strings.Contains(string(log), "=== run 2 (restart count 1) ===\ncrashing\n") {
		t.Errorf("crash's log (%v):\n%s", err, log)
	}
	idle := waitPod(t, c, "unpullable", "ErrImagePull", func(p *corev1.Pod) bool {
		s := p.Status.ContainerStatuses
		return p.Status.Phase == corev1.PodPending && len(s) == 1 && s[0].State.Waiting != nil && s[0].State.Waiting.Reason == "ErrImagePull"
	})
	waitPod(t, c, "two", "refused", func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodFailed && strings.Contains(p.Status.Message, "pods of one container; this one has 2")
	})

	sleeper := waitPod(t, c, "sleeper", "running", func(p *corev1.Pod) bool { return podReady(p) })
	if err := pods.Delete(ctx, "sleeper", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	waitProcessGroupGone(t, sleeper)
	if err := pods.Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPodGone(t, c, "web")
	waitProcessGroupGone(t, web)
	if log, err := os.ReadFile(k.Log("default", "web")); err != nil || !strings.HasSuffix(string(log), "SIGTERM: exiting\n") {
		t.Errorf("web's log does not end with its graceful exit (%v):\n%s", err, log)
	}

	waitRolledOut(t, c, deployment.Name, "app:v1")
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d, err := c.Client.AppsV1().Deployments("default").Get(ctx, deployment.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		d.Spec.Template.Spec.Containers[0].Image = "app:v2"
		_, err = c.Client.AppsV1().Deployments("default").Update(ctx, d, metav1.UpdateOptions{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	waitRolledOut(t, c, deployment.Name, "app:v2")

	if now, err := pods.Get(ctx, "unpullable", metav1.GetOptions{}); err != nil || now.ResourceVersion != idle.ResourceVersion {
		t.Errorf("the status of a pod that did not change was written again (%v): resource version %s, then %s", err, idle.ResourceVersion, now.ResourceVersion)
	}
	checkNode(t, c, node)
}

// kubeletAppSpec runs TestKubeletApp, ready on its /readyz.
func kubeletAppSpec(image string) corev1.PodSpec {
	fieldRef := func(path string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}
	}
	return corev1.PodSpec{
		TerminationGracePeriodSeconds: ptr.To[int64](10),
		Containers: []corev1.Container{{
			Name: "app", Image: image,
			Command: []string{"app", "-test.run=^TestKubeletApp$", "--"},
			Args:    []string{"--listen=:8080", "--memory=$(MEMORY_LIMIT)", "$(POD_NAME)", "$$(POD_NAME)", "$(UNDEFINED)"},
			Env: []corev1.EnvVar{
				{Name: kubeletAppEnv, Value: "1"},
				{Name: "POD_NAME", ValueFrom: fieldRef("metadata.name")},
				{Name: "POD_IP", ValueFrom: fieldRef("status.podIP")},
				{Name: "MEMORY_LIMIT", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{
					Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}}},
				{Name: "GREETING", Value: "hello $(POD_NAME)"},
			},
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}},
			Ports:     []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
			ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
				HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromString("http")}}},
		}},
	}
}

// kubeletAppDeployment is a Deployment of two TestKubeletApp pods that the
// scheduler places on node, by its hostname label and a toleration of its taint.
func kubeletAppDeployment(node string) *appsv1.Deployment {
	labels := map[string]string{"app": "kubelet-app"}
	spec := kubeletAppSpec("app:v1")
	spec.NodeSelector = map[string]string{"kubernetes.io/hostname": node}
	spec.Tolerations = []corev1.Toleration{{Key: StandInKubeletTaint, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "kubelet-app", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec},
		},
	}
}

// checkAppInfo checks the args and env that web's process got: $(VAR)
// expanded, its listen address moved to its host port, and nothing of the
// test's env but PATH.
func checkAppInfo(t *testing.T, url string, port int) {
	t.Helper()
	resp, err := http.Get(url + "/info")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var info kubeletAppInfo
	if err := json.NewDecoder(resp.Body).Decode(&info); err != nil {
		t.Fatal(err)
	}
	wantArgs := []string{"--listen=127.0.0.1:" + strconv.Itoa(port), "--memory=64", "web", "$(POD_NAME)", "$(UNDEFINED)"}
	if !slices.Equal(info.Args, wantArgs) {
		t.Errorf("args %q, want %q", info.Args, wantArgs)
	}
	env := map[string]string{}
	for _, kv := range info.Env {
		name, value, _ := strings.Cut(kv, "=")
		env[name] = value
	}
	for name, want := range map[string]string{"PATH": os.Getenv("PATH"), kubeletAppEnv: "1", "POD_NAME": "web",
		"POD_IP": "127.0.0.1", "MEMORY_LIMIT": "64", "GREETING": "hello web"} {
		if env[name] != want {
			t.Errorf("env %s=%q, want %q", name, env[name], want)
		}
		delete(env, name)
	}
	config, err := clientcmd.LoadFromFile(env["KUBECONFIG"])
	if err != nil {
		t.Fatalf("the pod's KUBECONFIG: %v", err)
	}
	for name, auth := range config.AuthInfos {
		if auth.Impersonate != "system:serviceaccount:default:default" {
			t.Errorf("KUBECONFIG's user %s impersonates %q", name, auth.Impersonate)
		}
	}
	for _, name := range []string{"KUBECONFIG", "HOME", "TMPDIR"} {
		if stat, err := os.Stat(env[name]); err != nil || name != "KUBECONFIG" && !stat.IsDir() {
			t.Errorf("env %s=%q: %v", name, env[name], err)
		}
		delete(env, name)
	}
	if len(env) > 0 {
		t.Errorf("env the pod was not given: %v", env)
	}
}

// setAppReadiness makes the app on port answer its readiness probe with 200
// (ready) or 503.
func setAppReadiness(t *testing.T, port int, ready bool) {
	t.Helper()
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/readiness?ready=%t", port, ready))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// waitPod waits until the pod named name in default satisfies done, and returns it.
func waitPod(t *testing.T, c *Cluster, name, what string, done func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	err := Poll(t.Context(), 30*time.Second, 100*time.Millisecond, func(ctx context.Context) (bool, string, error) {
		var err error
		if pod, err = c.Client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{}); err != nil {
			return false, err.Error(), nil
		}
		return done(pod), summary(pod.Status), nil
	})
	if err != nil {
		t.Fatalf("pod %s, waiting until %s: %v", name, what, err)
	}
	return pod
}

func waitPodGone(t *testing.T, c *Cluster, name string) {
	t.Helper()
	err := Poll(t.Context(), 30*time.Second, 100*time.Millisecond, func(ctx context.Context) (bool, string, error) {
		pod, err := c.Client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, "", nil
		}
		if err != nil {
			return false, err.Error(), nil
		}
		return false, summary(pod.Status), nil
	})
	if err != nil {
		t.Fatalf("pod %s, waiting until it is gone: %v", name, err)
	}
}

// waitProcessGroupGone waits until nothing is left of the process group of
// the pod's container ("standin://<pid>").
func waitProcessGroupGone(t *testing.T, pod *corev1.Pod) {
	t.Helper()
	pid, err := strconv.Atoi(strings.TrimPrefix(pod.Status.ContainerStatuses[0].ContainerID, "standin://"))
	if err != nil {
		t.Fatal(err)
	}
	err = Poll(t.Context(), 10*time.Second, 50*time.Millisecond, func(context.Context) (bool, string, error) {
		err := syscall.Kill(-pid, 0)
		return errors.Is(err, syscall.ESRCH), fmt.Sprintf("process group %d: %v", pid, err), nil
	})
	if err != nil {
		t.Fatalf("pod %s's processes: %v", pod.Name, err)
	}
}

// waitRolledOut waits until the Deployment's pods are all of image, ready, on
// the stand-in node, and no others are left.
func waitRolledOut(t *testing.T, c *Cluster, name, image string) {
	t.Helper()
	err := Poll(t.Context(), 30*time.Second, 100*time.Millisecond, func(ctx context.Context) (bool, string, error) {
		d, err := c.Client.AppsV1().Deployments("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		pods, err := c.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=kubelet-app"})
		if err != nil {
			return false, err.Error(), nil
		}
		var states []string
		done := d.Status.ObservedGeneration == d.Generation && d.Status.UpdatedReplicas == 2 && d.Status.AvailableReplicas == 2 && len(pods.Items) == 2
		for _, p := range pods.Items {
			done = done && p.Spec.NodeName == "stand-in" && p.Spec.Containers[0].Image == image && podReady(&p)
			states = append(states, fmt.Sprintf("%s on %q: %s", p.Name, p.Spec.NodeName, summary(p.Status)))
		}
		return done, fmt.Sprintf("deployment %+v; pods %v", d.Status, states), nil
	})
	if err != nil {
		t.Fatalf("deployment %s, waiting for its rollout of %s: %v", name, image, err)
	}
}

// checkNode checks the stand-in node's Ready condition, taint and Lease.
func checkNode(t *testing.T, c *Cluster, name string) {
	t.Helper()
	node, err := c.Client.CoreV1().Nodes().Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, cond := range node.Status.Conditions {
		if cond.Type == corev1.NodeReady && (cond.Status != corev1.ConditionTrue || cond.Reason != "KubeletReady") {
			t.Errorf("node %s: %+v", name, cond)
		}
	}
	if len(node.Spec.Taints) != 1 || node.Spec.Taints[0].Key != StandInKubeletTaint {
		t.Errorf("node %s's taints: %+v", name, node.Spec.Taints)
	}
	lease, err := c.Client.CoordinationV1().Leases(nodeLeaseNamespace).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil || lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity != name {
		t.Errorf("node %s's lease (%v): %+v", name, err, lease)
	}
}

func TestExpandVars(t *testing.T) {
	values := map[string]string{"A": "x", "EMPTY": ""}
	for in, want := range map[string]string{
		"$(A)": "x", "a$(A)b$(A)": "axbx", "$$(A)": "$(A)", "$$$(A)": "$x", "$(B)": "$(B)", "$(EMPTY)": "",
		"$(A": "$(A", "$": "$", "$x": "$x", "100$": "100$", "$()": "$()",
	} {
		if got := expandVars(in, values); got != want {
			t.Errorf("expandVars(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRewriteListenAddress(t *testing.T) {
	hostPorts := map[int32]int{8081: 40001, 8443: 40002}
	for in, want := range map[string]string{
		"--health-probe-bind-address=:8081":   "--health-probe-bind-address=127.0.0.1:40001",
		"--metrics-bind-address=0.0.0.0:8443": "--metrics-bind-address=127.0.0.1:40002",
		"--listen=[::]:8081":                  "--listen=127.0.0.1:40001",
		":8443":                               "127.0.0.1:40002",
		"--listen=10.0.0.1:8081":              "--listen=10.0.0.1:8081",
		"--listen=localhost:8081":             "--listen=localhost:8081",
		"--listen=:9090":                      "--listen=:9090",
		"--port=8081":                         "--port=8081",
		"--server=http://:8081":               "--server=http://:8081",
	} {
		if got := rewriteListenAddress(in, hostPorts); got != want {
			t.Errorf("rewriteListenAddress(%q) = %q, want %q", in, got, want)
		}
	}
}
