package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Process is one server a test starts (a control-plane component, gray-controller, Prometheus),
// stopped by its pid.
type Process struct {
	name    string
	binary  string
	pid     int
	logPath string
	// exited is closed when a child we started has been reaped; nil for a
	// process adopted from a state file.
	exited chan struct{}
}

// StartProcess runs binary with args, its output going to <dir>/<name>.log.
// The child gets its own session so that it survives the end of a short-lived
// `cluster-up` command and never receives the terminal's signals.
func StartProcess(dir, name, binary string, args ...string) (*Process, error) {
	logPath := filepath.Join(dir, name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	cmd := exec.Command(binary, args...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &Process{name: name, binary: binary, pid: cmd.Process.Pid, logPath: logPath, exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// Alive reports whether the process still runs. For a child of ours that is
// whether it has been reaped; for an adopted pid, whether it still runs our
// binary (a recycled pid that now belongs to something else counts as gone).
func (p *Process) Alive() bool {
	if p.exited != nil {
		select {
		case <-p.exited:
			return false
		default:
			return true
		}
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p.pid))
	if err != nil {
		return false
	}
	if stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.pid)); err == nil {
		// State field after the command name: Z means exited but not reaped.
		if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
			return false
		}
	}
	return strings.HasPrefix(string(cmdline), p.binary)
}

// Stop sends SIGTERM to the pid, then SIGKILL after grace.
func (p *Process) Stop(grace time.Duration) error {
	if !p.Alive() {
		return nil
	}
	if err := syscall.Kill(p.pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("stop %s (pid %d): %w", p.name, p.pid, err)
	}
	if p.waitGone(grace, 50*time.Millisecond) == nil {
		return nil
	}
	if err := syscall.Kill(p.pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("kill %s (pid %d): %w", p.name, p.pid, err)
	}
	_ = p.waitGone(2*time.Second, 20*time.Millisecond)
	return nil
}

// waitGone waits up to timeout for the process to be gone.
func (p *Process) waitGone(timeout, interval time.Duration) error {
	return Poll(context.Background(), timeout, interval, func(context.Context) (bool, string, error) {
		return !p.Alive(), "still running", nil
	})
}

// kill sends SIGKILL to the pid at once and waits until it has exited.
func (p *Process) kill() error {
	if !p.Alive() {
		return nil
	}
	if err := syscall.Kill(p.pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("kill %s (pid %d): %w", p.name, p.pid, err)
	}
	if err := p.waitGone(5*time.Second, 20*time.Millisecond); err != nil {
		return fmt.Errorf("kill %s (pid %d) with SIGKILL: %w", p.name, p.pid, err)
	}
	return nil
}

// Tail returns the last n lines of the process log.
func (p *Process) Tail(n int) string { return tailFile(p.logPath, n) }

// tailFile returns the last n lines of the file at path.
func tailFile(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func (p *Process) stateLine() string {
	return strings.Join([]string{p.name, strconv.Itoa(p.pid), p.binary, p.logPath}, "\t")
}

func parseStateLine(line string) (*Process, error) {
	f := strings.Split(line, "\t")
	if len(f) != 4 {
		return nil, fmt.Errorf("malformed state line %q", line)
	}
	pid, err := strconv.Atoi(f[1])
	if err != nil {
		return nil, fmt.Errorf("malformed pid in state line %q: %w", line, err)
	}
	return &Process{name: f[0], pid: pid, binary: f[2], logPath: f[3]}, nil
}
