// Package cluster starts and stops a real Kubernetes control plane (etcd,
// kube-apiserver, kube-controller-manager, kube-scheduler and kwok fake nodes)
// from binaries built by test/hack/build-controlplane.sh. Everything listens on
// 127.0.0.1 on ports chosen at start, so several clusters can run at once.
package cluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// WithoutDeploymentController is the controller list that disables the
// built-in deployment controller and keeps every other default controller.
const WithoutDeploymentController = "*,-deployment-controller"

// Options configure a control plane.
type Options struct {
	// Controllers is kube-controller-manager's --controllers value; "" means "*".
	Controllers string
	// Nodes is the number of kwok fake nodes; 0 means 2.
	Nodes int
	// Dir is where certificates, data and logs go; "" means a new temp folder,
	// removed by Stop.
	Dir string
	// Audit makes kube-apiserver log every write to Deployments and
	// ReplicaSets (at Metadata level) to AuditLog, for counting API writes.
	Audit bool
	// AuditReads, with Audit, logs reads (get, list, watch) too, of every
	// resource, and every write but the pod, node, lease and events.k8s.io
	// writes that the scheduler and kwok make in bulk: what a controller's
	// requests of any kind cost, at the price of a log several times larger.
	AuditReads bool
	// PodsPerNode is the pod capacity of each kwok node; 0 means 250.
	PodsPerNode int
	// ClientQPS, when set, is kube-controller-manager's and kube-scheduler's --kube-api-qps
	// (with a burst of 1.5 times it) instead of their defaults (20 and 50): with tens of
	// thousands of pods their clients would otherwise set the pace of creating and binding them.
	ClientQPS int
}

// ClientRateFlags are the --kube-api-qps and --kube-api-burst (1.5 times qps) that
// kube-controller-manager, kube-scheduler and gray-controller all take.
func ClientRateFlags(qps int) []string {
	return []string{"--kube-api-qps=" + strconv.Itoa(qps), "--kube-api-burst=" + strconv.Itoa(qps*3/2)}
}

// Cluster is a running control plane.
type Cluster struct {
	Dir        string
	Kubeconfig string
	Config     *rest.Config
	Client     kubernetes.Interface

	ownsDir  bool
	procs    []*Process
	stopped  []*Process // stopped early by StopComponent; kept for their logs
	kubelets []*Kubelet // stand-in kubelets (kubelet.go), stopped before the processes
	// controllerManager starts kube-controller-manager as process name with --controllers
	// controllers (RestartControllerManager); nil for a cluster adopted from a state file.
	controllerManager func(ctx context.Context, name, controllers string) error
}

// RestartControllerManager stops kube-controller-manager and starts it again with --controllers
// controllers, as an operator does to turn the built-in deployment controller off for instead
// mode. Each run is a process of its own name (kube-controller-manager, then -2, -3, ...), so
// that every run keeps its log.
func (c *Cluster) RestartControllerManager(ctx context.Context, controllers string) error {
	if c.controllerManager == nil {
		return errors.New("restart kube-controller-manager: not started by this process")
	}
	runs := 1
	for _, p := range c.stopped {
		if p.name == "kube-controller-manager" || strings.HasPrefix(p.name, "kube-controller-manager-") {
			runs++
		}
	}
	running := "kube-controller-manager"
	if runs > 1 {
		running += "-" + strconv.Itoa(runs)
	}
	if err := c.StopComponent(running, 10*time.Second); err != nil {
		return err
	}
	return c.controllerManager(ctx, "kube-controller-manager-"+strconv.Itoa(runs+1), controllers)
}

// Start builds (or reuses) the binaries, starts every component in order,
// waits for each to be healthy, and registers the fake nodes.
func Start(ctx context.Context, opts Options) (_ *Cluster, err error) {
	if opts.Controllers == "" {
		opts.Controllers = "*"
	}
	if opts.Nodes == 0 {
		opts.Nodes = 2
	}
	if opts.PodsPerNode == 0 {
		opts.PodsPerNode = 250
	}
	cache, err := controlPlaneCache()
	if err != nil {
		return nil, err
	}
	c := &Cluster{Dir: opts.Dir}
	if c.Dir == "" {
		if c.Dir, err = os.MkdirTemp("", "kubegray-cluster-"); err != nil {
			return nil, err
		}
		c.ownsDir = true
	}
	defer func() {
		if err != nil {
			err = fmt.Errorf("%w\n%s", err, c.LogTails(30))
			_ = c.Stop()
		}
	}()

	ports, err := FreePorts(7)
	if err != nil {
		return nil, err
	}
	etcdClient, etcdPeer, apiPort, kcmPort, schedPort, kwokPort, etcdMetrics := ports[0], ports[1], ports[2], ports[3], ports[4], ports[5], ports[6]

	p, err := generatePKI(filepath.Join(c.Dir, "pki"))
	if err != nil {
		return nil, err
	}
	apiURL := "https://127.0.0.1:" + strconv.Itoa(apiPort)
	c.Kubeconfig = filepath.Join(c.Dir, "admin.kubeconfig")
	if err := writeKubeconfig(c.Kubeconfig, apiURL, p); err != nil {
		return nil, err
	}
	if c.Config, err = clientcmd.BuildConfigFromFlags("", c.Kubeconfig); err != nil {
		return nil, err
	}
	c.Config.QPS, c.Config.Burst = 100, 200
	if c.Client, err = kubernetes.NewForConfig(c.Config); err != nil {
		return nil, err
	}
	bin := func(name string) string { return filepath.Join(cache, "bin", name) }
	local := func(port int) string { return "127.0.0.1:" + strconv.Itoa(port) }

	etcdURL := "http://" + local(etcdClient)
	if err := c.start(ctx, "etcd", bin("etcd"), etcdURL+"/health", nil,
		"--name=gray", "--data-dir="+filepath.Join(c.Dir, "etcd"),
		"--listen-client-urls="+etcdURL, "--advertise-client-urls="+etcdURL,
		"--listen-peer-urls=http://"+local(etcdPeer), "--initial-advertise-peer-urls=http://"+local(etcdPeer),
		"--initial-cluster=gray=http://"+local(etcdPeer), "--initial-cluster-state=new",
		"--listen-metrics-urls=http://"+local(etcdMetrics),
		"--unsafe-no-fsync=true", "--quota-backend-bytes=2147483648", "--log-level=warn",
	); err != nil {
		return nil, err
	}

	adminTLS, err := tls.X509KeyPair(p.adminCertPEM, p.adminKeyPEM)
	if err != nil {
		return nil, err
	}
	apiArgs := []string{"--etcd-servers=" + etcdURL}
	if opts.Audit {
		policy := filepath.Join(c.Dir, "audit-policy.yaml")
		content := auditPolicy
		if opts.AuditReads {
			content = auditReadsPolicy
		}
		if err := os.WriteFile(policy, []byte(content), 0o600); err != nil {
			return nil, err
		}
		// Readers read audit.log alone: no rotation (kube-apiserver's default rotates it at 100 MB,
		// which a bench at 20,000 pods passes, and the counts then miss the rotated part).
		apiArgs = append(apiArgs, "--audit-policy-file="+policy, "--audit-log-path="+c.AuditLog(),
			"--audit-log-format=json", "--audit-log-mode=blocking", "--audit-log-maxsize=0")
	}
	if err := c.start(ctx, "kube-apiserver", bin("kube-apiserver"), apiURL+"/readyz", &adminTLS,
		append(apiArgs,
			"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", "--secure-port="+strconv.Itoa(apiPort),
			"--tls-cert-file="+p.servingCert, "--tls-private-key-file="+p.servingKey,
			"--client-ca-file="+p.caCert,
			"--service-account-key-file="+p.saPublicKey, "--service-account-signing-key-file="+p.saPrivateKey,
			"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
			"--service-cluster-ip-range=10.96.0.0/16",
			"--authorization-mode=Node,RBAC",
			"--cert-dir="+filepath.Join(c.Dir, "apiserver-certs"),
			// A loopback advertise address is refused by the endpoint reconciler.
			"--endpoint-reconciler-type=none",
			"--profiling=false",
		)...); err != nil {
		return nil, err
	}

	var qps []string
	if opts.ClientQPS > 0 {
		qps = ClientRateFlags(opts.ClientQPS)
	}
	c.controllerManager = func(ctx context.Context, name, controllers string) error {
		return c.start(ctx, name, bin("kube-controller-manager"),
			"https://"+local(kcmPort)+"/healthz", nil, append(slices.Clone(qps),
				"--kubeconfig="+c.Kubeconfig,
				"--bind-address=127.0.0.1", "--secure-port="+strconv.Itoa(kcmPort),
				"--leader-elect=false",
				"--controllers="+controllers,
				"--use-service-account-credentials=false",
				"--service-account-private-key-file="+p.saPrivateKey,
				"--root-ca-file="+p.caCert,
				"--cluster-signing-cert-file="+p.caCert, "--cluster-signing-key-file="+p.caKey,
				"--cert-dir="+filepath.Join(c.Dir, "kcm-certs"),
			)...)
	}
	if err := c.controllerManager(ctx, "kube-controller-manager", opts.Controllers); err != nil {
		return nil, err
	}

	if err := c.start(ctx, "kube-scheduler", bin("kube-scheduler"), "https://"+local(schedPort)+"/readyz", nil, append(qps,
		"--kubeconfig="+c.Kubeconfig,
		"--bind-address=127.0.0.1", "--secure-port="+strconv.Itoa(schedPort),
		"--leader-elect=false", "--cert-dir="+filepath.Join(c.Dir, "sched-certs"),
	)...); err != nil {
		return nil, err
	}

	kwokConfig, err := writeKwokConfig(c.Dir, filepath.Join(cache, "kwok-stages.yaml"), kwokPort)
	if err != nil {
		return nil, err
	}
	if err := c.start(ctx, "kwok", bin("kwok"), "http://"+local(kwokPort)+"/healthz", nil,
		"--config="+kwokConfig, "--kubeconfig="+c.Kubeconfig,
	); err != nil {
		return nil, err
	}

	if err := c.createNodes(ctx, opts.Nodes, opts.PodsPerNode); err != nil {
		return nil, err
	}
	if err := c.writeState(); err != nil {
		return nil, err
	}
	return c, nil
}

// StartComponent starts another process beside the control plane (our
// controller, say): it is stopped by Stop, its log is in LogTails, and Start
// waits until healthURL answers 200 ("" skips the wait).
func (c *Cluster) StartComponent(ctx context.Context, name, binary, healthURL string, args ...string) error {
	if healthURL == "" {
		p, err := StartProcess(c.Dir, name, binary, args...)
		if err != nil {
			return err
		}
		c.procs = append(c.procs, p)
		return nil
	}
	return c.start(ctx, name, binary, healthURL, nil, args...)
}

// StopComponent stops the named process by its pid (SIGTERM, then SIGKILL
// after grace) and forgets it; its log file stays for LogTails.
func (c *Cluster) StopComponent(name string, grace time.Duration) error {
	for i, p := range c.procs {
		if p.name == name {
			err := p.Stop(grace)
			c.stopped = append(c.stopped, p)
			c.procs = append(c.procs[:i], c.procs[i+1:]...)
			return err
		}
	}
	return fmt.Errorf("no component named %q", name)
}

// KillComponent sends SIGKILL to the named process by its pid, with no
// SIGTERM first, so it gets no chance to clean up (a leader cannot release
// its Lease); it waits until the process is gone and forgets it. Its log
// stays for LogTails.
func (c *Cluster) KillComponent(name string) error {
	for i, p := range c.procs {
		if p.name == name {
			err := p.kill()
			c.stopped = append(c.stopped, p)
			c.procs = append(c.procs[:i], c.procs[i+1:]...)
			return err
		}
	}
	return fmt.Errorf("no component named %q", name)
}

// ComponentAlive reports whether the named process is still running.
func (c *Cluster) ComponentAlive(name string) bool {
	for _, p := range c.procs {
		if p.name == name {
			return p.Alive()
		}
	}
	return false
}

// start launches one component and waits until healthURL answers 200.
func (c *Cluster) start(ctx context.Context, name, binary, healthURL string, clientCert *tls.Certificate, args ...string) error {
	p, err := StartProcess(c.Dir, name, binary, args...)
	if err != nil {
		return err
	}
	c.procs = append(c.procs, p)
	tlsConfig := &tls.Config{InsecureSkipVerify: true} //nolint:gosec // loopback health probe of our own test server
	if clientCert != nil {
		tlsConfig.Certificates = []tls.Certificate{*clientCert}
	}
	httpClient := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsConfig}}
	err = Poll(ctx, 90*time.Second, 50*time.Millisecond, func(ctx context.Context) (bool, string, error) {
		if !p.Alive() {
			return false, "", errors.New("exited during start-up")
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, healthURL, nil)
		resp, err := httpClient.Do(req)
		if err != nil {
			return false, err.Error(), nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, resp.Status, nil
	})
	if err != nil {
		return fmt.Errorf("%s (health %s): %w", name, healthURL, err)
	}
	return nil
}

func (c *Cluster) createNodes(ctx context.Context, n, pods int) error {
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("kwok-node-%d", i)
		capacity := corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("64"),
			corev1.ResourceMemory: resource.MustParse("256Gi"),
			corev1.ResourcePods:   *resource.NewQuantity(int64(pods), resource.DecimalSI),
		}
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{
				Name:        name,
				Annotations: map[string]string{"node.alpha.kubernetes.io/ttl": "0", "kwok.x-k8s.io/node": "fake"},
				Labels: map[string]string{"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
					"kubernetes.io/arch": "amd64", "type": "kwok"},
			},
			Status: corev1.NodeStatus{Allocatable: capacity, Capacity: capacity},
		}
		if _, err := c.Client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create node %s: %w", name, err)
		}
	}
	// Pods in a namespace without its default ServiceAccount are refused, so the wait is also
	// for the serviceaccount controller to have made one.
	err := Poll(ctx, 60*time.Second, 50*time.Millisecond, func(ctx context.Context) (bool, string, error) {
		nodes, err := c.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		ready := 0
		if err == nil {
			for _, node := range nodes.Items {
				for _, cond := range node.Status.Conditions {
					if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
						ready++
					}
				}
			}
		}
		_, saErr := c.Client.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		return ready == n && saErr == nil, fmt.Sprintf("%d of %d nodes ready (serviceaccount: %v)", ready, n, saErr), nil
	})
	if err != nil {
		return fmt.Errorf("waiting for %d kwok nodes: %w", n, err)
	}
	return nil
}

// Stop stops every process the cluster started, newest first, by pid, and
// removes the cluster folder if Start created it.
func (c *Cluster) Stop() error {
	for _, k := range c.kubelets {
		k.Stop()
	}
	var errs []error
	for i := len(c.procs) - 1; i >= 0; i-- {
		if err := c.procs[i].Stop(5 * time.Second); err != nil {
			errs = append(errs, err)
		}
	}
	c.procs = nil
	if c.ownsDir && len(errs) == 0 {
		errs = append(errs, os.RemoveAll(c.Dir))
	}
	return errors.Join(errs...)
}

// LogTails returns the last n lines of every component's log, for failed tests.
func (c *Cluster) LogTails(n int) string {
	var b strings.Builder
	for _, p := range append(append([]*Process{}, c.stopped...), c.procs...) {
		fmt.Fprintf(&b, "----- %s (last %d lines of %s) -----\n%s\n", p.name, n, p.logPath, p.Tail(n))
	}
	for _, k := range c.kubelets {
		b.WriteString(k.logTails(n))
	}
	return b.String()
}

// Processes returns name→pid of the running components.
func (c *Cluster) Processes() map[string]int {
	out := map[string]int{}
	for _, p := range c.procs {
		out[p.name] = p.pid
	}
	return out
}

// AuditLog is the path of kube-apiserver's audit log (written when Options.Audit).
func (c *Cluster) AuditLog() string { return filepath.Join(c.Dir, "audit.log") }

// auditPolicy records who wrote Deployments and ReplicaSets, and nothing else.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
  verbs: ["create", "update", "patch", "delete"]
  resources:
  - group: apps
    resources: ["deployments", "deployments/status", "deployments/scale", "replicasets", "replicasets/status"]
- level: None
`

// auditReadsPolicy (Options.AuditReads) records every request at Metadata
// level, reads included, except the bulk writes of the components that stand
// in for kubelets and the scheduler (pods, bindings, nodes, node leases,
// events.k8s.io Events), which no Deployment controller makes and which would
// otherwise make up most of the log. Core Events stay: both Deployment
// controllers record theirs through that API.
const auditReadsPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: None
  verbs: ["create", "update", "patch", "delete", "deletecollection"]
  resources:
  - group: ""
    resources: ["pods", "pods/status", "pods/binding", "nodes", "nodes/status"]
  - group: coordination.k8s.io
    resources: ["leases"]
  - group: events.k8s.io
- level: None
  nonResourceURLs: ["/healthz*", "/readyz*", "/livez*"]
- level: Metadata
`

const stateFile = "cluster.state"

// SaveState records the running processes (including components started
// since Start) so that Attach, and so `make cluster-down`, can stop them.
func (c *Cluster) SaveState() error { return c.writeState() }

func (c *Cluster) writeState() error {
	var lines []string
	for _, p := range c.procs {
		lines = append(lines, p.stateLine())
	}
	return os.WriteFile(filepath.Join(c.Dir, stateFile), []byte(strings.Join(lines, "\n")+"\n"), 0o600)
}

// Attach returns the cluster recorded in dir by an earlier Start, so another
// command (make cluster-down) can stop it by the pids it recorded.
func Attach(dir string) (*Cluster, error) {
	data, err := os.ReadFile(filepath.Join(dir, stateFile))
	if err != nil {
		return nil, fmt.Errorf("no cluster recorded in %s: %w", dir, err)
	}
	c := &Cluster{Dir: dir, Kubeconfig: filepath.Join(dir, "admin.kubeconfig")}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		p, err := parseStateLine(line)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Join(dir, stateFile), err)
		}
		c.procs = append(c.procs, p)
	}
	return c, nil
}

func writeKubeconfig(path, server string, p *pki) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["gray"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: p.caPEM}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: p.adminCertPEM, ClientKeyData: p.adminKeyPEM}
	cfg.Contexts["gray"] = &clientcmdapi.Context{Cluster: "gray", AuthInfo: "admin"}
	cfg.CurrentContext = "gray"
	return clientcmd.WriteToFile(*cfg, path)
}

// writeKwokConfig writes kwok's configuration: our options followed by the
// stage set cached at build time, patched by patchStages (stages.go).
func writeKwokConfig(dir, stagesPath string, port int) (string, error) {
	stages, err := os.ReadFile(stagesPath)
	if err != nil {
		return "", fmt.Errorf("read kwok stages (run test/hack/build-controlplane.sh): %w", err)
	}
	docs, err := patchStages(strings.Split(string(stages), "\n---\n"))
	if err != nil {
		return "", fmt.Errorf("kwok stages in %s: %w", stagesPath, err)
	}
	header := `apiVersion: config.kwok.x-k8s.io/v1alpha1
kind: KwokConfiguration
options:
  cidr: 10.244.0.0/16
  nodeIP: 127.0.0.1
  manageAllNodes: false
  manageNodesWithAnnotationSelector: 'kwok.x-k8s.io/node=fake'
  manageNodesWithLabelSelector: ''
  manageSingleNode: ''
  nodeLeaseDurationSeconds: 40
  enableProfilingHandler: false
  enableDebuggingHandlers: false
  serverAddress: 127.0.0.1:` + strconv.Itoa(port) + `
  nodeLeaseParallelism: 4
  podPlayStageParallelism: 4
  nodePlayStageParallelism: 4
  podsOnNodeSyncParallelism: 4
  enablePodsOnNodeSyncListPager: false
  enablePodsOnNodeSyncStreamWatch: true
`
	path := filepath.Join(dir, "kwok.yaml")
	content := header + strings.Join(docs, "\n---\n")
	if !strings.HasPrefix(strings.TrimSpace(string(stages)), "---") {
		content = header + "---\n" + strings.Join(docs, "\n---\n")
	}
	return path, os.WriteFile(path, []byte(content), 0o600)
}

// controlPlaneCache returns the folder holding bin/ and kwok-stages.yaml:
// $KUBEGRAY_CONTROLPLANE when set (the Makefile sets it), otherwise whatever
// the build script prints after building or reusing the binaries.
func controlPlaneCache() (string, error) {
	if dir := os.Getenv("KUBEGRAY_CONTROLPLANE"); dir != "" {
		return dir, nil
	}
	return RunBuildScript("build-controlplane.sh")
}

// RunBuildScript runs test/hack/<name>, which builds (or reuses) binaries in a cache folder and
// prints that folder on its last line, and returns the folder. The script is looked for from the
// working directory up (go test runs a test in its package's folder, test/e2e say): a source
// path from runtime.Caller is module-relative under -trimpath, which make test builds with.
func RunBuildScript(name string) (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	script := filepath.Join(dir, "hack", name)
	for {
		if _, err := os.Stat(script); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no hack/%s in the working directory or above it", name)
		}
		dir = parent
		script = filepath.Join(dir, "hack", name)
	}
	out, err := exec.Command(script).Output()
	if err != nil {
		return "", fmt.Errorf("%s: %w", script, err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1], nil
}

// FreePorts asks the kernel for n free loopback ports, distinct because all n are held open
// until the last is found (one at a time, the kernel may hand out a port just closed again).
func FreePorts(n int) ([]int, error) {
	var listeners []net.Listener
	defer func() {
		for _, l := range listeners {
			l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		listeners = append(listeners, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// FreePort returns a free loopback port for a component started beside the cluster; a component
// that needs two takes FreePorts(2).
func FreePort() (int, error) {
	ports, err := FreePorts(1)
	if err != nil {
		return 0, err
	}
	return ports[0], nil
}
