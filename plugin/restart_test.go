package plugin

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/util/homedir"

	"github.com/kubegray/kubectl-gray/internal/testutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

var podsResource = corev1.SchemeGroupVersion.WithResource("pods")

// fakeReplicaSets plays the ReplicaSet controller and the kubelet for a fake
// clientset: an evicted pod is deleted and replaced by a pod that is not
// ready until two pod lists later, so a restart that did not wait for its
// replacements would be seen taking more pods down than its limit.
type fakeReplicaSets struct {
	t        *testing.T
	cs       *fake.Clientset
	replicas int

	mu sync.Mutex
	// lists counts pod lists; batches groups the evicted pods by the list
	// count they followed, i.e. by batch.
	lists   int
	batches [][]string
	// worstUnavailable is the most pods not ready right after an eviction.
	worstUnavailable int
	// refuse429 is how many evictions of a pod to refuse with 429 first
	// (-1: always), as a PodDisruptionBudget does.
	refuse429 map[string]int
	// starting counts the lists each replacement has been seen in.
	starting map[string]int
	// onEvict runs after each eviction, inside the fake's lock: it must use
	// the tracker.
	onEvict func(n int)
	evicted int
	created int
}

func newFakeReplicaSets(t *testing.T, d *appsv1.Deployment, rss ...*appsv1.ReplicaSet) *fakeReplicaSets {
	objs := []runtime.Object{d}
	for _, rs := range rss {
		objs = append(objs, rs)
		for i := range *rs.Spec.Replicas {
			p := pod(rs, string('a'+i), true, 0, time.Hour)
			p.UID = types.UID("uid-" + p.Name)
			objs = append(objs, p)
		}
	}
	f := &fakeReplicaSets{t: t, cs: fake.NewClientset(objs...), replicas: int(*d.Spec.Replicas), refuse429: map[string]int{}, starting: map[string]int{}}
	f.cs.PrependReactor("create", "pods", f.evict)
	f.cs.PrependReactor("list", "pods", f.list)
	return f
}

func (f *fakeReplicaSets) evict(action k8stesting.Action) (bool, runtime.Object, error) {
	if action.GetSubresource() != "eviction" {
		return false, nil, nil
	}
	ev := action.(k8stesting.CreateAction).GetObject().(*policyv1.Eviction)
	f.mu.Lock()
	defer f.mu.Unlock()
	if n := f.refuse429[ev.Name]; n != 0 {
		f.refuse429[ev.Name] = n - 1
		return true, nil, apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 0)
	}
	obj, err := f.cs.Tracker().Get(podsResource, ev.Namespace, ev.Name)
	if err != nil {
		return true, nil, err
	}
	old := obj.(*corev1.Pod)
	if uid := ev.DeleteOptions.Preconditions.UID; uid == nil || *uid != old.UID {
		f.t.Errorf("eviction of pod %s without its UID as precondition", ev.Name)
	}
	if err := f.cs.Tracker().Delete(podsResource, ev.Namespace, ev.Name); err != nil {
		return true, nil, err
	}
	f.created++
	repl := old.DeepCopy()
	repl.Name, repl.UID = fmt.Sprintf("web-%s-new%d", old.Labels["pod-template-hash"], f.created), types.UID(fmt.Sprintf("uid-new%d", f.created))
	repl.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}
	if err := f.cs.Tracker().Create(podsResource, repl, ev.Namespace); err != nil {
		return true, nil, err
	}
	f.starting[repl.Name] = 0
	for len(f.batches) <= f.lists {
		f.batches = append(f.batches, nil)
	}
	f.batches[f.lists] = append(f.batches[f.lists], ev.Name)
	f.worstUnavailable = max(f.worstUnavailable, f.replicas-f.readyPods())
	f.evicted++
	if f.onEvict != nil {
		f.onEvict(f.evicted)
	}
	return true, nil, nil
}

// list makes the replacements seen in two earlier lists ready, then lets
// the tracker answer.
func (f *fakeReplicaSets) list(k8stesting.Action) (bool, runtime.Object, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lists++
	for name, seen := range f.starting {
		if seen < 2 {
			f.starting[name] = seen + 1
			continue
		}
		obj, err := f.cs.Tracker().Get(podsResource, ns, name)
		if err != nil {
			f.t.Fatal(err)
		}
		p := obj.(*corev1.Pod).DeepCopy()
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		if err := f.cs.Tracker().Update(podsResource, p, ns); err != nil {
			f.t.Fatal(err)
		}
		delete(f.starting, name)
	}
	return false, nil, nil
}

func (f *fakeReplicaSets) readyPods() int {
	obj, err := f.cs.Tracker().List(podsResource, corev1.SchemeGroupVersion.WithKind("Pod"), ns)
	if err != nil {
		f.t.Fatal(err)
	}
	n := 0
	for _, p := range obj.(*corev1.PodList).Items {
		if slices.ContainsFunc(p.Status.Conditions, func(c corev1.PodCondition) bool {
			return c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue
		}) {
			n++
		}
	}
	return n
}

// evictedBatches are the batches as the fake saw them, empty ones dropped.
func (f *fakeReplicaSets) evictedBatches() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, b := range f.batches {
		if len(b) > 0 {
			out = append(out, strings.Join(b, " "))
		}
	}
	return out
}

// writes lists the actions that change a Deployment or a ReplicaSet.
func (f *fakeReplicaSets) writes() []string {
	var out []string
	for _, a := range f.cs.Actions() {
		if r := a.GetResource().Resource; (r == "deployments" || r == "replicasets") && a.GetVerb() != "get" && a.GetVerb() != "list" {
			out = append(out, a.GetVerb()+" "+r)
		}
	}
	return out
}

func runRestart(t *testing.T, f *fakeReplicaSets, set func(o *RestartOptions)) (string, string, error) {
	t.Helper()
	return runRestartOf(t, f, []string{"web"}, set)
}

// runRestartOf is runRestart with the arguments args.
func runRestartOf(t *testing.T, f *fakeReplicaSets, args []string, set func(o *RestartOptions)) (string, string, error) {
	t.Helper()
	streams, out, errOut := testStreams()
	o := NewRestartOptions(streams)
	o.Namespace, o.Client, o.Now = ns, f.cs, clock
	o.Interval, o.EvictRetry = time.Millisecond, time.Millisecond
	if set != nil {
		set(o)
	}
	server := deploymentLister(f.cs)
	defer server.Close()
	o.Getter = testGetter(server.URL)
	if err := o.complete(args); err != nil {
		return out.String(), errOut.String(), err
	}
	if err := o.Validate(); err != nil {
		return out.String(), errOut.String(), err
	}
	err := o.Run(context.Background())
	return out.String(), errOut.String(), err
}

// TestRestartHeld pins a held rollout's restart: the canary's pods first,
// then the stable ones, two at a time (25% of 10 rounds down to 2), each
// batch only once the one before is available again, every pod evicted by
// UID, and nothing written to the Deployment or its ReplicaSets.
func TestRestartHeld(t *testing.T) {
	d, canary, stable := restartHeldWeb(t)
	f := newFakeReplicaSets(t, d, stable, canary)
	out, errOut, err := runRestart(t, f, nil)
	if err != nil {
		t.Fatalf("%v\n%s%s", err, out, errOut)
	}
	want := []string{"web-7c9-a web-7c9-b", "web-5f4-a web-5f4-b", "web-5f4-c web-5f4-d", "web-5f4-e web-5f4-f", "web-5f4-g web-5f4-h"}
	if got := f.evictedBatches(); !slices.Equal(got, want) {
		t.Errorf("batches %q, want %q", got, want)
	}
	if f.worstUnavailable > 2 {
		t.Errorf("%d pods were unavailable at once, want at most 2", f.worstUnavailable)
	}
	if w := f.writes(); len(w) > 0 {
		t.Errorf("restart wrote %v", w)
	}
	checkGolden(t, "restart", "held", out)
}

// TestRestartSettled pins the restart of a Deployment that is not held but
// settled: its only ReplicaSet, one pod at a time (25% of 4 is 1).
func TestRestartSettled(t *testing.T) {
	d := deployment("web", testutil.WithReplicas(4), withCounts(4, 4, 4, 4))
	rs := replicaSet(d, "1", "5f4", "nginx:1.26", 4, 4, time.Hour)
	old := replicaSet(d, "0", "111", "nginx:1.25", 0, 0, 2*time.Hour)
	f := newFakeReplicaSets(t, d, old, rs)
	out, _, err := runRestart(t, f, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"web-5f4-a", "web-5f4-b", "web-5f4-c", "web-5f4-d"}
	if got := f.evictedBatches(); !slices.Equal(got, want) || f.worstUnavailable > 1 {
		t.Errorf("batches %q with %d unavailable at worst, want %q with 1", got, f.worstUnavailable, want)
	}
	if !strings.HasPrefix(out, "Restarting deployment.apps/web (settled on revision 1): 4 pods, at most 1 unavailable at a time (maxUnavailable 25% of 4 replicas)\nOrder: replicaset web-5f4 (revision 1, 4 pods)\n") {
		t.Errorf("output:\n%s", out)
	}
}

// TestRestartDryRun pins that a dry run prints the batches and evicts nothing, whether asked
// for as client or with kubectl's boolean form.
func TestRestartDryRun(t *testing.T) {
	for _, value := range []string{"client", "true"} {
		t.Run(value, func(t *testing.T) {
			d, canary, stable := restartHeldWeb(t)
			f := newFakeReplicaSets(t, d, stable, canary)
			out, _, err := runRestart(t, f, func(o *RestartOptions) { o.DryRun = value })
			if err != nil {
				t.Fatal(err)
			}
			if b := f.evictedBatches(); len(b) > 0 {
				t.Errorf("dry run evicted %q", b)
			}
			checkGolden(t, "restart", "dry-run", out)
		})
	}
}

// TestRestartPDBRefusalRetried pins that an eviction a PodDisruptionBudget
// refuses (429) is tried again, with one warning, and the restart goes on.
func TestRestartPDBRefusalRetried(t *testing.T) {
	d, canary, stable := restartHeldWeb(t)
	f := newFakeReplicaSets(t, d, stable, canary)
	f.refuse429["web-7c9-a"] = 3
	out, errOut, err := runRestart(t, f, nil)
	if err != nil {
		t.Fatalf("%v\n%s%s", err, out, errOut)
	}
	want := "pod/web-7c9-a: eviction refused, retrying every 1ms: Cannot evict pod as it would violate the pod's disruption budget.\n"
	if errOut != want {
		t.Errorf("stderr %q, want %q", errOut, want)
	}
	if !strings.Contains(out, "pod/web-7c9-a evicted\n") || !strings.HasSuffix(out, "deployment.apps/web restarted: 10 pods evicted and replaced in 5 batches, no new revision\n") {
		t.Errorf("output:\n%s", out)
	}
}

// TestRestartTimeout pins the end of --timeout: exit code 2, naming the pods
// left and what the restart waited for.
func TestRestartTimeout(t *testing.T) {
	d, canary, stable := restartHeldWeb(t)
	f := newFakeReplicaSets(t, d, stable, canary)
	f.refuse429["web-7c9-b"] = -1
	_, _, err := runRestart(t, f, func(o *RestartOptions) { o.Timeout = 50 * time.Millisecond })
	if ExitCode(err) != ExitTimeout {
		t.Fatalf("exit code %d (%v), want 2", ExitCode(err), err)
	}
	want := "timed out after 50ms restarting deployment default/web: 9 pods of 10 not restarted yet (web-5f4-a, web-5f4-b, web-5f4-c, web-5f4-d, web-5f4-e, web-5f4-f, web-5f4-g, web-5f4-h, web-7c9-b); waiting for a PodDisruptionBudget to allow evicting pod web-7c9-b: "
	if !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("error %q, want one starting %q", err, want)
	}
}

// TestRestartRefused pins the refusals: nothing is evicted.
func TestRestartRefused(t *testing.T) {
	d, canary, stable := restartHeldWeb(t)
	moving := deployment("web", testutil.WithGeneration(4, 4), withGray(t, "20", withPhase(grayapi.PhaseProgressing)))
	noRoom := d.DeepCopy()
	testutil.WithRollingUpdate(intstr.FromInt32(1), intstr.FromInt32(0))(noRoom)
	tests := []struct {
		name    string
		d       *appsv1.Deployment
		set     func(o *RestartOptions)
		wantErr string
	}{
		{name: "mid-step", d: moving, wantErr: "deployment default/web is not held (phase Progressing): a rollout step is moving"},
		{name: "maxUnavailable 0", d: noRoom, wantErr: "deployment default/web allows no unavailable pods (maxUnavailable 0 of 10 replicas is 0, maxSurge 1): its rolling updates surge instead, which a restart cannot do without resizing the ReplicaSets; give --max-unavailable N to take N pods down at a time"},
		{name: "bad --max-unavailable", d: d, set: func(o *RestartOptions) { o.MaxUnavailable = "0" }, wantErr: `invalid --max-unavailable "0": must be a number of pods of 1 or more, or a percentage from 1% to 100%`},
		{name: "server dry run", d: d, set: func(o *RestartOptions) { o.DryRun = "server" }, wantErr: "--dry-run=server is not supported by restart"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeReplicaSets(t, tt.d, stable.DeepCopy(), canary.DeepCopy())
			_, _, err := runRestart(t, f, tt.set)
			if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
				t.Fatalf("error %v, want one starting %q", err, tt.wantErr)
			}
			if b := f.evictedBatches(); len(b) > 0 {
				t.Errorf("refused restart evicted %q", b)
			}
		})
	}
	// --max-unavailable lets the Deployment of maxUnavailable 0 restart.
	f := newFakeReplicaSets(t, noRoom, stable.DeepCopy(), canary.DeepCopy())
	if _, _, err := runRestart(t, f, func(o *RestartOptions) { o.MaxUnavailable = "3" }); err != nil {
		t.Fatal(err)
	}
	if f.worstUnavailable > 3 || len(f.evictedBatches()) != 4 {
		t.Errorf("with --max-unavailable 3: batches %q, %d unavailable at worst", f.evictedBatches(), f.worstUnavailable)
	}
}

// TestRestartStopsWhenTheHoldEnds pins that a restart stops, naming the pods
// left, when the rollout leaves its hold under it.
func TestRestartStopsWhenTheHoldEnds(t *testing.T) {
	d, canary, stable := restartHeldWeb(t)
	f := newFakeReplicaSets(t, d, stable, canary)
	f.onEvict = func(n int) {
		if n != 3 {
			return
		}
		resumed := d.DeepCopy()
		withGray(t, "20,50", withPhase(grayapi.PhaseProgressing))(resumed)
		if err := f.cs.Tracker().Update(appsv1.SchemeGroupVersion.WithResource("deployments"), resumed, ns); err != nil {
			t.Error(err)
		}
	}
	_, _, err := runRestart(t, f, nil)
	want := "restart of deployment default/web stopped: deployment default/web is not held (phase Progressing)"
	if err == nil || !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), "; 6 pods of 10 not restarted yet (web-5f4-c, ") {
		t.Fatalf("error %v, want one starting %q and naming 6 pods left", err, want)
	}
	if ExitCode(err) != ExitFailure {
		t.Errorf("exit code %d, want 1", ExitCode(err))
	}
}

// TestRestartEvictionForbidden pins the message when RBAC lacks
// pods/eviction.
func TestRestartEvictionForbidden(t *testing.T) {
	d, canary, stable := restartHeldWeb(t)
	f := newFakeReplicaSets(t, d, stable, canary)
	f.cs.PrependReactor("create", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(corev1.Resource("pods/eviction"), "web-7c9-a", errors.New("no"))
	})
	_, _, err := runRestart(t, f, nil)
	want := "pod default/web-7c9-a: you may not evict pods in namespace default; ask for RBAC permission to create pods/eviction (check with 'kubectl auth can-i create pods/eviction -n default')"
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("error %v, want one starting %q", err, want)
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Code != http.StatusForbidden {
		t.Errorf("the API's error is not wrapped: %v", err)
	}
}

// TestRestartHelpAndCompletion pins the verb's help and its flags' completion.
func TestRestartHelpAndCompletion(t *testing.T) {
	out, _, err := runRoot("restart", "--help")
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "help", "restart", strings.ReplaceAll(out, homedir.HomeDir(), "$HOME"))
	out, _, err = runRoot("__complete", "restart", "web", "--dry-run=")
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "completion", "restart-dry-run-values", out)
}

// TestRestartSeveral pins restart of several Deployments, named or chosen with -l: each is
// restarted in turn with its own lines, and a failure is reported, naming the Deployment,
// after the others were restarted.
func TestRestartSeveral(t *testing.T) {
	d, canary, stable := restartHeldWeb(t)
	d.Labels = map[string]string{"tier": "front"}
	for _, tt := range []struct {
		name    string
		args    []string
		set     func(o *RestartOptions)
		wantErr string
	}{
		{name: "names", args: []string{"nope", "web"}, wantErr: nopeNotFound},
		{name: "selector", set: func(o *RestartOptions) { o.Selector = "tier=front" }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeReplicaSets(t, d.DeepCopy(), stable.DeepCopy(), canary.DeepCopy())
			out, _, err := runRestartOf(t, f, tt.args, tt.set)
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || err.Error() != tt.wantErr) {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
			if !strings.Contains(out, "deployment.apps/web restarted: 10 pods evicted and replaced") {
				t.Errorf("web was not restarted:\n%s", out)
			}
		})
	}
}
