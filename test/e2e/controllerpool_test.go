package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegray/kubectl-gray/test/cluster"
)

// Leader election as short as the controller accepts with room to spare, so
// a killed leader is replaced within seconds, well inside a 75s wait.
var shortLeaseArgs = []string{
	"--leader-elect=true",
	"--leader-elect-lease-duration=3s",
	"--leader-elect-renew-deadline=2s",
	"--leader-elect-retry-period=500ms",
}

// controllerPool keeps `size` gray-controller replicas running with leader
// election, as a Deployment of the controller with a liveness restart would:
// a replica that exits by itself (a leader that missed its renew deadline
// exits non-zero by design) is replaced, and killLeader SIGKILLs the holder
// of the Lease and starts a fresh standby.
type controllerPool struct {
	t                  *testing.T
	c                  *cluster.Cluster
	binary, kubeconfig string
	args               []string
	size               int

	mu         sync.Mutex // serialises every start and stop: cluster.Cluster is not safe for concurrent use
	seq        int
	live       []string
	identities map[string]string
	kills      int
	exits      int

	stopSupervisor context.CancelFunc
	supervised     sync.WaitGroup
}

func startControllerPool(t *testing.T, c *cluster.Cluster, size int, args ...string) *controllerPool {
	t.Helper()
	applyManifests(t, c, overlayManifests(t, "base"))
	p := &controllerPool{t: t, c: c, binary: ourBinary(t, "gray-controller"), kubeconfig: serviceAccountKubeconfig(t, c),
		args: append(append([]string(nil), shortLeaseArgs...), args...), size: size, identities: map[string]string{}}
	p.mu.Lock()
	for range size {
		if err := p.add(); err != nil {
			p.mu.Unlock()
			t.Fatal(err)
		}
	}
	p.mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	p.stopSupervisor = cancel
	p.supervised.Add(1)
	go p.supervise(ctx)
	// Registered after the cluster's cleanup, so it runs before the cluster
	// stops (and before the test ends, so Logf is still allowed).
	t.Cleanup(func() {
		cancel()
		p.supervised.Wait()
		p.mu.Lock()
		defer p.mu.Unlock()
		t.Logf("gray-controller pool: %d leaders killed, %d replicas exited by themselves, %d started in all", p.kills, p.exits, p.seq)
	})
	return p
}

// add starts one more replica; p.mu is held.
func (p *controllerPool) add() error {
	p.seq++
	name := fmt.Sprintf("%s-%d", grayControllerName, p.seq)
	if err := runGrayController(p.c, name, p.binary, p.kubeconfig, p.args...); err != nil {
		return err
	}
	p.live = append(p.live, name)
	return nil
}

func (p *controllerPool) remove(name string) {
	for i, n := range p.live {
		if n == name {
			p.live = append(p.live[:i], p.live[i+1:]...)
			return
		}
	}
}

func (p *controllerPool) supervise(ctx context.Context) {
	defer p.supervised.Done()
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(500 * time.Millisecond):
		}
		p.mu.Lock()
		for _, name := range append([]string(nil), p.live...) {
			if p.c.ComponentAlive(name) {
				continue
			}
			p.exits++
			p.remove(name)
			p.t.Logf("gray-controller replica %s exited by itself; last lines of its log:\n%s", name, p.logTail(name, 15))
		}
		for len(p.live) < p.size && ctx.Err() == nil {
			if err := p.add(); err != nil {
				p.t.Errorf("replace a gray-controller replica: %v", err)
				break
			}
		}
		p.mu.Unlock()
	}
}

// killLeader SIGKILLs the replica holding the Lease (waiting for one to hold
// it if a previous leader is gone and the lease not yet taken over) and
// starts a fresh replica, so that `size` run again.
func (p *controllerPool) killLeader(t *testing.T) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	name, identity, err := p.leader()
	if err != nil {
		t.Fatalf("find the leading gray-controller: %v", err)
	}
	if err := p.c.KillComponent(name); err != nil {
		t.Fatal(err)
	}
	p.kills++
	p.remove(name)
	if err := p.add(); err != nil {
		t.Fatal(err)
	}
	t.Logf("SIGKILLed the leading gray-controller %s (%s) at %s; replicas now %v", name, identity, time.Now().Format(timeLayout), p.live)
}

// leader is the live replica whose identity holds the Lease; p.mu is held.
func (p *controllerPool) leader() (string, string, error) {
	var leader, holder string
	err := cluster.Poll(context.Background(), 30*time.Second, 100*time.Millisecond, func(ctx context.Context) (bool, string, error) {
		lease, err := p.c.Client.CoordinationV1().Leases("gray-system").Get(ctx, grayControllerName, metav1.GetOptions{})
		switch {
		case err != nil:
			return false, "lease: " + err.Error(), nil
		case lease.Spec.HolderIdentity == nil:
			return false, "no lease holder yet", nil
		}
		holder = *lease.Spec.HolderIdentity
		for _, name := range p.live {
			if p.identity(name) == holder && p.c.ComponentAlive(name) {
				leader = name
				return true, "", nil
			}
		}
		return false, "lease held by " + holder + ", no live replica has that identity", nil
	})
	if err != nil {
		return "", "", fmt.Errorf("no live replica of %v leads: %w", p.live, err)
	}
	return leader, holder, nil
}

// campaigning is the line every replica logs at start with its identity
// (hostname_uuid), the value it writes as the Lease's holderIdentity.
var campaigning = regexp.MustCompile(`"Campaigning for the leader-election lease".*identity="([^"]+)"`)

func (p *controllerPool) identity(name string) string {
	if id, ok := p.identities[name]; ok {
		return id
	}
	data, err := os.ReadFile(p.logPath(name))
	if err != nil {
		return ""
	}
	if m := campaigning.FindSubmatch(data); m != nil {
		p.identities[name] = string(m[1])
		return string(m[1])
	}
	return ""
}

// logPath is where cluster.StartComponent sends a component's output.
func (p *controllerPool) logPath(name string) string { return filepath.Join(p.c.Dir, name+".log") }

func (p *controllerPool) logTail(name string, n int) string {
	data, err := os.ReadFile(p.logPath(name))
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
