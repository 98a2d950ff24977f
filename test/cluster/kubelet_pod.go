package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
)

// restartBackoffs are the waits before the first, second, third and every
// later restart of an exited container: a kubelet's 10 s doubling to 5
// minutes, shortened so that tests see a crash loop in seconds.
var restartBackoffs = []time.Duration{time.Second, 5 * time.Second, 10 * time.Second, 20 * time.Second}

// podWorker runs one pod: its goroutine alone starts and stops the pod's
// process and writes its status, so the writes are serialized; the informer
// hands it the pod's changes through update and markGone.
type podWorker struct {
	k               *Kubelet
	uid             types.UID
	namespace, name string
	dir             string        // the pod's folder: HOME, TMPDIR and kubeconfig
	hostPorts       map[int32]int // container port → loopback port, fixed for the pod's life
	portsErr        error         // why hostPorts could not be allocated

	// The informer's side: the newest copy of the pod, or that it is gone,
	// and a token in changed when either changes.
	mu      sync.Mutex
	latest  *corev1.Pod
	gone    bool
	changed chan struct{}

	// The worker goroutine's own.
	podState                     // what the status reports
	pod              *corev1.Pod // the newest copy known, the base of status writes
	spec             processSpec
	current          *containerRun // the running process, if any
	backoff          *time.Timer   // running while the container waits to restart
	readinessChanges chan readiness
}

// podState is what the worker knows of its pod and reports in its status.
type podState struct {
	admitted        bool
	frozen          bool // the pod had ended before this kubelet saw it: its status stays as it is
	refused         bool // refused by the kubelet: Failed, and no container status
	phase           corev1.PodPhase
	reason, message string
	startTime       *metav1.Time
	imageKnown      bool
	state           corev1.ContainerState
	lastState       corev1.ContainerState
	containerID     string
	restarts        int32
	ready           bool
}

func newPodWorker(k *Kubelet, pod *corev1.Pod) *podWorker {
	w := &podWorker{
		k: k, uid: pod.UID, namespace: pod.Namespace, name: pod.Name,
		dir:              filepath.Join(k.dir, "pods", string(pod.UID)),
		hostPorts:        map[int32]int{},
		changed:          make(chan struct{}, 1),
		readinessChanges: make(chan readiness),
	}
	if len(pod.Spec.Containers) > 0 {
		ports := pod.Spec.Containers[0].Ports
		hostPorts, err := FreePorts(len(ports))
		w.portsErr = err
		for i := 0; err == nil && i < len(ports); i++ {
			w.hostPorts[ports[i].ContainerPort] = hostPorts[i]
		}
	}
	return w
}

func (w *podWorker) String() string { return w.namespace + "/" + w.name }

// update hands the worker the pod's newest copy.
func (w *podWorker) update(pod *corev1.Pod) {
	w.mu.Lock()
	w.latest = pod
	w.mu.Unlock()
	w.notify()
}

// markGone tells the worker that the pod is gone from the API.
func (w *podWorker) markGone() {
	w.mu.Lock()
	w.gone = true
	w.mu.Unlock()
	w.notify()
}

func (w *podWorker) notify() {
	select {
	case w.changed <- struct{}{}:
	default:
	}
}

func (w *podWorker) next() (*corev1.Pod, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.latest, w.gone
}

// run is the worker's goroutine: it reacts to the pod's changes, its
// process's exit, its back-off and its readiness, and writes the status after
// each, until the pod is deleted or gone or ctx ends.
func (w *podWorker) run(ctx context.Context) {
	defer w.k.goroutines.Done()
	defer func() {
		if err := os.RemoveAll(w.dir); err != nil {
			w.k.log.Printf("pod %s: %v", w, err)
		}
	}()
	resync := time.NewTicker(statusResyncInterval)
	defer resync.Stop()
	for {
		select {
		case <-ctx.Done():
			w.stopProcess(kubeletStopGrace)
			return
		case <-w.changed:
			pod, gone := w.next()
			if gone {
				w.k.log.Printf("pod %s: gone from the API", w)
				w.stopProcess(kubeletStopGrace)
				return
			}
			w.pod = pod
			if pod.DeletionTimestamp != nil {
				w.terminate(ctx)
				return
			}
			if !w.admitted {
				w.admit(ctx)
			}
		case <-w.exited():
			w.containerExited()
		case <-w.backoffDone():
			w.startContainer(ctx)
		case change := <-w.readinessChanges:
			if w.current != nil && change.run == w.current.n {
				w.ready = change.ready
			}
		case <-resync.C:
		}
		w.writeStatus(ctx)
	}
}

func (w *podWorker) exited() <-chan struct{} {
	if w.current == nil {
		return nil
	}
	return w.current.exited
}

func (w *podWorker) backoffDone() <-chan time.Time {
	if w.backoff == nil {
		return nil
	}
	return w.backoff.C
}

// admit takes the pod on: it refuses what the stand-in kubelet cannot run,
// waits in ErrImagePull for an image it does not know, and starts the rest.
func (w *podWorker) admit(ctx context.Context) {
	w.admitted = true
	now := metav1.Now().Rfc3339Copy()
	w.phase, w.startTime = corev1.PodPending, &now
	if w.pod.Status.StartTime != nil {
		w.startTime = w.pod.Status.StartTime
	}
	if w.pod.Status.Phase == corev1.PodSucceeded || w.pod.Status.Phase == corev1.PodFailed {
		w.frozen = true
		return
	}
	// An earlier stand-in kubelet of this node ran the pod: the count goes on,
	// and the process that ran when it stopped counts as one more restart.
	if previous := w.pod.Status.ContainerStatuses; len(previous) == 1 {
		w.restarts = previous[0].RestartCount
		if previous[0].State.Running != nil {
			w.restarts++
		}
	}
	if why := refusal(w.pod); why != "" {
		w.refuse(why)
		return
	}
	if w.portsErr != nil {
		w.refuse("no free ports: " + w.portsErr.Error())
		return
	}
	image := w.pod.Spec.Containers[0].Image
	binary, ok := w.k.images[image]
	if !ok {
		w.state = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImagePull",
			Message: fmt.Sprintf("image %q is not in the stand-in kubelet's KubeletOptions.Images", image)}}
		w.k.log.Printf("pod %s: image %q unknown: ErrImagePull", w, image)
		return
	}
	w.imageKnown = true
	spec, err := w.k.processSpec(w.pod, binary, w.hostPorts, w.dir)
	if err != nil {
		w.refuse(err.Error())
		return
	}
	w.spec = spec
	w.startContainer(ctx)
}

// refuse fails the pod, as a kubelet fails a pod it cannot admit.
func (w *podWorker) refuse(why string) {
	w.k.log.Printf("pod %s: refused: %s", w, why)
	w.refused = true
	w.phase, w.reason, w.message = corev1.PodFailed, "UnsupportedByStandInKubelet", why
}

// startContainer starts a run of the container, its output appended to the
// pod's log, in a process group of its own so that it can be stopped with
// whatever it started.
func (w *podWorker) startContainer(ctx context.Context) {
	w.backoff = nil
	now := metav1.Now().Rfc3339Copy()
	run := &containerRun{n: int(w.restarts) + 1, startedAt: now, stopProbe: func() {}, exited: make(chan struct{})}
	if err := w.startProcess(run); err != nil {
		w.k.log.Printf("pod %s: run %d did not start: %v", w, run.n, err)
		w.containerEnded(&corev1.ContainerStateTerminated{ExitCode: 128, Reason: "StartError",
			Message: err.Error(), StartedAt: now, FinishedAt: now})
		return
	}
	w.k.log.Printf("pod %s: run %d started, pid %d: %s %q", w, run.n, run.pid, w.spec.binary, w.spec.args)
	w.current = run
	w.phase = corev1.PodRunning
	w.state = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}
	w.containerID = fmt.Sprintf("standin://%d", run.pid)
	container := &w.pod.Spec.Containers[0]
	probe := container.ReadinessProbe
	w.ready = probe == nil
	if probe == nil {
		return
	}
	url, err := readinessURL(container, probe.HTTPGet, w.hostPorts)
	if err != nil {
		w.k.log.Printf("pod %s: never ready: %v", w, err)
		return
	}
	probeCtx, stopProbe := context.WithCancel(ctx)
	run.stopProbe = stopProbe
	w.k.goroutines.Add(1)
	go func() {
		defer w.k.goroutines.Done()
		probeReadiness(probeCtx, run.n, probe, url, w.readinessChanges)
	}()
}

// finishRun forgets the run that has exited and returns its terminated state.
func (w *podWorker) finishRun() *corev1.ContainerStateTerminated {
	run := w.current
	run.stopProbe()
	w.current, w.ready = nil, false
	reason := "Completed"
	if run.exitCode != 0 {
		reason = "Error"
	}
	w.k.log.Printf("pod %s: run %d (pid %d) exited with code %d", w, run.n, run.pid, run.exitCode)
	return &corev1.ContainerStateTerminated{ExitCode: run.exitCode, Reason: reason,
		StartedAt: run.startedAt, FinishedAt: run.finishedAt, ContainerID: w.containerID}
}

func (w *podWorker) containerExited() { w.containerEnded(w.finishRun()) }

// containerEnded restarts an ended container after a back-off (restartPolicy
// Always), or ends the pod.
func (w *podWorker) containerEnded(terminated *corev1.ContainerStateTerminated) {
	if policy := w.pod.Spec.RestartPolicy; policy != corev1.RestartPolicyAlways && policy != "" {
		w.endPod(terminated)
		return
	}
	w.lastState = corev1.ContainerState{Terminated: terminated}
	w.restarts++
	delay := restartBackoffs[min(int(w.restarts), len(restartBackoffs))-1]
	w.state = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff",
		Message: fmt.Sprintf("back-off %v restarting failed container=%s pod=%s_%s(%s)",
			delay, w.pod.Spec.Containers[0].Name, w.name, w.namespace, w.uid)}}
	w.backoff = time.NewTimer(delay)
}

// endPod reports the container terminated and the pod Succeeded or Failed by
// its exit code.
func (w *podWorker) endPod(terminated *corev1.ContainerStateTerminated) {
	w.state = corev1.ContainerState{Terminated: terminated}
	w.phase = corev1.PodSucceeded
	if terminated.ExitCode != 0 {
		w.phase = corev1.PodFailed
	}
}

// terminate finishes a graceful deletion as a kubelet does: SIGTERM to the
// process group, SIGKILL once the grace period is over (shortened if the pod
// is deleted again with a shorter one), the container and pod reported
// terminated, and the pod object deleted, UID-checked, which the API server
// keeps until then.
func (w *podWorker) terminate(ctx context.Context) {
	if w.backoff != nil {
		w.backoff.Stop()
		w.backoff = nil
	}
	if run := w.current; run != nil {
		run.stopProbe()
		began := time.Now()
		grace := gracePeriod(w.pod)
		w.k.log.Printf("pod %s: deleted: SIGTERM to pid %d, grace period %v", w, run.pid, grace)
		w.signalGroup(run.pid, syscall.SIGTERM)
		deadline := time.NewTimer(grace)
		defer deadline.Stop()
		for exited := false; !exited; {
			select {
			case <-run.exited:
				exited = true
			case <-deadline.C:
				w.k.log.Printf("pod %s: grace period over: SIGKILL to pid %d", w, run.pid)
				w.signalGroup(run.pid, syscall.SIGKILL)
			case <-ctx.Done():
				w.stopProcess(0)
				return
			case <-w.changed:
				pod, gone := w.next()
				if gone {
					w.stopProcess(0)
					return
				}
				w.pod = pod
				deadline.Reset(time.Until(began.Add(gracePeriod(pod))))
			}
		}
		w.endPod(w.finishRun())
		w.writeStatus(ctx)
	}
	w.k.log.Printf("pod %s: deleting the pod object", w)
	pods := w.k.cluster.Client.CoreV1().Pods(w.namespace)
	err := retry.OnError(retry.DefaultBackoff, func(err error) bool {
		return ctx.Err() == nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err)
	}, func() error {
		return pods.Delete(ctx, w.name, metav1.DeleteOptions{
			GracePeriodSeconds: ptr.To[int64](0), Preconditions: metav1.NewUIDPreconditions(string(w.uid))})
	})
	if err != nil && !apierrors.IsNotFound(err) {
		w.k.log.Printf("pod %s: delete: %v", w, err)
	}
}

// gracePeriod is the pod's termination grace period: the deletion's, else the
// spec's, else 30 s.
func gracePeriod(pod *corev1.Pod) time.Duration {
	seconds := int64(30)
	if pod.DeletionGracePeriodSeconds != nil {
		seconds = *pod.DeletionGracePeriodSeconds
	} else if pod.Spec.TerminationGracePeriodSeconds != nil {
		seconds = *pod.Spec.TerminationGracePeriodSeconds
	}
	return time.Duration(seconds) * time.Second
}
