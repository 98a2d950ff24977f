package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// This file runs a pod's container as a process of this machine, in a
// process group of its own, stopped by its pid.

// kubeletStopGrace is how long Stop, and a pod's removal from the API, leave
// a process between SIGTERM and SIGKILL.
const kubeletStopGrace = 2 * time.Second

// containerRun is one run of the pod's container, a process of this machine.
type containerRun struct {
	n          int // 1 for the first run
	pid        int
	startedAt  metav1.Time
	stopProbe  context.CancelFunc
	exited     chan struct{} // closed once the process is reaped and exitCode and finishedAt are set
	exitCode   int32
	finishedAt metav1.Time
}

// startProcess starts the process of run, and a goroutine that reaps it and
// then sets run's exitCode and finishedAt and closes run.exited.
func (w *podWorker) startProcess(run *containerRun) error {
	logFile, err := os.OpenFile(w.k.Log(w.namespace, w.name), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer logFile.Close()
	fmt.Fprintf(logFile, "=== run %d (restart count %d) ===\n", run.n, w.restarts)
	cmd := exec.Command(w.spec.binary, w.spec.args...)
	cmd.Env, cmd.Dir = w.spec.env, w.spec.dir
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(logFile, "=== not started: %v ===\n", err)
		return err
	}
	run.pid = cmd.Process.Pid
	w.k.goroutines.Add(1)
	go func() {
		defer w.k.goroutines.Done()
		_ = cmd.Wait()
		run.finishedAt = metav1.Now().Rfc3339Copy()
		// What the leader left running in its group dies with it, as the rest of
		// a container does when its first process exits. The group's id cannot
		// be another's while any of it lives.
		w.signalGroup(run.pid, syscall.SIGKILL)
		run.exitCode = exitCode(cmd.ProcessState)
		close(run.exited)
	}()
	return nil
}

// exitCode is the process's exit code as a container runtime reports it:
// 128 plus the signal's number for a process a signal ended, and 128 when
// waiting for it failed (no state).
func exitCode(state *os.ProcessState) int32 {
	if state == nil {
		return 128
	}
	if status, ok := state.Sys().(syscall.WaitStatus); ok && status.Signaled() {
		return 128 + int32(status.Signal())
	}
	return int32(state.ExitCode())
}

// stopProcess stops the running process, if any: SIGTERM to its group,
// SIGKILL after grace (at once when grace is 0), and waits until it is reaped.
func (w *podWorker) stopProcess(grace time.Duration) {
	run := w.current
	if run == nil {
		return
	}
	run.stopProbe()
	first := syscall.SIGTERM
	if grace == 0 {
		first = syscall.SIGKILL
	}
	w.signalGroup(run.pid, first)
	select {
	case <-run.exited:
	case <-time.After(grace):
		w.signalGroup(run.pid, syscall.SIGKILL)
		<-run.exited
	}
	w.k.log.Printf("pod %s: run %d (pid %d) stopped, exit code %d", w, run.n, run.pid, run.exitCode)
}

// signalGroup sends sig to the process group that pid leads; a group already
// gone is no error.
func (w *podWorker) signalGroup(pid int, sig syscall.Signal) {
	if err := syscall.Kill(-pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		w.k.log.Printf("pod %s: signal %v to process group %d: %v", w, sig, pid, err)
	}
}
