package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// measured is one gate measurement as gray-controller recorded it in a Deployment's
// kubegray.io/status. The record of the measurement before it said when this one was due
// (`next`, the last one's `at` plus the interval); this one's `at` is when gray-controller took
// it: the moment the pool gave it a provider slot, or, for an Inconclusive "provider busy", the
// moment it gave up waiting. Both are gray-controller's own clock, to the microsecond. seen is
// when the bench's watch received the write that recorded it (the same machine's clock): the
// delay a person or a tool reading the status sees, the sync that records it included.
type measured struct {
	namespace     string
	due, at, seen time.Time
	outcome       grayapi.GateOutcome
	why           string
}

// gateRecords follows one gate's records on the Deployments of some namespaces, one watch each,
// and keeps every measurement recorded from when it starts.
type gateRecords struct {
	gate   string
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	last   map[string]grayapi.GateStatus // namespace/name → the gate's latest record
	taken  []measured
	missed int // measurements recorded between two writes the watch saw (never expected)
}

// watchGateRecords lists each namespace's Deployments and watches them from that list's
// resource version (starting again where it left off if the server closes a watch).
func watchGateRecords(ctx context.Context, client kubernetes.Interface, gate string, namespaces ...string) (*gateRecords, error) {
	ctx, cancel := context.WithCancel(ctx)
	r := &gateRecords{gate: gate, cancel: cancel, last: map[string]grayapi.GateStatus{}}
	for _, namespace := range namespaces {
		list, err := client.AppsV1().Deployments(namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			cancel()
			return nil, err
		}
		for i := range list.Items {
			r.see(&list.Items[i], time.Now())
		}
		lw := &cache.ListWatch{WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return client.AppsV1().Deployments(namespace).Watch(ctx, o)
		}}
		w, err := watchtools.NewRetryWatcherWithContext(ctx, list.ResourceVersion, lw)
		if err != nil {
			cancel()
			return nil, fmt.Errorf("watch Deployments of %s: %w", namespace, err)
		}
		r.wg.Go(func() {
			defer w.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case ev, ok := <-w.ResultChan():
					if !ok {
						return
					}
					if d, ok := ev.Object.(*appsv1.Deployment); ok && ev.Type == watch.Modified {
						r.see(d, time.Now())
					}
				}
			}
		})
	}
	return r, nil
}

// see keeps d's record of the gate, and the measurement it adds to the one before: the record
// counts one more outcome (passes, fails and unsure). A record counting more than one more
// means the watch missed a write; its measurements are counted as missed, not guessed.
func (r *gateRecords) see(d *appsv1.Deployment, now time.Time) {
	st, _, err := grayapi.RecordedStatus(d.Annotations)
	if err != nil {
		return
	}
	for _, rec := range st.Gates {
		if rec.Name != r.gate || rec.At == nil {
			continue
		}
		key := d.Namespace + "/" + d.Name
		r.mu.Lock()
		last, ok := r.last[key]
		count, before := outcomes(rec), outcomes(last)
		switch {
		case !ok || count < before:
			// The first record seen, or a new window (a new step or revision).
		case count == before+1 && last.Next != nil:
			r.taken = append(r.taken, measured{namespace: d.Namespace, due: last.Next.Time, at: rec.At.Time, seen: now, outcome: rec.Last, why: rec.Why})
		case count > before:
			r.missed += int(count - before)
		}
		r.last[key] = rec
		r.mu.Unlock()
	}
}

// outcomes is how many measurements rec has counted.
func outcomes(rec grayapi.GateStatus) int32 { return rec.Passes + rec.Fails + rec.Unsure }

// due is the measurements of namespace that were due in [from, to), and how many the watch
// missed in all.
func (r *gateRecords) due(namespace string, from, to time.Time) ([]measured, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []measured
	for _, m := range r.taken {
		if m.namespace == namespace && !m.due.Before(from) && m.due.Before(to) {
			out = append(out, m)
		}
	}
	return out, r.missed
}

func (r *gateRecords) close() {
	r.cancel()
	r.wg.Wait()
}
