package cluster

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

// StandInKubeletTaint is the key of the NoSchedule taint on a stand-in
// kubelet's Node. The scheduler would otherwise spread any Deployment's pods
// onto it (the default topology spreading favours an empty node), and a pod
// whose image the kubelet does not know waits there forever. A pod reaches
// the node by spec.nodeName, which skips the scheduler and its taints, or by
// tolerating this key (with a nodeSelector on kubernetes.io/hostname to pin it).
const StandInKubeletTaint = "kubegray.test/stand-in-kubelet"

// KubeletOptions configure a stand-in kubelet.
type KubeletOptions struct {
	// Node is the name of the Node that StartKubelet creates.
	Node string
	// Images maps a container image reference to the binary on this machine
	// that stands for it. A container whose image is not listed waits with
	// reason ErrImagePull, as one whose image cannot be pulled.
	Images map[string]string
}

// Kubelet is a stand-in kubelet: it runs the pods bound to one Node as
// processes on this machine, so that a test can run a real program (our
// gray-controller) as the pods of a Deployment and see them reported as a
// kubelet reports them.
//
// What it does, as a kubelet does:
//   - It registers the Node (Ready, 8 CPUs, 16Gi of memory, 110 pods, InternalIP
//     127.0.0.1, tainted StandInKubeletTaint:NoSchedule) and renews its Lease and
//     its Ready heartbeat every 10 s, so the node lifecycle controller never
//     marks it unreachable. kwok leaves it alone: it lacks kwok's annotation.
//   - It runs a pod's container as a process: the binary that Images names for
//     its image, with the container's command (but its first word, which the
//     binary stands for) and args, $(VAR) expanded from its env; the env of
//     values, of the fields a downward-API fieldRef names (metadata.name,
//     metadata.namespace, metadata.uid, spec.nodeName, spec.serviceAccountName,
//     status.podIP, status.hostIP) and of limits.memory and requests.memory,
//     plus PATH, HOME, TMPDIR (folders of the pod's own) and KUBECONFIG, a copy
//     of the cluster's admin kubeconfig impersonating the pod's ServiceAccount
//     (standing in for the token a kubelet mounts).
//   - Each pod gets ports of its own, as on a pod network: every container port
//     is given a free loopback port, and an argument that listens on it on every
//     address (":8081", "0.0.0.0:8443", "[::]:80") is rewritten to listen on
//     127.0.0.1 on that port instead. PodPort says which.
//   - It reports the pod's status (phase, IPs, start time, the PodScheduled,
//     Initialized, ContainersReady and Ready conditions, the container's state,
//     last state, readiness and restart count), writing only what changed.
//   - It runs an httpGet readiness probe every second, on purpose more often
//     than a kubelet's default of every 10 s (periodSeconds is not read), so
//     tests wait less; thresholds, timeout and initial delay are honoured.
//   - It restarts an exited container (restartPolicy Always) after a back-off
//     of 1 s, then 5 s, 10 s and 20 s at most, in CrashLoopBackOff meanwhile;
//     a kubelet's starts at 10 s and doubles up to 5 minutes. A pod of another
//     restart policy runs once and ends Succeeded or Failed.
//   - It stops a deleted pod's process (SIGTERM to its process group, SIGKILL
//     once the grace period is over), reports it terminated and deletes the pod
//     object, as a kubelet finishes a graceful deletion. A pod removed from the
//     API at once (a forced deletion) has its process killed.
//
// What it leaves out: volumes (the ServiceAccount token volume included: see
// KUBECONFIG above), image pulls, liveness and startup probes, probes other
// than httpGet, init containers and more than one container (such a pod is
// refused: Failed, with a message that says why), env from Secrets and
// ConfigMaps and envFrom (refused too), the Service env vars, resource limits
// and security contexts (the process runs as the test does, with no cgroup),
// and changes to a running pod's spec.
//
// Its own log is <cluster dir>/kubelet/kubelet-<node>.log, and each pod's
// output goes to Log(namespace, pod); LogTails includes both.
type Kubelet struct {
	cluster *Cluster
	node    string
	images  map[string]string
	dir     string // the kubelet folder of the cluster: logs, and pods/ for the pods' folders
	logPath string
	logFile *os.File
	log     *log.Logger
	nodeUID types.UID // for the Lease's owner reference

	cancel     context.CancelFunc
	informers  informers.SharedInformerFactory
	goroutines sync.WaitGroup // heartbeat, pod workers and their processes' waiters and probes
	stopOnce   sync.Once

	mu       sync.Mutex
	stopping bool                     // no new pod worker once set
	pods     map[types.UID]*podWorker // pods in the API bound to the node
	podLogs  map[string]bool          // log files of every pod run, for LogTails
}

// StartKubelet creates Node opts.Node, keeps it Ready and runs every pod bound
// to it as a process until ctx ends or Stop is called; the cluster's Stop
// stops it first.
func (c *Cluster) StartKubelet(ctx context.Context, opts KubeletOptions) (_ *Kubelet, err error) {
	if opts.Node == "" {
		return nil, errors.New("stand-in kubelet: KubeletOptions.Node is empty")
	}
	dir := filepath.Join(c.Dir, "kubelet")
	if err := os.MkdirAll(filepath.Join(dir, "pods"), 0o755); err != nil {
		return nil, err
	}
	logPath := filepath.Join(dir, "kubelet-"+opts.Node+".log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	k := &Kubelet{
		cluster: c, node: opts.Node, images: opts.Images, dir: dir,
		logPath: logPath, logFile: logFile, log: log.New(logFile, "", log.LstdFlags|log.Lmicroseconds),
		cancel: cancel, pods: map[types.UID]*podWorker{}, podLogs: map[string]bool{},
	}
	defer func() {
		if err != nil {
			k.Stop()
			err = fmt.Errorf("stand-in kubelet %s: %w", opts.Node, err)
		}
	}()
	if err := k.registerNode(ctx); err != nil {
		return nil, err
	}
	k.goroutines.Add(1)
	go k.keepNodeReady(ctx)
	if err := k.watchPods(ctx); err != nil {
		return nil, err
	}
	c.kubelets = append(c.kubelets, k)
	k.log.Printf("node %s registered; running its pods", k.node)
	return k, nil
}

// Stop kills every process the kubelet started (SIGTERM to its process group,
// SIGKILL 2 s later) and waits for its goroutines. The Node stays, and becomes
// NotReady once its Lease expires, as when a kubelet dies.
func (k *Kubelet) Stop() {
	k.stopOnce.Do(func() {
		k.mu.Lock()
		k.stopping = true
		k.mu.Unlock()
		k.cancel()
		if k.informers != nil {
			k.informers.Shutdown()
		}
		k.goroutines.Wait()
		k.log.Printf("stopped")
		k.logFile.Close()
	})
}

// Log is the path of the file that holds a pod's output: every run of its
// container, each headed by a line "=== run N (restart count M) ===".
func (k *Kubelet) Log(namespace, pod string) string {
	return filepath.Join(k.dir, namespace+"_"+pod+".log")
}

// PodPort is the loopback port on which the pod's containerPort is reached,
// while the pod exists.
func (k *Kubelet) PodPort(namespace, pod string, containerPort int32) (int, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, w := range k.pods {
		if w.namespace == namespace && w.name == pod {
			port, ok := w.hostPorts[containerPort]
			return port, ok
		}
	}
	return 0, false
}

// watchPods starts an informer on the pods bound to the node, each handed to
// its pod worker, and waits until it has listed them.
func (k *Kubelet) watchPods(ctx context.Context) error {
	k.informers = informers.NewSharedInformerFactoryWithOptions(k.cluster.Client, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", k.node).String()
		}))
	informer := k.informers.Core().V1().Pods().Informer()
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { k.podChanged(ctx, obj) },
		UpdateFunc: func(_, obj any) { k.podChanged(ctx, obj) },
		DeleteFunc: k.podRemoved,
	}); err != nil {
		return err
	}
	k.informers.Start(ctx.Done())
	for informerType, synced := range k.informers.WaitForCacheSync(ctx.Done()) {
		if !synced {
			return fmt.Errorf("pod informer %v did not sync", informerType)
		}
	}
	return nil
}

// podChanged hands the pod to its worker, starting one for a pod it has not
// seen.
func (k *Kubelet) podChanged(ctx context.Context, obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.stopping {
		return
	}
	w := k.pods[pod.UID]
	if w == nil {
		w = newPodWorker(k, pod)
		k.pods[pod.UID] = w
		k.podLogs[k.Log(pod.Namespace, pod.Name)] = true
		k.goroutines.Add(1)
		go w.run(ctx)
	}
	w.update(pod)
}

// podRemoved tells the pod's worker that the pod is gone from the API.
func (k *Kubelet) podRemoved(obj any) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	k.mu.Lock()
	w := k.pods[pod.UID]
	delete(k.pods, pod.UID)
	k.mu.Unlock()
	if w != nil {
		w.markGone()
	}
}

// logTails returns the last n lines of the kubelet's log and of the log of
// every pod it ran.
func (k *Kubelet) logTails(n int) string {
	k.mu.Lock()
	podLogs := make([]string, 0, len(k.podLogs))
	for path := range k.podLogs {
		podLogs = append(podLogs, path)
	}
	k.mu.Unlock()
	slices.Sort(podLogs)
	var b strings.Builder
	for _, path := range append([]string{k.logPath}, podLogs...) {
		name := strings.TrimSuffix(filepath.Base(path), ".log")
		fmt.Fprintf(&b, "----- %s (last %d lines of %s) -----\n%s\n", name, n, path, tailFile(path, n))
	}
	return b.String()
}
