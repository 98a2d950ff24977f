package graysync

// What the controller starts from and trusts: which Deployments are gray, one first seen
// mid-rollout or just created, a restarted controller, a stale cache, stale ReplicaSet status.

import (
	"reflect"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubegray/kubectl-gray/controller/metrics"
	"github.com/kubegray/kubectl-gray/internal/testutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

func TestGrayRestart(t *testing.T) {
	t.Run("while held", func(t *testing.T) {
		w := startGray(t, testutil.GrayWeb(10, "20"))
		w.cap = 2
		w.setImage("v2")
		w.settle()
		w.wantState(grayapi.PhaseHeld, true)
		w.restart()
		if n := writes(w.step()); n != 0 {
			t.Fatalf("a fresh controller made %d writes to a settled hold", n)
		}
		w.wantState(grayapi.PhaseHeld, true)
		w.cap = 10
		w.setAnnotation(grayapi.ResumeAnnotation, "2:next")
		w.settle()
		w.wantState(grayapi.PhaseComplete, false)
		w.noFlapping()
	})
	t.Run("while progressing", func(t *testing.T) {
		w := startGray(t, testutil.GrayWeb(10, "20", testutil.WithRollingUpdate(intstr.FromInt32(0), intstr.FromInt32(1))))
		w.cap = 2
		w.setImage("v2")
		w.step()
		w.step()
		w.wantSizes(sz("v1", 9, "v2", 1))
		w.restart()
		w.step()
		w.wantSizes(sz("v1", 8, "v2", 1))
		w.restart()
		w.step()
		w.wantSizes(sz("v1", 8, "v2", 2))
		w.restart()
		w.step()
		w.wantState(grayapi.PhaseHeld, true)
		w.noFlapping()
	})
}

func TestGrayStaleCacheWritesNothing(t *testing.T) {
	w := startGray(t, testutil.GrayWeb(10, "20"))
	w.setImage("v2")
	w.refreshCaches()
	// The server moves on (here: the user edits again) before the informer sees it.
	d := w.deployment()
	d.Annotations["team"] = "a"
	w.put(d)
	before := len(w.f.client.Actions())
	stored := w.deployment().ResourceVersion
	testutil.WantDeferred(t, metrics.DeferredDeployment, func() {
		if err := w.f.dc.Sync(w.f.ctx, grayKey); err != nil {
			t.Fatal(err)
		}
	})
	// Its first write, the target's status, goes against the cached resourceVersion, which the
	// server refuses; nothing is read live and no ReplicaSet is written.
	if got := verbs(w.f.client.Actions()[before:]); !reflect.DeepEqual(got, []string{"update deployments/status"}) {
		t.Fatalf("actions on a stale cache = %v, want only the refused status write", got)
	}
	if got := w.deployment().ResourceVersion; got != stored {
		t.Fatalf("the deployment went from resourceVersion %s to %s on a stale cache", stored, got)
	}
}

func TestGrayRecreateIsNotGray(t *testing.T) {
	d := testutil.GrayWeb(3, "20", testutil.WithRecreate())
	if isGray(d) {
		t.Fatal("a Recreate Deployment took the gray path")
	}
	d = testutil.GrayWeb(3, "20")
	if !isGray(d) {
		t.Fatal("a RollingUpdate Deployment with kubegray.io/percent did not take the gray path")
	}
	delete(d.Annotations, grayapi.PercentAnnotation)
	if isGray(d) {
		t.Fatal("a Deployment without kubegray.io/percent took the gray path")
	}
}

func TestGrayFirstSeenMidRollout(t *testing.T) {
	// A plain Deployment half-way from v1 to v2 (v1 5, v2 5) is annotated 20,60: 20% (T 2) is
	// already passed, so it holds at 60% (T 6) instead of shrinking v2.
	d := testutil.GrayWeb(10, "20,60")
	w := newGrayWorld(t, d)
	w.step()                // records v1 as Complete
	w.allowConflicts = true // upstream's syncs below write the status twice, see TestGrayAnnotationRemoved
	w.edit(func(d *appsv1.Deployment) {
		delete(d.Annotations, grayapi.PercentAnnotation)
		d.Spec.Template.Spec.Containers[0].Image = "v2"
	})
	w.step() // upstream: v2 3, v1 8
	w.step() // upstream: v2 5 (13−8), v1 8
	w.wantSizes(sz("v1", 8, "v2", 5))
	w.cap = 6
	w.setAnnotation(grayapi.PercentAnnotation, "20,60")
	w.settle()
	w.wantSizes(sz("v1", 4, "v2", 6))
	w.wantState(grayapi.PhaseHeld, true)
	if st := w.status(); st.Step != 1 || st.StableRevision != 1 {
		t.Fatalf("status = %+v, want step 1 (60%%) and stable revision 1", st)
	}
	w.noFlapping()
}

func TestGraySetWithImageOnAPlainDeployment(t *testing.T) {
	// kubectl gray set web 20 --image c=v2 on a Deployment never seen gray: annotation and
	// template arrive in one write. The running revision is taken as stable.
	d := testutil.GrayWeb(10, "20")
	delete(d.Annotations, grayapi.PercentAnnotation)
	w := newGrayWorld(t, d)
	w.step() // plain upstream: nothing to do
	w.cap = 2
	w.edit(func(d *appsv1.Deployment) {
		d.Annotations[grayapi.PercentAnnotation] = "20"
		d.Spec.Template.Spec.Containers[0].Image = "v2"
	})
	w.step()
	w.wantSizes(sz("v1", 8, "v2", 2))
	w.step()
	w.wantState(grayapi.PhaseHeld, true)
	if st := w.status(); st.Revision != 2 || st.StableRevision != 1 || st.Step != 0 {
		t.Fatalf("status = %+v, want revision 2, stable 1, step 0", st)
	}
}

func TestGrayNewDeploymentIsNotHeld(t *testing.T) {
	// Created with the annotation: there is nothing to canary against, so it rolls out fully.
	w := &grayWorld{t: t, f: newFixture(t), created: testNow, cap: 3}
	w.installReactors()
	d := testutil.GrayWeb(3, "20")
	w.put(d)
	w.settle()
	w.wantSizes(sz("v1", 3))
	w.wantState(grayapi.PhaseComplete, false)
}

func TestGrayOptedInAtRestSaysNoRollback(t *testing.T) {
	// A plain Deployment at rest on its only revision, then opted in: that revision is its own
	// stable one, and nothing is rolling back.
	d := testutil.GrayWeb(10, "20")
	delete(d.Annotations, grayapi.PercentAnnotation)
	w := newGrayWorld(t, d)
	w.step()
	w.takeEvents()
	w.edit(func(d *appsv1.Deployment) { d.Annotations[grayapi.PercentAnnotation] = "20" })
	var written []grayapi.Status
	for range 40 {
		actions := w.step()
		written = append(written, statusesWritten(actions)...)
		if writes(actions) == 0 {
			break
		}
	}
	if len(written) == 0 {
		t.Fatal("no gray status was written after the opt-in")
	}
	w.wantSizes(sz("v1", 10))
	w.wantState(grayapi.PhaseComplete, false)
	for _, e := range w.takeEvents() {
		if strings.Contains(e, grayapi.ReasonGrayRolledBack) {
			t.Fatalf("a Deployment opted in at rest reported a rollback: %q", e)
		}
	}
	for _, st := range written {
		if st.Phase == grayapi.PhaseRolledBack {
			t.Fatalf("a Deployment opted in at rest wrote the phase %s: %s", st.Phase, st.Message)
		}
	}
}

// statusesWritten lists the gray statuses that Deployment updates among actions carried.
func statusesWritten(actions []clienttesting.Action) []grayapi.Status {
	var out []grayapi.Status
	for _, a := range actions {
		u, ok := a.(clienttesting.UpdateAction)
		if !ok {
			continue
		}
		if d, ok := u.GetObject().(*appsv1.Deployment); ok {
			if st, err := grayapi.ParseStatus(d.Annotations[grayapi.StatusAnnotation]); err == nil {
				out = append(out, st)
			}
		}
	}
	return out
}
