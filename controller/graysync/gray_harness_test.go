package graysync

import (
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/kubegray/kubectl-gray/internal/testutil"
	"github.com/kubegray/kubectl-gray/pkg/deployutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// grayWorld is a small emulation of what surrounds the controller in a cluster, for
// sync-by-sync gray scenarios over the fake clientset:
//
//   - the API server's write semantics that matter here: resourceVersion conflicts,
//     deployments/status keeping spec and labels, main-resource writes keeping status and
//     bumping generation on spec or annotation changes, ReplicaSet creation timestamps;
//   - the informers, refreshed from the server before every sync (ready() and the user's edits
//     go straight to the server, as the ReplicaSet controller and kubectl would);
//   - the ReplicaSet controller and kubelet: ready() makes every ReplicaSet's pods exist and
//     be available.
//
// Every ReplicaSet write the controller makes is checked against the invariant: no write
// raises the ReplicaSet running the Deployment's template above the target the scenario
// computed by hand (cap), nor above the target recorded in kubegray.io/status at that instant.
// A lowered hold point leaves the new ReplicaSet above the new target until it has come
// down; writes that shrink it (or leave its size alone) on the way are not overshoot.
type grayWorld struct {
	t        *testing.T
	f        *fixture
	rv       int64
	created  time.Time
	cap      int32
	rsWrites []rsWrite
	events   []string
	// perSync is every sync's writes, by kind, in the order the syncs ran.
	perSync []syncWrites
	// allowConflicts lets a sync fail with a Conflict (requeued in a cluster). The gray path
	// never conflicts with itself, so only scenarios that hand over to upstream set it.
	allowConflicts bool
}

// rsWrite is one ReplicaSet write of the controller.
type rsWrite struct {
	image    string
	replicas int32
}

const grayKey = "default/web"

var (
	deploymentsResource = appsv1.SchemeGroupVersion.WithResource("deployments")
	replicaSetsResource = appsv1.SchemeGroupVersion.WithResource("replicasets")
)

// newGrayWorld starts from d fully rolled out on revision 1 (image v1, all pods available).
func newGrayWorld(t *testing.T, d *appsv1.Deployment) *grayWorld {
	t.Helper()
	return newGrayWorldIn(t, d, Options{})
}

// newGrayWorldIn is newGrayWorld with the controller in the mode and takeover of opts.
func newGrayWorldIn(t *testing.T, d *appsv1.Deployment, opts Options) *grayWorld {
	t.Helper()
	w := &grayWorld{t: t, f: newFixtureIn(t, opts), created: time.Date(2026, 11, 1, 11, 0, 0, 0, time.UTC), cap: -1}
	w.installReactors()

	replicas := *d.Spec.Replicas
	rs := testutil.ReplicaSet("web-v1", replicas, testutil.RSOwnedBy(d), testutil.RSRevision(1), testutil.RSReplicasAnnotations(replicas, replicas+surgeOf(d)))
	rs.Labels["pod-template-hash"] = "v1"
	rs.CreationTimestamp = metav1.NewTime(w.created)
	rs.Generation = 1
	ready(rs)
	d.Annotations["deployment.kubernetes.io/revision"] = "1"
	d.Status = appsv1.DeploymentStatus{
		ObservedGeneration: d.Generation, Replicas: replicas, UpdatedReplicas: replicas,
		ReadyReplicas: replicas, AvailableReplicas: replicas, TerminatingReplicas: ptr.To[int32](0),
	}
	w.put(d)
	w.put(rs)
	return w
}

func surgeOf(d *appsv1.Deployment) int32 {
	s, _ := intstr.GetScaledValueFromIntOrPercent(d.Spec.Strategy.RollingUpdate.MaxSurge, int(*d.Spec.Replicas), true)
	return int32(s)
}

// ready makes all pods of rs exist and be available.
func ready(rs *appsv1.ReplicaSet) {
	n := *rs.Spec.Replicas
	rs.Status = appsv1.ReplicaSetStatus{
		Replicas: n, FullyLabeledReplicas: n, ReadyReplicas: n, AvailableReplicas: n,
		ObservedGeneration: rs.Generation, TerminatingReplicas: ptr.To[int32](0),
	}
}

// put stores obj on the server under a fresh resourceVersion, bypassing the client, as a
// person's write (field manager testUserManager).
func (w *grayWorld) put(obj runtime.Object) {
	w.t.Helper()
	w.putAs(obj, testUserManager)
}

// testUserManager is the field manager of the writes a test makes as a person.
const testUserManager = "kubectl-edit"

// putAs is put with the given field manager, so that managedFields say who wrote what as the
// API server records it.
func (w *grayWorld) putAs(obj runtime.Object, manager string) {
	w.t.Helper()
	w.rv++
	accessor, err := meta.Accessor(obj)
	if err != nil {
		w.t.Fatal(err)
	}
	accessor.SetResourceVersion(strconv.FormatInt(w.rv, 10))
	gvr := replicaSetsResource
	if _, ok := obj.(*appsv1.Deployment); ok {
		gvr = deploymentsResource
	}
	tracker := w.f.client.Tracker()
	if _, err := tracker.Get(gvr, accessor.GetNamespace(), accessor.GetName()); apierrors.IsNotFound(err) {
		err = tracker.Create(gvr, obj, accessor.GetNamespace(), metav1.CreateOptions{FieldManager: manager})
		if err != nil {
			w.t.Fatal(err)
		}
		return
	}
	if err := tracker.Update(gvr, obj, accessor.GetNamespace(), metav1.UpdateOptions{FieldManager: manager}); err != nil {
		w.t.Fatal(err)
	}
}

// installReactors puts the API server semantics in front of the fake clientset's tracker.
func (w *grayWorld) installReactors() {
	client := w.f.client
	conflict := func(gr string, name, sent, stored string) error {
		if sent != "" && sent != stored {
			return apierrors.NewConflict(appsv1.Resource(gr), name, fmt.Errorf("resourceVersion %s is stale, stored %s", sent, stored))
		}
		return nil
	}
	client.PrependReactor("update", "deployments", func(action clienttesting.Action) (bool, runtime.Object, error) {
		sent := action.(clienttesting.UpdateAction).GetObject().(*appsv1.Deployment)
		stored := w.deployment()
		if err := conflict("deployments", sent.Name, sent.ResourceVersion, stored.ResourceVersion); err != nil {
			return true, nil, err
		}
		next := sent.DeepCopy()
		if action.GetSubresource() == "status" {
			// The status strategy keeps spec and labels; annotations come from the request.
			next.Spec = stored.Spec
			next.Labels = stored.Labels
			next.Generation = stored.Generation
		} else {
			next.Status = stored.Status
			next.Generation = stored.Generation
			if !apiequality.Semantic.DeepEqual(next.Spec, stored.Spec) || !apiequality.Semantic.DeepEqual(next.Annotations, stored.Annotations) {
				next.Generation++
			}
		}
		w.putAs(next, fieldManagerOf(action))
		return true, w.deployment(), nil
	})
	client.PrependReactor("update", "replicasets", func(action clienttesting.Action) (bool, runtime.Object, error) {
		sent := action.(clienttesting.UpdateAction).GetObject().(*appsv1.ReplicaSet)
		stored := w.replicaSet(sent.Name)
		if err := conflict("replicasets", sent.Name, sent.ResourceVersion, stored.ResourceVersion); err != nil {
			return true, nil, err
		}
		next := sent.DeepCopy()
		next.Status = stored.Status
		next.CreationTimestamp = stored.CreationTimestamp
		next.Generation = stored.Generation
		if !apiequality.Semantic.DeepEqual(next.Spec, stored.Spec) {
			next.Generation++
		}
		w.checkWrite(next, *stored.Spec.Replicas)
		w.putAs(next, fieldManagerOf(action))
		return true, w.replicaSet(next.Name), nil
	})
	client.PrependReactor("create", "replicasets", func(action clienttesting.Action) (bool, runtime.Object, error) {
		next := action.(clienttesting.CreateAction).GetObject().(*appsv1.ReplicaSet).DeepCopy()
		if _, err := client.Tracker().Get(replicaSetsResource, next.Namespace, next.Name); err == nil {
			return true, nil, apierrors.NewAlreadyExists(appsv1.Resource("replicasets"), next.Name)
		}
		w.created = w.created.Add(time.Minute)
		next.CreationTimestamp = metav1.NewTime(w.created)
		next.UID = types.UID("uid-" + next.Name)
		next.Generation = 1
		w.checkWrite(next, -1)
		w.putAs(next, fieldManagerOf(action))
		return true, w.replicaSet(next.Name), nil
	})
}

// fieldManagerOf is the field manager a create or update was sent with.
func fieldManagerOf(action clienttesting.Action) string {
	switch a := action.(type) {
	case clienttesting.UpdateActionImpl:
		return a.UpdateOptions.FieldManager
	case clienttesting.CreateActionImpl:
		return a.CreateOptions.FieldManager
	}
	return ""
}

// checkWrite asserts the gray invariant on one ReplicaSet write (storedReplicas is the size
// before it, −1 for a create) and records it.
func (w *grayWorld) checkWrite(rs *appsv1.ReplicaSet, storedReplicas int32) {
	w.t.Helper()
	image := rs.Spec.Template.Spec.Containers[0].Image
	w.rsWrites = append(w.rsWrites, rsWrite{image: image, replicas: *rs.Spec.Replicas})
	d := w.deployment()
	if !deployutil.EqualIgnoreHash(&rs.Spec.Template, &d.Spec.Template) {
		return // an old ReplicaSet
	}
	if storedReplicas >= 0 && *rs.Spec.Replicas <= storedReplicas {
		return // it did not grow
	}
	if w.cap >= 0 && *rs.Spec.Replicas > w.cap {
		w.t.Errorf("OVERSHOOT: new ReplicaSet %s (%s) written with %d replicas, hand-computed target %d", rs.Name, image, *rs.Spec.Replicas, w.cap)
	}
	value, ok := d.Annotations[grayapi.StatusAnnotation]
	if !ok {
		return
	}
	st, err := grayapi.ParseStatus(value)
	if err != nil {
		w.t.Errorf("unreadable %s %q: %v", grayapi.StatusAnnotation, value, err)
		return
	}
	if rev := rs.Annotations["deployment.kubernetes.io/revision"]; rev == strconv.FormatInt(st.Revision, 10) && *rs.Spec.Replicas > st.Target {
		w.t.Errorf("new ReplicaSet %s written with %d replicas while the Deployment records target %d for revision %s",
			rs.Name, *rs.Spec.Replicas, st.Target, rev)
	}
}

func (w *grayWorld) deployment() *appsv1.Deployment {
	w.t.Helper()
	obj, err := w.f.client.Tracker().Get(deploymentsResource, "default", "web")
	if err != nil {
		w.t.Fatal(err)
	}
	return obj.(*appsv1.Deployment)
}

func (w *grayWorld) replicaSet(name string) *appsv1.ReplicaSet {
	w.t.Helper()
	obj, err := w.f.client.Tracker().Get(replicaSetsResource, "default", name)
	if err != nil {
		w.t.Fatal(err)
	}
	return obj.(*appsv1.ReplicaSet)
}

// canaryName is the name of the one ReplicaSet that is not web-v1: the canary of a world rolled
// once past its first revision.
func (w *grayWorld) canaryName() string {
	w.t.Helper()
	for _, rs := range w.replicaSets() {
		if rs.Name != "web-v1" {
			return rs.Name
		}
	}
	w.t.Fatal("no ReplicaSet but web-v1")
	return ""
}

func (w *grayWorld) replicaSets() []*appsv1.ReplicaSet {
	w.t.Helper()
	list, err := w.f.client.Tracker().List(replicaSetsResource, appsv1.SchemeGroupVersion.WithKind("ReplicaSet"), "default")
	if err != nil {
		w.t.Fatal(err)
	}
	var out []*appsv1.ReplicaSet
	for i := range list.(*appsv1.ReplicaSetList).Items {
		out = append(out, &list.(*appsv1.ReplicaSetList).Items[i])
	}
	return out
}

// refreshCaches makes the informers catch up with the server.
func (w *grayWorld) refreshCaches() {
	w.t.Helper()
	var rss []any
	for _, rs := range w.replicaSets() {
		rss = append(rss, rs)
	}
	if err := w.f.factory.Apps().V1().ReplicaSets().Informer().GetIndexer().Replace(rss, ""); err != nil {
		w.t.Fatal(err)
	}
	// The fake records a patch as an update by a manager of its own, so the managed fields it
	// keeps cannot say who wrote kubegray.io/status; the cache has none, which gray_forged.go
	// takes as "ours" (the ownership rules are tested in gray_forged_test.go, and on a real API
	// server by the e2e suite).
	d := w.deployment()
	d.ManagedFields = nil
	if err := w.f.factory.Apps().V1().Deployments().Informer().GetIndexer().Replace([]any{d}, ""); err != nil {
		w.t.Fatal(err)
	}
}

// sync runs one sync over fresh caches and returns the actions it issued.
func (w *grayWorld) sync() []clienttesting.Action {
	w.t.Helper()
	w.refreshCaches()
	before := len(w.f.client.Actions())
	if err := w.f.dc.Sync(w.f.ctx, grayKey); err != nil && !(w.allowConflicts && apierrors.IsConflict(err)) {
		w.t.Fatalf("syncDeployment: %v", err)
	}
	w.events = append(w.events, w.f.events()...)
	actions := w.f.client.Actions()[before:]
	w.perSync = append(w.perSync, writesBy(actions))
	return actions
}

// conflictNextStatusWrite makes the next status write answer 409, as one sent against a version
// someone else replaced would, and lets syncs fail with it; the flag it returns says whether one
// did.
func (w *grayWorld) conflictNextStatusWrite() *bool {
	conflicted := false
	w.f.client.PrependReactor("update", "deployments", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "status" || conflicted {
			return false, nil, nil
		}
		conflicted = true
		return true, nil, apierrors.NewConflict(appsv1.Resource("deployments"), "web", errors.New("a status written in between"))
	})
	w.allowConflicts = true
	return &conflicted
}

// ready makes every ReplicaSet's pods exist and be available.
func (w *grayWorld) ready() {
	w.t.Helper()
	for _, rs := range w.replicaSets() {
		if reflect.DeepEqual(rs.Status, readyStatus(rs)) {
			continue
		}
		ready(rs)
		w.put(rs)
	}
}

func readyStatus(rs *appsv1.ReplicaSet) appsv1.ReplicaSetStatus {
	c := rs.DeepCopy()
	ready(c)
	return c.Status
}

// step is one sync followed by every pod becoming available.
func (w *grayWorld) step() []clienttesting.Action {
	w.t.Helper()
	actions := w.sync()
	w.ready()
	return actions
}

// settle steps until a sync writes nothing.
func (w *grayWorld) settle() {
	w.t.Helper()
	for range 40 {
		if writes(w.step()) == 0 {
			return
		}
	}
	w.t.Fatalf("no steady state after 40 syncs; sizes %v", w.sizes())
}

// writes counts the write actions among actions.
func writes(actions []clienttesting.Action) int {
	n := 0
	for _, a := range actions {
		switch a.GetVerb() {
		case "create", "update", "patch", "delete":
			n++
		}
	}
	return n
}

// syncWrites is one sync's writes by kind: deployment are main-resource Deployment writes (the
// hold, a consumed request, an undo), of which held send spec.paused true; status are Deployment
// status writes; created and resized are ReplicaSet creates and updates; other are ReplicaSet
// patches (the abort record, the stable label) and deletes.
type syncWrites struct {
	deployment, held, status, created, resized, other int
}

// writesBy counts the writes among one sync's actions by kind.
func writesBy(actions []clienttesting.Action) syncWrites {
	var n syncWrites
	for _, a := range actions {
		switch v, r := a.GetVerb(), a.GetResource().Resource; {
		case v == "update" && r == "deployments" && a.GetSubresource() == "status":
			n.status++
		case v == "update" && r == "deployments":
			n.deployment++
			if a.(clienttesting.UpdateAction).GetObject().(*appsv1.Deployment).Spec.Paused {
				n.held++
			}
		case v == "create" && r == "replicasets":
			n.created++
		case v == "update" && r == "replicasets":
			n.resized++
		case v == "patch" || v == "delete" || v == "create" || v == "update":
			n.other++
		}
	}
	return n
}

// total is every write of n.
func (n syncWrites) total() int { return n.deployment + n.status + n.created + n.resized + n.other }

// edit changes the Deployment like kubectl would (a main-resource write).
func (w *grayWorld) edit(mutate func(d *appsv1.Deployment)) {
	w.t.Helper()
	stored := w.deployment()
	d := stored.DeepCopy()
	mutate(d)
	if !apiequality.Semantic.DeepEqual(d.Spec, stored.Spec) || !apiequality.Semantic.DeepEqual(d.Annotations, stored.Annotations) {
		d.Generation++
	}
	w.put(d)
}

func (w *grayWorld) setImage(image string) {
	w.edit(func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = image })
}

func (w *grayWorld) setAnnotation(key, value string) {
	w.edit(func(d *appsv1.Deployment) { d.Annotations[key] = value })
}

// restart replaces the controller by a fresh one over the same API server, as after a crash
// or a leader change.
func (w *grayWorld) restart() {
	w.t.Helper()
	w.f.now = testNow
	w.f.start(Options{})
}

// sizes maps each ReplicaSet's image to its spec.replicas.
func (w *grayWorld) sizes() map[string]int32 {
	out := map[string]int32{}
	for _, rs := range w.replicaSets() {
		out[rs.Spec.Template.Spec.Containers[0].Image] = *rs.Spec.Replicas
	}
	return out
}

func (w *grayWorld) wantSizes(want map[string]int32) {
	w.t.Helper()
	if got := w.sizes(); !reflect.DeepEqual(got, want) {
		w.t.Fatalf("ReplicaSet sizes = %v, want %v", got, want)
	}
}

func (w *grayWorld) status() grayapi.Status {
	w.t.Helper()
	value, ok := w.deployment().Annotations[grayapi.StatusAnnotation]
	if !ok {
		w.t.Fatalf("no %s annotation", grayapi.StatusAnnotation)
	}
	st, err := grayapi.ParseStatus(value)
	if err != nil {
		w.t.Fatal(err)
	}
	return st
}

// wantState checks phase, paused, and the generation observed by both status and gray status.
func (w *grayWorld) wantState(phase grayapi.Phase, paused bool) {
	w.t.Helper()
	d := w.deployment()
	st := w.status()
	if st.Phase != phase || d.Spec.Paused != paused {
		w.t.Fatalf("phase %s paused %t (%s), want phase %s paused %t", st.Phase, d.Spec.Paused, st.Message, phase, paused)
	}
	if d.Status.ObservedGeneration != d.Generation || st.ObservedGeneration != d.Generation {
		w.t.Fatalf("generation %d observed %d by status and %d by %s", d.Generation, d.Status.ObservedGeneration, st.ObservedGeneration, grayapi.StatusAnnotation)
	}
	held := deployutilCondition(d, grayapi.ConditionGrayHeld)
	falseReason := string(phase)
	if phase == grayapi.PhaseDegraded {
		falseReason = "ProgressDeadlineExceeded"
	}
	switch {
	case held == nil:
		w.t.Fatalf("no GrayHeld condition")
	case phase == grayapi.PhaseHeld && (held.Status != corev1.ConditionTrue || held.Reason != grayapi.ReasonHoldPointReached):
		w.t.Fatalf("GrayHeld = %s/%s, want True/HoldPointReached", held.Status, held.Reason)
	case phase != grayapi.PhaseHeld && (held.Status != corev1.ConditionFalse || held.Reason != falseReason):
		w.t.Fatalf("GrayHeld = %s/%s, want False/%s", held.Status, held.Reason, falseReason)
	}
}

func deployutilCondition(d *appsv1.Deployment, t appsv1.DeploymentConditionType) *appsv1.DeploymentCondition {
	for i := range d.Status.Conditions {
		if d.Status.Conditions[i].Type == t {
			return &d.Status.Conditions[i]
		}
	}
	return nil
}

// takeEvents returns the events recorded since the last call, gray ones and scaling ones.
func (w *grayWorld) takeEvents() []string {
	out := w.events
	w.events = nil
	return out
}

// wantEvents checks that the wanted fragments appear in the events in order; consecutive
// fragments may come from the same event.
func (w *grayWorld) wantEvents(want ...string) {
	w.t.Helper()
	got := w.takeEvents()
	i := 0
	for _, e := range got {
		for i < len(want) && strings.Contains(e, want[i]) {
			i++
		}
	}
	if i < len(want) {
		w.t.Fatalf("events %q do not contain %q in order (missing %q)", got, want, want[i])
	}
}

// noFlapping checks that no ReplicaSet was scaled up and down (or down and up) within the
// writes recorded so far.
func (w *grayWorld) noFlapping() {
	w.t.Helper()
	seq := map[string][]int32{}
	for _, wr := range w.rsWrites {
		s := seq[wr.image]
		if len(s) == 0 || s[len(s)-1] != wr.replicas {
			seq[wr.image] = append(s, wr.replicas)
		}
	}
	images := make([]string, 0, len(seq))
	for image := range seq {
		images = append(images, image)
	}
	sort.Strings(images)
	for _, image := range images {
		s := seq[image]
		up, down := false, false
		for i := 1; i < len(s); i++ {
			up = up || s[i] > s[i-1]
			down = down || s[i] < s[i-1]
		}
		if up && down {
			w.t.Errorf("ReplicaSet %s scaled both ways: %v", image, s)
		}
	}
}

// verbsOf lists the actions of a sync without the live read of the Deployment.
func verbsOf(actions []clienttesting.Action) []string {
	var out []string
	for _, v := range verbs(actions) {
		if v != "get deployments" {
			out = append(out, v)
		}
	}
	return out
}
