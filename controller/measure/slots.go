package measure

import (
	"context"
	"sync"
)

// slots are one provider's slots, shared fairly between namespaces: a namespace holds at most
// share() of them, so that at concurrency 2 and above one namespace's slow gates always leave a
// slot to the others; a freed slot goes to the waiting namespace that holds the fewest (first come
// first served between equals). Safe for concurrent use.
type slots struct {
	mu       sync.Mutex
	capacity int
	inUse    int
	held     map[string]int
	waiting  []*slotWaiter
}

// slotWaiter is one measurement waiting for a slot; granted is closed once it has one.
type slotWaiter struct {
	namespace string
	granted   chan struct{}
}

func newSlots(capacity int) *slots {
	return &slots{capacity: capacity, held: map[string]int{}}
}

// share is how many slots one namespace may hold: half of them, rounded up.
func (s *slots) share() int {
	return (s.capacity + 1) / 2
}

// resize sets the capacity (a provider's concurrency changed); slots held beyond a smaller one
// are given back as their measurements end.
func (s *slots) resize(capacity int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.capacity = capacity
	s.grant()
}

// acquire takes a slot for namespace, waiting until one is given or ctx ends (then ctx's error).
func (s *slots) acquire(ctx context.Context, namespace string) error {
	s.mu.Lock()
	if s.inUse < s.capacity && s.held[namespace] < s.share() {
		s.take(namespace)
		s.mu.Unlock()
		return nil
	}
	w := &slotWaiter{namespace: namespace, granted: make(chan struct{})}
	s.waiting = append(s.waiting, w)
	s.mu.Unlock()
	select {
	case <-w.granted:
		return nil
	case <-ctx.Done():
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, other := range s.waiting {
		if other == w {
			s.waiting = append(s.waiting[:i], s.waiting[i+1:]...)
			return ctx.Err()
		}
	}
	// Granted as ctx ended: give it back.
	s.put(namespace)
	return ctx.Err()
}

// release gives back a slot namespace held.
func (s *slots) release(namespace string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.put(namespace)
}

func (s *slots) take(namespace string) {
	s.inUse++
	s.held[namespace]++
}

func (s *slots) put(namespace string) {
	s.inUse--
	if s.held[namespace]--; s.held[namespace] <= 0 {
		delete(s.held, namespace)
	}
	s.grant()
}

// grant gives the free slots to the waiters of the namespaces holding the fewest, each under its
// share; the earliest waiter between equals.
func (s *slots) grant() {
	for s.inUse < s.capacity {
		best := -1
		for i, w := range s.waiting {
			held := s.held[w.namespace]
			if held < s.share() && (best < 0 || held < s.held[s.waiting[best].namespace]) {
				best = i
			}
		}
		if best < 0 {
			return
		}
		w := s.waiting[best]
		s.waiting = append(s.waiting[:best], s.waiting[best+1:]...)
		s.take(w.namespace)
		close(w.granted)
	}
}
