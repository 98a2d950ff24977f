package graysync

import (
	"reflect"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubegray/kubectl-gray/controller/metrics"
	"github.com/kubegray/kubectl-gray/internal/testutil"
	"github.com/kubegray/kubectl-gray/pkg/deployutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// Every scenario below starts from "web" fully rolled out on image v1 (revision 1), syncs once
// so the controller records it as Complete, then changes the image. Sizes are written as
// {image: spec.replicas} and were computed by hand from the rules of gray-design.md, with
// R=10 and maxSurge/maxUnavailable 25%/25% (surge 3, unavailable 2) unless noted.

// startGray builds the world and takes the first sync: a complete Deployment seen for the first
// time is Complete, with itself as stable revision, and nothing is scaled.
func startGray(t *testing.T, d *appsv1.Deployment) *grayWorld {
	t.Helper()
	w := newGrayWorld(t, d)
	w.step()
	w.wantState(grayapi.PhaseComplete, false)
	if st := w.status(); st.Revision != 1 || st.StableRevision != 1 || st.Percent != 100 {
		t.Fatalf("first status = %+v, want revision 1, stable 1, percent 100", st)
	}
	if len(w.rsWrites) != 1 || w.rsWrites[0].replicas != *d.Spec.Replicas {
		t.Fatalf("first sync wrote ReplicaSets %v, want only the annotation sync of v1", w.rsWrites)
	}
	// First sight of a complete Deployment completes nothing.
	for _, e := range w.takeEvents() {
		if strings.Contains(e, grayapi.ReasonGrayComplete) {
			t.Fatalf("first sync emitted %q", e)
		}
	}
	return w
}

func sz(pairs ...any) map[string]int32 {
	out := map[string]int32{}
	for i := 0; i < len(pairs); i += 2 {
		out[pairs[i].(string)] = int32(pairs[i+1].(int))
	}
	return out
}

func TestGraySingleHold(t *testing.T) {
	w := startGray(t, testutil.GrayWeb(10, "20", testutil.WithProgressDeadline(600)))
	w.cap = 2 // ceil(10·20/100)
	w.setImage("v2")

	// Sync 1: the status moves to revision 2 first, v2 is created at min(3 surge, T 2) = 2,
	// v1 goes to 8 (min(12−8−2, 10−8) = 2 may go), and the rollout is paused in the same sync.
	actions := w.sync()
	if got, want := verbsOf(actions), []string{
		"update deployments/status", // gray status: revision 2, target 2
		"create replicasets",        // v2 at 2
		"update replicasets",        // v1 10 → 8
		"update deployments",        // paused, heldAt
		"update deployments/status", // counts, conditions, phase
	}; !reflect.DeepEqual(got, want) {
		t.Fatalf("sync 1 actions = %v, want %v", got, want)
	}
	w.wantSizes(sz("v1", 8, "v2", 2))
	w.wantState(grayapi.PhaseProgressing, true)
	// Reached, not yet held: none of the canary's pods is ready.
	w.wantEvents("Scaled up replica set", "GrayHolding web-", "reached 2/10 (20%); waiting for 2 of its pods to become ready")
	st := w.status()
	if st.Revision != 2 || st.StableRevision != 1 || st.Step != 0 || st.Percent != 20 || st.Target != 2 || st.HeldAt == nil {
		t.Fatalf("status after sync 1 = %+v", st)
	}
	if c := deployutilCondition(w.deployment(), appsv1.DeploymentProgressing); c == nil || c.Reason != "DeploymentPaused" {
		t.Fatalf("Progressing = %+v, want Unknown/DeploymentPaused while held", c)
	}
	w.ready()

	// Sync 2: the new pods are available and v1 is at 8 = R−T: Held, nothing to scale (the
	// held Deployment is not topped up to R+surge).
	if n := writes(w.step()); n != 1 {
		t.Fatalf("sync 2 made %d writes, want only the status", n)
	}
	w.wantSizes(sz("v1", 8, "v2", 2))
	w.wantState(grayapi.PhaseHeld, true)
	if c := deployutilCondition(w.deployment(), grayapi.ConditionGrayHeld); c.Message != "held at 20% (step 1/1): 2 of 10 replicas on revision 2; run kubectl gray resume" {
		t.Fatalf("GrayHeld message = %q", c.Message)
	}
	if n := writes(w.step()); n != 0 {
		t.Fatalf("a settled hold made %d writes", n)
	}

	// Resume: the last hold point, so the rest is upstream's rolling update (docs/worked-numbers.md: the rolling sequence).
	w.cap = 10
	w.setAnnotation(grayapi.ResumeAnnotation, "2:next")
	w.step()
	w.wantSizes(sz("v1", 8, "v2", 5))
	w.wantState(grayapi.PhaseProgressing, false)
	if _, ok := w.deployment().Annotations[grayapi.ResumeAnnotation]; ok {
		t.Fatal("the resume request was not consumed")
	}
	w.wantEvents("GrayResumed", "resumed at 20%: moving on to all replicas")
	// As upstream after a resume: Unknown/DeploymentResumed until progress is seen.
	if c := deployutilCondition(w.deployment(), appsv1.DeploymentProgressing); c == nil || c.Reason != "DeploymentResumed" {
		t.Fatalf("Progressing = %+v after resume, want DeploymentResumed", c)
	}
	for _, want := range []map[string]int32{sz("v1", 3, "v2", 5), sz("v1", 3, "v2", 10), sz("v1", 0, "v2", 10)} {
		w.step()
		w.wantSizes(want)
		if c := deployutilCondition(w.deployment(), appsv1.DeploymentProgressing); c == nil || c.Reason != "ReplicaSetUpdated" {
			t.Fatalf("Progressing = %+v while rolling, want ReplicaSetUpdated", c)
		}
	}
	w.step()
	w.wantState(grayapi.PhaseComplete, false)
	if st := w.status(); st.StableRevision != 2 || st.HeldAt != nil {
		t.Fatalf("complete status = %+v, want stable revision 2 and no heldAt", st)
	}
	w.wantEvents("GrayComplete")
	if c := deployutilCondition(w.deployment(), appsv1.DeploymentProgressing); c == nil || c.Reason != "NewReplicaSetAvailable" {
		t.Fatalf("Progressing = %+v when complete, want NewReplicaSetAvailable", c)
	}
	w.noFlapping()
}

func TestGraySteps(t *testing.T) {
	w := startGray(t, testutil.GrayWeb(10, "10,30,60"))
	resume := func() {
		t.Helper()
		w.setAnnotation(grayapi.ResumeAnnotation, "2:next")
	}
	w.setImage("v2")
	type stage struct {
		cap      int32
		resume   bool
		want     map[string]int32
		phase    grayapi.Phase
		paused   bool
		step     int32
		resumeTo string
	}
	// T(10%) = 1, T(30%) = 3, T(60%) = 6, then all 10.
	stages := []stage{
		{cap: 1, want: sz("v1", 9, "v2", 1), phase: grayapi.PhaseProgressing, paused: true, step: 0},
		{cap: 1, want: sz("v1", 9, "v2", 1), phase: grayapi.PhaseHeld, paused: true, step: 0},
		// Resume to 30%: unpause, v2 1 → min(1+3, 3) = 3, paused again in the same sync.
		{cap: 3, resume: true, want: sz("v1", 9, "v2", 3), phase: grayapi.PhaseProgressing, paused: true, step: 1, resumeTo: "to 30%"},
		// While held v1 shrinks to R−T = 7 (budget min(12−8, 9−7) = 2), then settles.
		{cap: 3, want: sz("v1", 7, "v2", 3), phase: grayapi.PhaseProgressing, paused: true, step: 1},
		{cap: 3, want: sz("v1", 7, "v2", 3), phase: grayapi.PhaseHeld, paused: true, step: 1},
		// Resume to 60%: v2 3 → min(3+3, 6) = 6, held; v1 7 → 4.
		{cap: 6, resume: true, want: sz("v1", 7, "v2", 6), phase: grayapi.PhaseProgressing, paused: true, step: 2, resumeTo: "to 60%"},
		{cap: 6, want: sz("v1", 4, "v2", 6), phase: grayapi.PhaseProgressing, paused: true, step: 2},
		{cap: 6, want: sz("v1", 4, "v2", 6), phase: grayapi.PhaseHeld, paused: true, step: 2},
		// Resume after the last point: upstream rolling, v2 6 → 9, v1 4 → 0, v2 → 10.
		{cap: 10, resume: true, want: sz("v1", 4, "v2", 9), phase: grayapi.PhaseProgressing, paused: false, step: 3, resumeTo: "to all replicas"},
		{cap: 10, want: sz("v1", 0, "v2", 9), phase: grayapi.PhaseProgressing, paused: false, step: 3},
		{cap: 10, want: sz("v1", 0, "v2", 10), phase: grayapi.PhaseProgressing, paused: false, step: 3},
		{cap: 10, want: sz("v1", 0, "v2", 10), phase: grayapi.PhaseComplete, paused: false, step: 3},
	}
	for i, s := range stages {
		w.cap = s.cap
		if s.resume {
			resume()
		}
		w.step()
		w.wantSizes(s.want)
		w.wantState(s.phase, s.paused)
		if st := w.status(); st.Step != s.step {
			t.Fatalf("stage %d: step %d, want %d", i, st.Step, s.step)
		}
		if s.resumeTo != "" {
			w.wantEvents("GrayResumed", s.resumeTo)
		}
	}
	w.noFlapping()
}

func TestGrayFenceposts(t *testing.T) {
	tests := []struct {
		name        string
		surge       intstr.IntOrString
		unavailable intstr.IntOrString
		// steps lists the sizes after each sync (pods made available between syncs).
		steps []map[string]int32
	}{
		{
			// minAvailable 9: old first (10−9 may go), then new, one at a time.
			name: "maxSurge 0, maxUnavailable 1", surge: intstr.FromInt32(0), unavailable: intstr.FromInt32(1),
			steps: []map[string]int32{sz("v1", 9, "v2", 0), sz("v1", 9, "v2", 1), sz("v1", 8, "v2", 1), sz("v1", 8, "v2", 2)},
		},
		{
			// Surge 10 would allow 10 new pods: capped at T = 2 at creation; unavailable 0
			// keeps v1 at 10 until the two are available.
			name: "maxSurge 100%", surge: intstr.FromString("100%"), unavailable: intstr.FromInt32(0),
			steps: []map[string]int32{sz("v1", 10, "v2", 2), sz("v1", 8, "v2", 2)},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := startGray(t, testutil.GrayWeb(10, "20", testutil.WithRollingUpdate(tc.surge, tc.unavailable)))
			w.cap = 2
			w.setImage("v2")
			for i, want := range tc.steps {
				w.step()
				if got := w.sizes(); !reflect.DeepEqual(got, want) {
					t.Fatalf("after sync %d: sizes %v, want %v", i+1, got, want)
				}
				// Paused in the very sync in which v2 reaches T, not one later.
				if paused := w.deployment().Spec.Paused; paused != (want["v2"] == 2) {
					t.Fatalf("after sync %d: paused %t with v2 at %d", i+1, paused, want["v2"])
				}
			}
			w.step()
			w.wantState(grayapi.PhaseHeld, true)
			w.noFlapping()
		})
	}
}

func TestGrayDegraded(t *testing.T) {
	w := startGray(t, testutil.GrayWeb(10, "20", testutil.WithProgressDeadline(600),
		testutil.WithRollingUpdate(intstr.FromInt32(0), intstr.FromInt32(1))))
	w.cap = 2
	w.setImage("v2")
	w.sync() // v2 created at 0, v1 10 → 9; the pods never become ready
	w.wantSizes(sz("v1", 9, "v2", 0))
	w.f.now = testNow.Add(601 * time.Second)
	w.sync()
	w.wantState(grayapi.PhaseDegraded, false)
	if c := deployutilCondition(w.deployment(), appsv1.DeploymentProgressing); c == nil || c.Reason != "ProgressDeadlineExceeded" {
		t.Fatalf("Progressing = %+v, want ProgressDeadlineExceeded", c)
	}
	// The spec still moved one step (10 − 9 leaves room for one new pod), as upstream's would.
	w.wantSizes(sz("v1", 9, "v2", 1))
}

func TestGraySmallDeployments(t *testing.T) {
	tests := []struct {
		name     string
		replicas int32
		cap      int32
		steps    []map[string]int32
	}{
		// 25%/25% of 1: surge 1, unavailable 0. T(1, 20%) = 1 = R: the hold is at 1/1 with v1 gone.
		{name: "R=1", replicas: 1, cap: 1, steps: []map[string]int32{sz("v1", 1, "v2", 1), sz("v1", 0, "v2", 1)}},
		// Of 2: surge 1, unavailable 0, T = ceil(0.4) = 1.
		{name: "R=2", replicas: 2, cap: 1, steps: []map[string]int32{sz("v1", 2, "v2", 1), sz("v1", 1, "v2", 1)}},
		// Of 3: surge 1, unavailable 0, T = ceil(0.6) = 1.
		{name: "R=3", replicas: 3, cap: 1, steps: []map[string]int32{sz("v1", 3, "v2", 1), sz("v1", 2, "v2", 1)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := startGray(t, testutil.GrayWeb(tc.replicas, "20"))
			w.cap = tc.cap
			w.setImage("v2")
			for i, want := range tc.steps {
				w.step()
				if got := w.sizes(); !reflect.DeepEqual(got, want) {
					t.Fatalf("after sync %d: sizes %v, want %v", i+1, got, want)
				}
				if !w.deployment().Spec.Paused {
					t.Fatalf("after sync %d: not paused, the first sync reaches T", i+1)
				}
			}
			w.step()
			w.wantState(grayapi.PhaseHeld, true)

			w.cap = tc.replicas
			w.setAnnotation(grayapi.ResumeAnnotation, "2:next")
			w.settle()
			w.wantSizes(sz("v1", 0, "v2", int(tc.replicas)))
			w.wantState(grayapi.PhaseComplete, false)
			w.noFlapping()
		})
	}
}

func TestGrayZeroPercent(t *testing.T) {
	w := startGray(t, testutil.GrayWeb(10, "0"))
	w.cap = 0
	w.setImage("v2")
	// The new ReplicaSet is created at 0 and the rollout paused at once; it is reported Held
	// once the ReplicaSet controller has observed the new ReplicaSet.
	w.step()
	w.wantSizes(sz("v1", 10, "v2", 0))
	w.wantState(grayapi.PhaseProgressing, true)
	w.wantEvents("GrayHolding", "reached 0/10 (0%); waiting for 0 of its pods to become ready")
	w.step()
	w.wantState(grayapi.PhaseHeld, true)
	w.wantEvents("GrayHeld", "holds 0/10 (0%), all 0 available")
	if n := writes(w.step()); n != 0 {
		t.Fatalf("held at 0%% made %d writes", n)
	}

	w.cap = 10
	w.setAnnotation(grayapi.ResumeAnnotation, "2:next")
	w.settle()
	w.wantSizes(sz("v1", 0, "v2", 10))
	w.wantState(grayapi.PhaseComplete, false)
	w.noFlapping()
}

// A gray sync whose cached Deployment is older than the ReplicaSets written after it (a new
// leader whose Deployment watch lags its ReplicaSet watch) sees a rollback to the old template.
// It must neither say so nor write a ReplicaSet: it reads the Deployment live first, finds it
// behind, and ends deferred.
func TestGraySyncDefersOnAStaleDeployment(t *testing.T) {
	w := startGray(t, testutil.GrayWeb(10, "20"))
	w.settle()
	stale := w.deployment().DeepCopy()
	w.setImage("v2")
	w.settle() // held at 20%: v2's ReplicaSet has 2 of 10
	newer := w.deployment()
	w.takeEvents()
	sizes := w.sizes()
	w.refreshCaches()
	if err := w.f.factory.Apps().V1().Deployments().Informer().GetIndexer().Update(stale); err != nil {
		t.Fatal(err)
	}
	before := len(w.f.client.Actions())
	testutil.WantDeferred(t, metrics.DeferredDeployment, func() {
		if err := w.f.dc.Sync(w.f.ctx, grayKey); err != nil {
			t.Fatal(err)
		}
	})
	actions := w.f.client.Actions()[before:]
	if got := writes(actions); got != 0 {
		t.Fatalf("a sync of resourceVersion %s (the server has %s) made %d writes: %v", stale.ResourceVersion, newer.ResourceVersion, got, verbs(actions))
	}
	if got := gets(actions); got != 1 {
		t.Errorf("the deferred sync read the deployment live %d times, want once: %v", got, verbs(actions))
	}
	w.events = append(w.events, w.f.events()...)
	if events := w.takeEvents(); len(events) != 0 {
		t.Errorf("the deferred sync sent events %q", events)
	}
	w.wantSizes(sizes)
}

// A held rollout's syncs read nothing live: one with nothing to write makes no request, and one
// that writes only the Deployment's status sends it against the cached resourceVersion, which
// the server would refuse if the cache were behind (liveCheck).
func TestHeldGraySyncReadsNothingLive(t *testing.T) {
	w := startGray(t, testutil.GrayWeb(10, "20"))
	w.settle()
	w.setImage("v2")
	w.settle()
	w.wantState(grayapi.PhaseHeld, true)

	if actions := w.sync(); len(actions) != 0 {
		t.Fatalf("a sync of a settled hold issued %v, want nothing", verbs(actions))
	}
	canary := newReplicaSetOf(t, w)
	canary.Status.AvailableReplicas--
	canary.Status.ReadyReplicas--
	w.put(canary)
	actions := w.sync()
	if got := verbs(actions); len(got) != 1 || got[0] != "update deployments/status" {
		t.Fatalf("a sync after a canary pod became unavailable issued %v, want one status write and no live read", got)
	}
}

// newReplicaSetOf is the ReplicaSet of w's Deployment's template.
func newReplicaSetOf(t *testing.T, w *grayWorld) *appsv1.ReplicaSet {
	t.Helper()
	rs := deployutil.FindNewReplicaSet(w.deployment(), w.replicaSets())
	if rs == nil {
		t.Fatalf("no replica set of the template among %v", w.sizes())
	}
	return rs
}

// gets counts the live reads of Deployments among actions.
func gets(actions []clienttesting.Action) int {
	n := 0
	for _, a := range actions {
		if a.GetVerb() == "get" && a.GetResource().Resource == "deployments" {
			n++
		}
	}
	return n
}
