package main

import (
	"context"
	"fmt"
	"os"
	"sort"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

// settleWatch records when each Deployment of the namespace first satisfies a
// predicate, from one watch. Listing thousands of Deployments every 200 ms (as
// waitAll does) would load kube-apiserver during the very run it measures and
// still only tell the settle moment to within the period.
type settleWatch struct {
	n       int
	settled func(*appsv1.Deployment) bool
	cancel  context.CancelFunc
	done    chan struct{} // closed when follow returns
	all     chan struct{} // closed when n Deployments have settled

	mu sync.Mutex
	at map[string]time.Time // name → when this process first saw it settled
}

// watchSettled lists the namespace, counts the Deployments already settled,
// and follows changes from that list's resource version, so that nothing
// between the list and the watch is missed. Start it before the change whose
// effect it times.
func watchSettled(ctx context.Context, client kubernetes.Interface, n int, settled func(*appsv1.Deployment) bool) (*settleWatch, error) {
	ctx, cancel := context.WithCancel(ctx)
	w := &settleWatch{n: n, settled: settled, cancel: cancel, done: make(chan struct{}), all: make(chan struct{}),
		at: map[string]time.Time{}}
	rv, err := w.relist(ctx, client)
	if err != nil {
		cancel()
		return nil, err
	}
	go w.follow(ctx, client, rv)
	return w, nil
}

// relist looks at every Deployment and returns the list's resource version.
func (w *settleWatch) relist(ctx context.Context, client kubernetes.Interface) (string, error) {
	list, err := client.AppsV1().Deployments("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		return "", err
	}
	for i := range list.Items {
		w.see(&list.Items[i])
	}
	return list.ResourceVersion, nil
}

func (w *settleWatch) see(d *appsv1.Deployment) {
	if !w.settled(d) {
		return
	}
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.at[d.Name]; ok {
		return
	}
	w.at[d.Name] = now
	if len(w.at) == w.n {
		close(w.all)
	}
}

// follow watches from rv until ctx ends, starting again where it left off
// when the server closes the watch, and from a new list when rv has expired.
func (w *settleWatch) follow(ctx context.Context, client kubernetes.Interface, rv string) {
	defer close(w.done)
	for ctx.Err() == nil {
		if rv == "" {
			var err error
			if rv, err = w.relist(ctx, client); err != nil {
				time.Sleep(time.Second)
				continue
			}
		}
		wi, err := client.AppsV1().Deployments("default").Watch(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true})
		if err != nil {
			if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
				rv = ""
			}
			time.Sleep(time.Second)
			continue
		}
		for ev := range wi.ResultChan() {
			switch ev.Type {
			case watch.Error:
				rv = "" // most likely 410 Gone; the server ends the watch after it
			case watch.Bookmark:
				if m, err := meta.Accessor(ev.Object); err == nil {
					rv = m.GetResourceVersion()
				}
			default:
				if d, ok := ev.Object.(*appsv1.Deployment); ok {
					rv = d.ResourceVersion
					w.see(d)
				}
			}
		}
		wi.Stop()
	}
}

// wait returns the settle moments once all n Deployments have settled, or an
// error after timeout; either way the watch ends. Progress goes to stderr, as
// a large run takes many minutes.
func (w *settleWatch) wait(timeout time.Duration, what string) (map[string]time.Time, error) {
	defer func() {
		w.cancel()
		<-w.done
	}()
	count := func() int {
		w.mu.Lock()
		defer w.mu.Unlock()
		return len(w.at)
	}
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	progress := time.NewTicker(30 * time.Second)
	defer progress.Stop()
	for {
		select {
		case <-w.all:
			w.mu.Lock()
			defer w.mu.Unlock()
			return w.at, nil
		case <-progress.C:
			fmt.Fprintf(os.Stderr, "bench: %d of %d Deployments %s\n", count(), w.n, what)
		case <-deadline.C:
			return nil, fmt.Errorf("not within %v: %d of %d Deployments %s", timeout, count(), w.n, what)
		}
	}
}

// quantile returns the q-quantile (nearest rank below) of d, which must be
// sorted and not empty.
func quantile(d []time.Duration, q float64) time.Duration {
	return d[int(q*float64(len(d)-1))]
}

func sortDurations(d []time.Duration) {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
}
