package measure

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/kubegray/kubectl-gray/controller/metrics"
	"github.com/kubegray/kubectl-gray/pkg/gates"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// Key names one gate of one Deployment: at most one of its measurements runs at a time.
type Key struct {
	Deployment types.UID
	Gate       string
}

// Job is one measurement to take: the gate's, of the hold at Revision and Step, due at Due.
type Job struct {
	Key
	// Name is the Deployment's namespace/name, its sync's queue key.
	Name     string
	Provider *gates.Provider
	Revision int64
	Step     int32
	Due      time.Time
	// Measure takes the measurement at at, within ctx (bounded by the provider's timeout).
	Measure func(ctx context.Context, at time.Time) (outcome grayapi.GateOutcome, value, why string)
}

// Pool runs Jobs in goroutines of their own, bounded per provider, and keeps each gate's latest
// Measurement for the Deployment's next sync.
type Pool struct {
	ctx  context.Context
	now  func() time.Time
	done func(name string)

	mu      sync.Mutex
	latest  map[Key]gates.Measurement
	running map[Key]time.Time
	slots   map[string]*slots
}

// NewPool returns a Pool whose measurements stop with ctx; done is called with the Job's Name
// of every measurement taken, to queue the Deployment's sync.
func NewPool(ctx context.Context, now func() time.Time, done func(name string)) *Pool {
	return &Pool{ctx: ctx, now: now, done: done, latest: map[Key]gates.Measurement{}, running: map[Key]time.Time{}, slots: map[string]*slots{}}
}

// Submit starts j unless the same measurement is running or taken and not yet recorded. It
// never blocks.
func (p *Pool) Submit(j Job) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if due, ok := p.running[j.Key]; ok && due.Equal(j.Due) {
		return
	}
	if m, ok := p.latest[j.Key]; ok && m.Answers(j.Revision, j.Step, j.Due) {
		return
	}
	p.running[j.Key] = j.Due
	slot := p.slot(j.Provider)
	go p.run(j, slot)
}

// slot is the slots of provider pr, sized by its concurrency.
func (p *Pool) slot(pr *gates.Provider) *slots {
	s, ok := p.slots[pr.Name]
	if !ok {
		s = newSlots(pr.Concurrency)
		p.slots[pr.Name] = s
	}
	s.resize(pr.Concurrency)
	return s
}

// run takes j's measurement once its namespace is given a slot of the provider. The provider's
// timeout covers the wait, of which the wait takes half at most: a measurement that got no slot
// within half the timeout is Inconclusive ("provider busy"), recorded like any other, so a busy
// provider makes a gate late by one timeout at most; and one given a slot has at least half the
// timeout left to be answered in, so the provider is not asked for answers nobody waits for.
func (p *Pool) run(j Job, slot *slots) {
	ctx, cancel := context.WithTimeout(p.ctx, j.Provider.Timeout)
	defer cancel()
	namespace, _, _ := cache.SplitMetaNamespaceKey(j.Name)
	tracked := metrics.WaitForProvider(j.Provider.Name, j.Provider.Type)
	waitCtx, cancelWait := context.WithTimeout(ctx, j.Provider.Timeout/2)
	err := slot.acquire(waitCtx, namespace)
	cancelWait()
	if err != nil {
		tracked.Cancelled()
		if p.ctx.Err() != nil {
			p.finish(j, nil)
			return
		}
		p.finish(j, &gates.Measurement{Revision: j.Revision, Step: j.Step, Due: j.Due, At: p.now(), Outcome: grayapi.GateInconclusive,
			Why: fmt.Sprintf("provider busy: %s gave namespace %s no slot within half its timeout %s", j.Provider.Name, namespace, j.Provider.Timeout)})
		return
	}
	at := p.now()
	tracked.Started(at)
	outcome, value, why := j.Measure(ctx, at)
	tracked.Done(p.now(), outcome)
	slot.release(namespace)
	p.finish(j, &gates.Measurement{Revision: j.Revision, Step: j.Step, Due: j.Due, At: at, Outcome: outcome, Value: value, Why: why})
}

// finish records m (nil: stopped before measuring) and queues the Deployment's sync.
func (p *Pool) finish(j Job, m *gates.Measurement) {
	p.mu.Lock()
	if due, ok := p.running[j.Key]; ok && due.Equal(j.Due) {
		delete(p.running, j.Key)
	}
	if m != nil {
		p.latest[j.Key] = *m
	}
	p.mu.Unlock()
	if m != nil {
		p.done(j.Name)
	}
}

// Latest is the latest measurement taken of key's gate.
func (p *Pool) Latest(key Key) (gates.Measurement, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	m, ok := p.latest[key]
	return m, ok
}

// Forget drops the measurements of a Deployment that is gone.
func (p *Pool) Forget(uid types.UID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k := range p.latest {
		if k.Deployment == uid {
			delete(p.latest, k)
		}
	}
}
