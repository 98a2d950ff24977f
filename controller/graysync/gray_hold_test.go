package graysync

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubegray/kubectl-gray/controller/metrics"
	"github.com/kubegray/kubectl-gray/internal/testutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// heldAtFiftyEightOfFour is R=4 held at 58%: T = ceil(2.32) = 3, so v2 3 and v1 1.
func heldAtFiftyEightOfFour(t *testing.T) *grayWorld {
	t.Helper()
	w := startGray(t, testutil.GrayWeb(4, "58"))
	w.cap = 3
	w.setImage("v2")
	w.settle()
	w.wantSizes(sz("v1", 1, "v2", 3))
	w.wantState(grayapi.PhaseHeld, true)
	return w
}

func scaleTo(w *grayWorld, replicas int32) {
	w.edit(func(d *appsv1.Deployment) { d.Spec.Replicas = &replicas })
}

// The sync that resizes the ReplicaSets of a held Deployment must not report the hold for the
// new generation: their statuses still describe the old sizes. Seen on a real cluster as Held →
// Progressing → Held within one generation.
func TestGrayScaleWhileHeldReportsHeldOnlyOnceSettled(t *testing.T) {
	w := heldAtFiftyEightOfFour(t)
	w.cap = 2 // T(3) = ceil(1.74) = 2
	scaleTo(w, 3)
	// resizes v2 3→2 and v1 1→1 (annotations); the ReplicaSet controller has not caught up
	for _, a := range w.sync() {
		u, ok := a.(clienttesting.UpdateActionImpl)
		if !ok || a.GetResource().Resource != "deployments" {
			continue
		}
		if st, err := grayapi.ParseStatus(u.GetObject().(*appsv1.Deployment).Annotations[grayapi.StatusAnnotation]); err == nil && st.Phase == grayapi.PhaseHeld {
			t.Fatalf("the sync that resized the ReplicaSets wrote %s: %+v", st.Phase, st)
		}
	}
	w.wantSizes(sz("v1", 1, "v2", 2))
	w.ready()
	w.sync()
	w.wantState(grayapi.PhaseHeld, true)
	gen := w.deployment().Generation

	// A canary pod lost under the settled hold: still Held within this generation.
	w.edit(func(*appsv1.Deployment) {}) // no-op: the generation stays
	for _, rs := range w.replicaSets() {
		if rs.Spec.Template.Spec.Containers[0].Image == "v2" {
			rs.Status.AvailableReplicas = 1
			rs.Status.ReadyReplicas = 1
			w.put(rs)
		}
	}
	w.sync()
	if d := w.deployment(); d.Generation != gen {
		t.Fatalf("generation moved %d → %d", gen, d.Generation)
	}
	w.wantState(grayapi.PhaseHeld, true)
}

// A resume that arrives while a scale of the held Deployment is being absorbed is kept and
// acted on once the hold stands again, not refused or lost.
func TestGrayResumeWaitsForTheHoldToSettle(t *testing.T) {
	w := startGray(t, testutil.GrayWeb(10, "20,50"))
	w.cap = 2
	w.setImage("v2")
	w.settle()
	w.wantSizes(sz("v1", 8, "v2", 2))
	w.wantState(grayapi.PhaseHeld, true)

	w.cap = 4 // T(20 replicas, 20%) = 4
	scaleTo(w, 20)
	w.sync()
	w.wantSizes(sz("v1", 16, "v2", 4))
	w.setAnnotation(grayapi.ResumeAnnotation, "2:next")
	w.sync() // the ReplicaSet statuses still describe 8 and 2
	if _, kept := w.deployment().Annotations[grayapi.ResumeAnnotation]; !kept {
		t.Fatalf("resume consumed before the hold settled; status %+v", w.status())
	}
	if st := w.status(); st.Step != 0 || st.HeldAt == nil {
		t.Fatalf("status %+v, want step 0 still held", st)
	}
	w.wantSizes(sz("v1", 16, "v2", 4))

	w.cap = 10 // T(20, 50%) = 10
	w.ready()
	w.settle()
	if _, kept := w.deployment().Annotations[grayapi.ResumeAnnotation]; kept {
		t.Fatal("resume never consumed")
	}
	w.wantSizes(sz("v1", 10, "v2", 10))
	w.wantState(grayapi.PhaseHeld, true)
	if st := w.status(); st.Step != 1 || st.Percent != 50 {
		t.Fatalf("status %+v, want step 1 at 50%%", st)
	}
}

// syncWithStaleReplicaSets runs one sync whose Deployment cache is current but whose
// ReplicaSet cache has not seen the writes since the previous sync: the two informers are
// separate watches, and our own Deployment write can arrive first.
func (w *grayWorld) syncWithStaleReplicaSets() []string {
	w.t.Helper()
	if err := w.f.factory.Apps().V1().Deployments().Informer().GetIndexer().Replace([]any{w.deployment()}, ""); err != nil {
		w.t.Fatal(err)
	}
	before := len(w.f.client.Actions())
	if err := w.f.dc.Sync(w.f.ctx, grayKey); err != nil {
		w.t.Fatalf("syncDeployment: %v", err)
	}
	return verbsOf(w.f.client.Actions()[before:])
}

// A sync on our own pause write, before the ReplicaSet informer has the new ReplicaSet, must
// not take the hold back (seen as paused → unpaused → paused, GrayHeld twice, heldAt reset).
func TestGrayStaleReplicaSetCacheKeepsTheHold(t *testing.T) {
	w := startGray(t, testutil.GrayWeb(10, "20"))
	w.cap = 2
	w.setImage("v2")
	w.sync() // creates v2 at 2, scales v1 to 8 and pauses, all in one sync
	w.wantSizes(sz("v1", 8, "v2", 2))
	heldAt := w.status().HeldAt
	if !w.deployment().Spec.Paused || heldAt == nil {
		t.Fatalf("not held after the first sync: paused %t, status %+v", w.deployment().Spec.Paused, w.status())
	}
	w.takeEvents()

	testutil.WantDeferred(t, metrics.DeferredReplicaSetWrite, func() {
		if got := w.syncWithStaleReplicaSets(); len(got) != 0 {
			t.Fatalf("a sync with the ReplicaSet cache behind our create wrote %v", got)
		}
	})
	if !w.deployment().Spec.Paused || !w.status().HeldAt.Equal(heldAt) {
		t.Fatalf("hold changed: paused %t, heldAt %v (was %v)", w.deployment().Spec.Paused, w.status().HeldAt, heldAt)
	}

	// Once the cache has the ReplicaSet the rollout goes on from the same hold.
	w.ready()
	w.settle()
	w.wantSizes(sz("v1", 8, "v2", 2))
	w.wantState(grayapi.PhaseHeld, true)
	if !w.status().HeldAt.Equal(heldAt) {
		t.Fatalf("heldAt reset to %v (was %v)", w.status().HeldAt, heldAt)
	}
	// Reached once (the first sync), held once (when settled): no event of a second hold.
	var held []string
	for _, e := range w.takeEvents() {
		if strings.Contains(e, grayapi.ReasonGrayHolding) || strings.Contains(e, grayapi.ReasonGrayHeld+" ") {
			held = append(held, e)
		}
	}
	if len(held) != 1 || !strings.Contains(held[0], "GrayHeld web-") {
		t.Fatalf("events of the hold after the first sync: %q, want the one GrayHeld of its settling", held)
	}
}
