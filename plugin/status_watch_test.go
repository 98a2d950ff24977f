package plugin

// status -w and the watch loop under it, with the helpers that run status in the background
// and change the Deployment while it watches (status_until_test.go uses them too).

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// notifyBuffer is a goroutine-safe output that reports every write.
type notifyBuffer struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	writes chan struct{}
}

func newNotifyBuffer() *notifyBuffer { return &notifyBuffer{writes: make(chan struct{}, 100)} }

func (b *notifyBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n, err := b.buf.Write(p)
	b.writes <- struct{}{}
	return n, err
}

func (b *notifyBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// watchOpened makes the fake clientset report each Deployment watch once it
// is registered with the tracker, so a test changes objects only when the
// command can see the change.
func watchOpened(cs *fake.Clientset) <-chan struct{} {
	opened := make(chan struct{}, 10)
	cs.PrependWatchReactor("deployments", func(action k8stesting.Action) (bool, watch.Interface, error) {
		a := action.(k8stesting.WatchActionImpl)
		w, err := cs.Tracker().Watch(a.GetResource(), a.GetNamespace(), a.ListOptions)
		opened <- struct{}{}
		return true, w, err
	})
	return opened
}

// waitFor fails the test if ch does not deliver within a generous bound; the
// bound only guards against a hang, it does not pace the test.
func waitFor[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
	var zero T
	return zero
}

func updateDeployment(t *testing.T, cs *fake.Clientset, name string, change func(d *appsv1.Deployment)) {
	t.Helper()
	d := getDeployment(t, cs, name)
	change(d)
	if err := cs.Tracker().Update(appsv1.SchemeGroupVersion.WithResource("deployments"), d, ns); err != nil {
		t.Fatal(err)
	}
}

// runStatusAsync starts status in the background with a notifying output.
func runStatusAsync(ctx context.Context, cs *fake.Clientset, args []string, flags func(o *StatusOptions)) (*notifyBuffer, <-chan error) {
	streams, _, _ := testStreams()
	out := newNotifyBuffer()
	streams.Out = out
	o := NewStatusOptions(streams)
	o.Now, o.Namespace, o.Client = clock, ns, cs
	flags(o)
	done := make(chan error, 1)
	go func() {
		o.Getter = testNames()
		err := o.complete(args)
		if err == nil {
			err = o.Validate()
		}
		if err == nil {
			err = o.Run(ctx)
		}
		done <- err
	}()
	return out, done
}

// serverWatches makes every Deployment watch of cs one the test drives as
// the API server would, and reports each as it opens with the resource
// version it was asked to start from.
func serverWatches(cs *fake.Clientset) <-chan openedWatch {
	opened := make(chan openedWatch, 10)
	cs.PrependWatchReactor("deployments", func(action k8stesting.Action) (bool, watch.Interface, error) {
		w := watch.NewFake()
		opened <- openedWatch{w: w, resourceVersion: action.(k8stesting.WatchActionImpl).ListOptions.ResourceVersion}
		return true, w, nil
	})
	return opened
}

type openedWatch struct {
	w               *watch.FakeWatcher
	resourceVersion string
}

func TestStatusWatchRedraws(t *testing.T) {
	cs := fake.NewClientset(heldWeb(t)...)
	opened := watchOpened(cs)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out, done := runStatusAsync(ctx, cs, []string{"web"}, func(o *StatusOptions) { o.Watch = true })
	waitFor(t, out.writes, "the first drawing")
	waitFor(t, opened, "the Deployment watch")
	updateDeployment(t, cs, "web", func(d *appsv1.Deployment) {
		s, _ := grayapi.FormatStatus(grayapi.Status{Mode: grayapi.ModeInstead, Revision: 2, StableRevision: 1, Step: 1, Percent: 30, Target: 3,
			Phase: grayapi.PhaseProgressing, ObservedGeneration: 4, Message: "rolling to 30%"})
		d.Annotations[grayapi.StatusAnnotation] = s
		delete(d.Annotations, grayapi.ResumeAnnotation)
	})
	waitFor(t, out.writes, "the second drawing")
	cancel()
	if err := waitFor(t, done, "status to return"); err != nil {
		t.Fatalf("status -w ended with %v, want nil on interrupt", err)
	}
	checkGolden(t, "status", "watch", out.String())
}

func TestWatchFeedRestartsAfterWatchError(t *testing.T) {
	cs := fake.NewClientset(heldWeb(t)...)
	var fw *watch.FakeWatcher
	opened := make(chan struct{}, 10)
	cs.PrependWatchReactor("deployments", func(k8stesting.Action) (bool, watch.Interface, error) {
		fw = watch.NewFake()
		opened <- struct{}{}
		return true, fw, nil
	})
	reloads := 0
	ctx := context.Background()
	errCh := make(chan error, 1)
	specs := []watchSpec{{what: "deployment", resourceVersion: "100", open: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
		return cs.AppsV1().Deployments(ns).Watch(ctx, opts)
	}}}
	go func() {
		errCh <- watchLoop(ctx, specs, func() (bool, []watchSpec, error) {
			reloads++
			return reloads == 2, specs, nil
		})
	}()
	waitFor(t, opened, "the first watch")
	fw.Error(&metav1.Status{Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired, Message: "too old resource version"})
	waitFor(t, opened, "the watch reopened after the error")
	fw.Modify(deployment("web"))
	if err := waitFor(t, errCh, "the loop to end"); err != nil {
		t.Fatal(err)
	}
	if reloads != 2 {
		t.Fatalf("reloads = %d, want 2 (after the error, after the change)", reloads)
	}
}

// A watch refused for lack of permission ends the loop with the reason;
// retrying would not help.
func TestWatchForbiddenIsFatal(t *testing.T) {
	forbidden := apierrors.NewForbidden(appsv1.Resource("deployments"), "", errors.New("no watch permission"))
	err := watchLoop(context.Background(), []watchSpec{{what: "deployment default/web", resourceVersion: "1", open: func(context.Context, metav1.ListOptions) (watch.Interface, error) {
		return nil, forbidden
	}}}, func() (bool, []watchSpec, error) { t.Fatal("reload called"); return false, nil, nil })
	if !apierrors.IsForbidden(err) || err.Error() != "watching deployment default/web: deployments.apps is forbidden: no watch permission" {
		t.Fatalf("err = %v", err)
	}
}

// status -w of the list outlives a watch the API server closes: the change
// after it is drawn, and only an interrupt ends it.
func TestStatusWatchCarriesOnWhenTheServerClosesTheWatch(t *testing.T) {
	cs := fake.NewClientset(heldWeb(t)...)
	opened := serverWatches(cs)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out, done := runStatusAsync(ctx, cs, nil, func(o *StatusOptions) { o.Watch = true })
	waitFor(t, out.writes, "the first drawing")
	first := waitFor(t, opened, "the Deployment watch")
	first.w.Stop()

	var second openedWatch
	select {
	case err := <-done:
		t.Fatalf("status -w returned %v when the server closed its watch", err)
	case second = <-opened:
	case <-time.After(10 * time.Second):
		t.Fatal("timed out waiting for the watch to be reopened")
	}
	if second.resourceVersion != first.resourceVersion {
		t.Fatalf("watch reopened from %q, want %q (nothing seen since the list)", second.resourceVersion, first.resourceVersion)
	}
	updateDeployment(t, cs, "web", func(d *appsv1.Deployment) {
		s, _ := grayapi.FormatStatus(grayapi.Status{Mode: grayapi.ModeInstead, Revision: 2, StableRevision: 1, Step: 1, Percent: 30, Target: 3,
			Phase: grayapi.PhaseProgressing, ObservedGeneration: 4})
		d.Annotations[grayapi.StatusAnnotation] = s
	})
	second.w.Modify(getDeployment(t, cs, "web"))
	waitFor(t, out.writes, "the second drawing")
	cancel()
	if err := waitFor(t, done, "status to return"); err != nil {
		t.Fatalf("status -w ended with %v, want nil on interrupt", err)
	}
	want := "NAME   PHASE   STEP   HOLD-POINTS   TARGET   UPDATED   AVAILABLE   REPLICAS   REVISION   HELD\n" +
		"web    Held    1/3    10,30,60      1        1         10          10         2          5m\n" +
		"\n" +
		"NAME   PHASE         STEP   HOLD-POINTS   TARGET   UPDATED   AVAILABLE   REPLICAS   REVISION   HELD\n" +
		"web    Progressing   2/3    10,30,60      3        1         10          10         2          -\n"
	if out.String() != want {
		t.Errorf("output:\n%s\nwant:\n%s", out, want)
	}
}
