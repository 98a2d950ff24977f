package e2e

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/kubegray/kubectl-gray/internal/testutil"
	"github.com/kubegray/kubectl-gray/pkg/deployutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
	"github.com/kubegray/kubectl-gray/plugin"
)

// TestRestart runs `kubectl gray restart` through kubectl on a rollout held
// at 20% of 10 (maxUnavailable 25%: two pods at a time), in instead mode and
// in alongside mode (where the limit is read from the saved strategy): every
// pod is replaced by a new one, the ReplicaSets keep their names and sizes,
// the Deployment its generation, template and revision, the rollout stays
// Held, and a watch of the pods never sees more than two unavailable. A dry
// run before it evicts nothing; a step in motion is refused (instead mode).
func TestRestart(t *testing.T) {
	for _, m := range canaryModes {
		t.Run(m.name, func(t *testing.T) {
			c := m.start(t)
			e := m.env(t, c, "restart")
			u := newPluginUser(t, c, e.ns)
			held := grayState{phase: grayapi.PhaseHeld, newSpec: 2, oldTotal: 8, paused: true}

			e.startStable(testutil.GrayDeployment("web", 10, "20"))
			u.must("gray", "set", "web", "20", "--image", "app=nginx:1.26")
			u.must("gray", "status", "web", "--until", "held", "--timeout", "60s")
			e.settledNow("web", held)
			before := e.get("web")
			rsBefore := replicaSetSizes(t, e.client, before)
			podsBefore := podUIDs(t, e.client, e.ns)
			if len(podsBefore) != 10 {
				t.Fatalf("%d pods before the restart, want 10", len(podsBefore))
			}

			out := u.must("gray", "restart", "web", "--dry-run")
			if n := strings.Count(out, "\nbatch "); n != 5 || lastLine(out) != "deployment.apps/web restart planned: 10 pods in 5 batches (dry run)" {
				t.Errorf("dry run printed %d batches, want 5:\n%s", n, out)
			}
			if got := podUIDs(t, e.client, e.ns); !maps.Equal(got, podsBefore) {
				t.Fatalf("dry run changed the pods: %v, was %v", got, podsBefore)
			}

			w := watchUnavailable(t, e.client, e.ns, "app=web", 10)
			out = u.must("gray", "restart", "web", "--timeout", "60s")
			worst, events := w.stop()
			if n := strings.Count(out, " evicted\n"); n != 10 || lastLine(out) != "deployment.apps/web restarted: 10 pods evicted and replaced in 5 batches, no new revision" {
				t.Errorf("restart printed %d evictions, want 10:\n%s", n, out)
			}
			if !strings.Contains(out, "Order: replicaset "+rsNameOf(t, e, 2)+" (canary, revision 2, 2 pods), then replicaset "+rsNameOf(t, e, 1)+" (stable, revision 1, 8 pods)\n") {
				t.Errorf("restart did not say canary first, then stable:\n%s", out)
			}
			if worst > 2 || worst == 0 {
				t.Errorf("the pod watch saw at most %d pods unavailable in %d events, want 1 or 2", worst, events)
			}
			t.Logf("pod watch: %d events, at most %d unavailable", events, worst)

			after := e.get("web")
			e.settledNow("web", held)
			if after.Generation != before.Generation || !deployutil.EqualIgnoreHash(&after.Spec.Template, &before.Spec.Template) ||
				after.Annotations[deployutil.RevisionAnnotation] != before.Annotations[deployutil.RevisionAnnotation] {
				t.Errorf("restart changed the Deployment: generation %d→%d, revision %s→%s, template %v→%v", before.Generation, after.Generation,
					before.Annotations[deployutil.RevisionAnnotation], after.Annotations[deployutil.RevisionAnnotation], before.Spec.Template, after.Spec.Template)
			}
			if got := replicaSetSizes(t, e.client, after); !maps.Equal(got, rsBefore) {
				t.Errorf("ReplicaSets after the restart %v, want %v", got, rsBefore)
			}
			eventually(t, 30*time.Second, "10 new pods ready", func() (bool, string) {
				got := podUIDs(t, e.client, e.ns)
				for uid := range got {
					if podsBefore[uid] != "" {
						return false, fmt.Sprintf("pod %s is still there", podsBefore[uid])
					}
				}
				return len(got) == 10 && readyPods(t, e.client, e.ns) == 10, fmt.Sprintf("%d pods, %d ready", len(got), readyPods(t, e.client, e.ns))
			})
			if m.alongside {
				// Alongside mode must not leave a Deployment taken over.
				e.finish("web", 10)
				return
			}

			// A step in motion (a new canary whose pods never become ready)
			// is refused, and nothing is evicted.
			e.do(breakPods("web", "nginx:1.27"))
			eventually(t, 30*time.Second, "the new rollout Progressing", func() (bool, string) {
				d := e.get("web")
				st := e.grayStatus(d)
				return st.Phase == grayapi.PhaseProgressing && st.ObservedGeneration == d.Generation, fmt.Sprintf("%+v", st)
			})
			// The rollout itself takes old pods down meanwhile, so what the
			// restart did is read from its output: every eviction prints a line.
			r := u.fails(plugin.ExitFailure, []string{"deployment " + e.ns + "/web is not held (phase Progressing)", "kubectl gray status web --until held"},
				"gray", "restart", "web")
			if r.stdout != "" {
				t.Errorf("refused restart printed %q", r.stdout)
			}
		})
	}
}

// replicaSetSizes maps the names of d's ReplicaSets to their spec.replicas.
func replicaSetSizes(t *testing.T, client kubernetes.Interface, d *appsv1.Deployment) map[string]int32 {
	t.Helper()
	sizes := map[string]int32{}
	for _, rs := range ownedReplicaSets(t, client, d) {
		sizes[rs.Name] = replicasOf(rs.Spec.Replicas)
	}
	return sizes
}

func rsNameOf(t *testing.T, e *grayEnv, revision int64) string {
	t.Helper()
	return e.replicaSetOf("web", revision).Name
}

// podUIDs maps the UIDs of the pods of ns that are not terminating to their names.
func podUIDs(t *testing.T, client kubernetes.Interface, ns string) map[types.UID]string {
	t.Helper()
	list, err := client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[types.UID]string{}
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil {
			out[p.UID] = p.Name
		}
	}
	return out
}

func readyPods(t *testing.T, client kubernetes.Interface, ns string) int {
	t.Helper()
	list, err := client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for i := range list.Items {
		if podReady(&list.Items[i]) {
			n++
		}
	}
	return n
}

// podReady is a pod that counts as available (the Deployments here have no
// minReadySeconds): ready and not terminating.
func podReady(p *corev1.Pod) bool {
	return p.DeletionTimestamp == nil && slices.ContainsFunc(p.Status.Conditions, func(c corev1.PodCondition) bool {
		return c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue
	})
}

// unavailableWatch follows a Deployment's pods through a watch and records
// the most that were unavailable at once: its replicas less the pods ready
// and not terminating, as a rolling update counts them.
type unavailableWatch struct {
	t        *testing.T
	replicas int
	cancel   context.CancelFunc
	wg       sync.WaitGroup

	mu      sync.Mutex
	pods    map[string]*corev1.Pod
	worst   int
	events  int
	problem string
}

func watchUnavailable(t *testing.T, client kubernetes.Interface, ns, selector string, replicas int) *unavailableWatch {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w := &unavailableWatch{t: t, replicas: replicas, cancel: cancel, pods: map[string]*corev1.Pod{}}
	list, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatal(err)
	}
	for i := range list.Items {
		w.pods[list.Items[i].Name] = &list.Items[i]
	}
	w.note()
	watcher, err := client.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{LabelSelector: selector, ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		defer watcher.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-watcher.ResultChan():
				if !ok {
					w.mu.Lock()
					w.problem = "the pod watch ended before the restart did"
					w.mu.Unlock()
					return
				}
				w.record(ev)
			}
		}
	}()
	t.Cleanup(func() { w.cancel(); w.wg.Wait() })
	return w
}

func (w *unavailableWatch) record(ev watch.Event) {
	w.mu.Lock()
	defer w.mu.Unlock()
	p, ok := ev.Object.(*corev1.Pod)
	if !ok {
		w.problem = fmt.Sprintf("pod watch event %s of %T", ev.Type, ev.Object)
		return
	}
	w.events++
	if ev.Type == watch.Deleted {
		delete(w.pods, p.Name)
	} else {
		w.pods[p.Name] = p
	}
	w.note()
}

// note takes the count of unavailable pods now; w.mu is held or not yet shared.
func (w *unavailableWatch) note() {
	ready := 0
	for _, p := range w.pods {
		if podReady(p) {
			ready++
		}
	}
	w.worst = max(w.worst, w.replicas-ready)
}

// stop ends the watch and returns the most pods seen unavailable at once and
// the number of events; a watch that failed fails the test.
func (w *unavailableWatch) stop() (int, int) {
	w.t.Helper()
	w.cancel()
	w.wg.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.problem != "" {
		w.t.Errorf("pod watch: %s", w.problem)
	}
	return w.worst, w.events
}
