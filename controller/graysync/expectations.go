package graysync

import (
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
)

// replicaSetExpectationTimeout bounds how long a gray sync waits for the ReplicaSet informer
// to show a write: a ReplicaSet deleted by someone else before its create or resize reached
// the cache would otherwise be waited for forever. Upstream's ControllerExpectations use five
// minutes for pods; a ReplicaSet write reaches a healthy informer in milliseconds.
const replicaSetExpectationTimeout = 30 * time.Second

// replicaSetExpectations remembers, per Deployment, the ReplicaSets a gray sync created or
// resized and the generation each write gave them. The Deployment and ReplicaSet informers
// are separate watches, so a sync can run on our own Deployment write before the ReplicaSet
// cache has our ReplicaSet write: deciding from those older sizes would undo a hold that was
// just taken (a new ReplicaSet that seems missing, a canary that seems short of its target)
// and flip spec.paused for one sync. A gray sync first checks that the cache has caught up
// and otherwise does nothing; the ReplicaSet event that brings the write syncs it again.
// Upstream's deployment controller keeps no such record, so plain Deployments do not use it.
type replicaSetExpectations struct {
	mu    sync.Mutex
	byKey map[string]map[string]expectedWrite
	now   func() time.Time
}

// expectedWrite is one ReplicaSet write waited for: the generation it gave the ReplicaSet.
type expectedWrite struct {
	generation int64
	at         time.Time
}

func newReplicaSetExpectations(now func() time.Time) *replicaSetExpectations {
	return &replicaSetExpectations{byKey: map[string]map[string]expectedWrite{}, now: now}
}

// wrote records that rs, as the API server answered a create or resize, belongs to the
// Deployment with this key.
func (e *replicaSetExpectations) wrote(key string, rs *appsv1.ReplicaSet) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.byKey[key] == nil {
		e.byKey[key] = map[string]expectedWrite{}
	}
	e.byKey[key][rs.Name] = expectedWrite{generation: rs.Generation, at: e.now()}
}

// caughtUp reports whether every ReplicaSet write expected for key shows in rsList (the
// cached ReplicaSets of the Deployment), forgetting those that do or that expired; otherwise
// it names one that is still missing.
func (e *replicaSetExpectations) caughtUp(key string, rsList []*appsv1.ReplicaSet) (bool, string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	expected := e.byKey[key]
	generations := make(map[string]int64, len(rsList))
	for _, rs := range rsList {
		generations[rs.Name] = rs.Generation
	}
	missing := ""
	for name, w := range expected {
		gen, cached := generations[name]
		if (cached && gen >= w.generation) || e.now().Sub(w.at) > replicaSetExpectationTimeout {
			delete(expected, name)
			continue
		}
		missing = name
	}
	if len(expected) == 0 {
		delete(e.byKey, key)
	}
	return missing == "", missing
}

// forgetReplicaSet drops the expectation for a ReplicaSet that was deleted.
func (e *replicaSetExpectations) forgetReplicaSet(key, name string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.byKey[key], name)
}

// forget drops every expectation of a Deployment that was deleted.
func (e *replicaSetExpectations) forget(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.byKey, key)
}
