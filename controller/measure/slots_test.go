package measure

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/kubegray/kubectl-gray/pkg/gates"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// slowProvider is a fake provider whose measurements each wait for their own release, and say
// when they start.
type slowProvider struct {
	t        *testing.T
	pool     *Pool
	provider *gates.Provider
	started  chan string
	done     chan string
	release  map[string]chan struct{}
}

func newSlowProvider(t *testing.T, concurrency int, timeout time.Duration) *slowProvider {
	s := &slowProvider{t: t, started: make(chan string, 100), done: make(chan string, 100), release: map[string]chan struct{}{},
		provider: &gates.Provider{Name: "slow-" + strings.ToLower(t.Name()), Type: gates.ProviderPrometheus, Timeout: timeout, Concurrency: concurrency}}
	s.pool = NewPool(t.Context(), time.Now, func(name string) { s.done <- name })
	t.Cleanup(func() {
		for _, r := range s.release {
			select {
			case <-r:
			default:
				close(r)
			}
		}
	})
	return s
}

// submit asks for the measurement of Deployment name ("namespace/name"), which holds its slot
// until released (whatever its context says: a provider that does not answer in time).
func (s *slowProvider) submit(name string) {
	release := make(chan struct{})
	s.release[name] = release
	s.pool.Submit(Job{Key: Key{Deployment: types.UID(name), Gate: "errors"}, Name: name, Provider: s.provider, Revision: 1, Due: time.Unix(0, 0),
		Measure: func(context.Context, time.Time) (grayapi.GateOutcome, string, string) {
			s.started <- name
			<-release
			return grayapi.GatePass, "result 0", "result < 1"
		}})
}

// next is the next event of ch; the deadline only keeps a broken pool from hanging the test.
func (s *slowProvider) next(ch chan string, what string) string {
	s.t.Helper()
	select {
	case name := <-ch:
		return name
	case <-time.After(30 * time.Second):
		s.t.Fatalf("no measurement %s", what)
		return ""
	}
}

// waiting returns once n measurements wait for a slot.
func (s *slowProvider) waiting(n int) {
	s.t.Helper()
	s.pool.mu.Lock()
	slots := s.pool.slots[s.provider.Name]
	s.pool.mu.Unlock()
	for deadline := time.Now().Add(30 * time.Second); ; runtime.Gosched() {
		slots.mu.Lock()
		got := len(slots.waiting)
		slots.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("%d measurements wait for a slot, want %d", got, n)
		}
	}
}

// TestPoolQuietNamespaceNotStarved: a namespace with six slow gates on a provider of concurrency 2
// holds one slot (its share), and a quiet namespace's measurement is taken while all six are
// still running or waiting.
func TestPoolQuietNamespaceNotStarved(t *testing.T) {
	s := newSlowProvider(t, 2, time.Hour)
	for i := range 6 {
		s.submit("noisy/web-" + string(rune('a'+i)))
	}
	first := s.next(s.started, "of the noisy namespace started")
	s.waiting(5)
	s.submit("quiet/web")
	if got := s.next(s.started, "started after the noisy one"); got != "quiet/web" {
		t.Fatalf("%s started while %s held a slot, want the quiet namespace's measurement", got, first)
	}
	close(s.release["quiet/web"])
	if got := s.next(s.done, "done"); got != "quiet/web" {
		t.Errorf("%s done first, want quiet/web", got)
	}
	if m, ok := s.pool.Latest(Key{Deployment: "quiet/web", Gate: "errors"}); !ok || m.Outcome != grayapi.GatePass {
		t.Errorf("the quiet namespace's measurement: %+v, %v; want a Pass", m, ok)
	}
}

// TestPoolFreedSlotGoesToTheFewest: at concurrency 4 two namespaces hold two slots each (their
// share) and more wait; the slot freed by the first goes to a namespace that holds none, ahead of
// the first namespace's measurement that asked earlier.
func TestPoolFreedSlotGoesToTheFewest(t *testing.T) {
	s := newSlowProvider(t, 4, time.Hour)
	for _, name := range []string{"a/one", "a/two", "b/one", "b/two"} {
		s.submit(name)
		s.next(s.started, "under the namespace's share started")
	}
	s.submit("a/three")
	s.waiting(1)
	s.submit("c/one")
	s.waiting(2)
	close(s.release["a/one"])
	if got := s.next(s.started, "started once a slot was freed"); got != "c/one" {
		t.Errorf("%s got the freed slot, want c/one (its namespace held none)", got)
	}
	close(s.release["b/one"])
	if got := s.next(s.started, "started once a second slot was freed"); got != "a/three" {
		t.Errorf("%s got the second freed slot, want a/three", got)
	}
}

// TestPoolBusyIsInconclusive: a measurement that gets no slot within half the provider's timeout is
// recorded Inconclusive ("provider busy"), not left waiting.
func TestPoolBusyIsInconclusive(t *testing.T) {
	s := newSlowProvider(t, 1, 50*time.Millisecond)
	s.submit("hog/web")
	s.next(s.started, "of the namespace that takes the only slot started")
	s.submit("shop/web")
	if got := s.next(s.done, "recorded"); got != "shop/web" {
		t.Fatalf("%s recorded, want shop/web", got)
	}
	m, ok := s.pool.Latest(Key{Deployment: "shop/web", Gate: "errors"})
	if !ok || m.Outcome != grayapi.GateInconclusive || !strings.Contains(m.Why, "provider busy") {
		t.Errorf("latest %+v, %v; want Inconclusive, provider busy", m, ok)
	}
}

// TestPoolWaitsHalfTheTimeoutForASlot: a measurement waits for a slot half its provider's
// timeout at most, and is then Inconclusive ("provider busy") without asking the provider; a
// slot freed later is not taken with too little time left to answer in (the provider would be
// asked for an answer nobody waits for, as the noisy namespace of bench gates-fairness was).
func TestPoolWaitsHalfTheTimeoutForASlot(t *testing.T) {
	s := newSlowProvider(t, 1, time.Second)
	s.submit("hog/web")
	s.next(s.started, "of the namespace that takes the only slot started")
	s.submit("shop/web")
	select {
	case name := <-s.done:
		if name != "shop/web" {
			t.Fatalf("%s recorded, want shop/web", name)
		}
	case <-time.After(900 * time.Millisecond):
		// Past half the timeout: the slot is freed with 100 ms left of shop's timeout.
		close(s.release["hog/web"])
		if name := s.next(s.done, "recorded"); name != "hog/web" {
			t.Fatalf("%s recorded, want hog/web", name)
		}
		select {
		case name := <-s.started:
			t.Fatalf("%s measured with 100 ms of its timeout left, want it busy", name)
		case name := <-s.done:
			if name != "shop/web" {
				t.Fatalf("%s recorded, want shop/web", name)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("shop/web neither measured nor recorded")
		}
	}
	m, ok := s.pool.Latest(Key{Deployment: "shop/web", Gate: "errors"})
	if !ok || m.Outcome != grayapi.GateInconclusive || !strings.Contains(m.Why, "provider busy") {
		t.Errorf("latest %+v, %v; want Inconclusive, provider busy", m, ok)
	}
}
