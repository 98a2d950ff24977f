package graysync

// What the built-in controller and people do to a taken-over Deployment: create its new
// ReplicaSet before the takeover, pause it themselves, change it or its ReplicaSets'
// annotations between a sync's read and its writes.

import (
	"reflect"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubegray/kubectl-gray/controller/metrics"
	"github.com/kubegray/kubectl-gray/internal/testutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// Eager takeover next to a built-in controller of another minor version: a template the
// built-in controller saw before the takeover gets its ReplicaSet from it, and on another
// minor version its pod-template-hash differs from ours. A sync whose cache lacks that
// ReplicaSet must not create a second one of the same template under our hash: it waits for
// the informer and then rolls the built-in controller's ReplicaSet as the new one.
func TestAlongsideEagerWaitsForTheBuiltInControllersReplicaSet(t *testing.T) {
	w := newAlongsideWorld(t, testutil.GrayWeb(10, "20"), grayapi.TakeoverEager)
	// A Deployment just created with the annotation: no ReplicaSet, no revision, no status.
	if err := w.f.client.Tracker().Delete(replicaSetsResource, "default", "web-v1"); err != nil {
		t.Fatal(err)
	}
	w.edit(func(d *appsv1.Deployment) {
		delete(d.Annotations, "deployment.kubernetes.io/revision")
		d.Status = appsv1.DeploymentStatus{}
	})
	if got, want := verbsOf(w.sync()), []string{"patch deployments"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("first sync = %v, want the takeover patch only", got)
	}
	w.refreshCaches()
	// What the built-in controller created on seeing the Deployment, under its own hash.
	builtIn := testutil.ReplicaSet("web-builtin", 10, testutil.RSOwnedBy(w.deployment()), testutil.RSRevision(1), testutil.RSReplicasAnnotations(10, 13))
	builtIn.Labels["pod-template-hash"] = "builtin"
	builtIn.Spec.Template.Labels["pod-template-hash"] = "builtin"
	builtIn.CreationTimestamp = metav1.NewTime(w.created.Add(time.Minute))
	builtIn.Generation = 1
	w.put(builtIn)

	before := len(w.f.client.Actions())
	testutil.WantDeferred(t, metrics.DeferredNewReplicaSet, func() {
		if err := w.f.dc.Sync(w.f.ctx, grayKey); err != nil {
			t.Fatal(err)
		}
	})
	for _, a := range w.f.client.Actions()[before:] {
		if a.GetVerb() == "create" && a.GetResource().Resource == "replicasets" {
			t.Fatalf("created a second ReplicaSet of the template next to the built-in controller's")
		}
	}
	w.ready()
	w.settle()
	var names []string
	for _, rs := range w.replicaSets() {
		names = append(names, rs.Name)
	}
	if !reflect.DeepEqual(names, []string{"web-builtin"}) {
		t.Fatalf("ReplicaSets %v, want only the built-in controller's", names)
	}
	w.wantSizes(sz("v1", 10))
	if st := w.status(); st.Phase != grayapi.PhaseComplete || st.Revision != 1 || !st.TakenOver {
		t.Fatalf("status %+v, want Complete on revision 1, taken over", st)
	}
}

// Alongside mode respects the user's own pause (saved as kubegray.io/paused
// by the takeover, since the takeover's own pause would hide it), takes `kubectl rollout
// resume` as the user's resume, and hands the pause back at release.
func TestAlongsideRespectsTheUsersPause(t *testing.T) {
	w := newAlongsideWorld(t, testutil.GrayWeb(10, "20"), grayapi.TakeoverAdmission)
	w.step()
	w.edit(func(d *appsv1.Deployment) { d.Spec.Paused = true }) // kubectl rollout pause
	w.step()
	w.cap = 0
	w.edit(func(d *appsv1.Deployment) { // kubectl set image, taken over by the policy
		d.Spec.Template.Spec.Containers[0].Image = "v2"
		d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
		d.Annotations[grayapi.StrategyAnnotation] = savedDefault
		d.Annotations[grayapi.PausedAnnotation] = "true"
	})
	w.settle()
	if s := w.sizes(); s["v2"] != 0 || s["v1"] != 10 {
		t.Fatalf("sizes %v while the user's pause stands, want v1 10 and no v2 pod", s)
	}
	if st := w.status(); st.Phase != grayapi.PhaseProgressing || st.HeldAt != nil {
		t.Fatalf("status %+v, want Progressing (paused by the user)", st)
	}

	// kubectl rollout resume: the guard lets the unpause through, gray-controller pauses the
	// takeover again and the rollout goes on to its hold.
	w.cap = 2
	w.edit(func(d *appsv1.Deployment) { d.Spec.Paused = false })
	w.sync()
	w.wantTakenOver(savedDefault)
	if _, paused := w.deployment().Annotations[grayapi.PausedAnnotation]; paused {
		t.Fatal("the user's pause is still recorded after kubectl rollout resume")
	}
	w.settle()
	w.wantSizes(sz("v1", 8, "v2", 2))
	if st := w.status(); st.Phase != grayapi.PhaseHeld {
		t.Fatalf("phase %s, want Held", st.Phase)
	}

	// Paused again by its user while held (the annotation is how, under the takeover), then
	// resumed to the end: the rollout waits for the user, and the release hands the pause back.
	w.setAnnotation(grayapi.PausedAnnotation, "true")
	w.cap = 10
	w.setAnnotation(grayapi.ResumeAnnotation, "2:full")
	w.settle()
	w.wantSizes(sz("v1", 8, "v2", 2))
	w.edit(func(d *appsv1.Deployment) { delete(d.Annotations, grayapi.PausedAnnotation) })
	w.settle()
	w.wantSizes(sz("v1", 0, "v2", 10))
	w.wantReleased(quarterStrategy())

	// Released while its user's pause stands (here: it leaves gray), it stays paused.
	w2 := newAlongsideWorld(t, testutil.GrayWeb(10, "20"), grayapi.TakeoverAdmission)
	w2.step()
	w2.cap = 2
	w2.takeOverAsPolicy("v2", savedDefault)
	w2.settle()
	w2.setAnnotation(grayapi.PausedAnnotation, "true")
	w2.cap = -1
	w2.edit(func(d *appsv1.Deployment) { delete(d.Annotations, grayapi.PercentAnnotation) })
	w2.sync()
	d := w2.deployment()
	if _, userPaused := d.Annotations[grayapi.PausedAnnotation]; !d.Spec.Paused || userPaused || d.Annotations[grayapi.StrategyAnnotation] != "" || d.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType {
		t.Fatalf("after the release: paused %t, %s=%q, %s=%q, strategy %s; want released on RollingUpdate and paused by its user", d.Spec.Paused,
			grayapi.PausedAnnotation, d.Annotations[grayapi.PausedAnnotation], grayapi.StrategyAnnotation, d.Annotations[grayapi.StrategyAnnotation], d.Spec.Strategy.Type)
	}
}

// Every gray status patch in alongside mode is conditional on the Deployment
// the sync read, so a percent lowered after the live read fails the sync's first write
// instead of being acted on one sync late.
func TestAlongsideStatusPatchesAreConditional(t *testing.T) {
	w := newAlongsideWorld(t, testutil.GrayWeb(10, "50"), grayapi.TakeoverAdmission)
	w.step()
	w.cap = 5
	w.takeOverAsPolicy("v2", savedDefault)
	w.settle()
	w.wantSizes(sz("v1", 5, "v2", 5))

	// The next sync decides on 10 → 20 replicas at 50%; right after its live read someone
	// lowers the percent to 20.
	w.cap = 10
	twenty := int32(20)
	w.edit(func(d *appsv1.Deployment) { d.Spec.Replicas = &twenty })
	lowered := false
	w.f.client.PrependReactor("get", "deployments", func(action clienttesting.Action) (bool, runtime.Object, error) {
		if lowered {
			return false, nil, nil
		}
		lowered = true
		live := w.deployment().DeepCopy()
		d := live.DeepCopy()
		d.Annotations[grayapi.PercentAnnotation] = "20"
		d.Generation++
		w.put(d)
		return true, live, nil
	})
	w.allowConflicts = true
	actions := w.sync()
	if !lowered {
		t.Fatal("the sync made no live read")
	}
	if n := len(updatedReplicaSets(actions)); n != 0 {
		t.Fatalf("the sync decided on the percent it read and wrote %d ReplicaSets after it changed", n)
	}
	// The next sync sees 20% of 20: T = 4, the canary never grows past it.
	w.cap = 5
	w.allowConflicts = false
	w.settle()
	w.wantSizes(sz("v1", 16, "v2", 4))
}

// The built-in controller rewrites the new ReplicaSet's annotations after each of our status
// writes (it copies every Deployment annotation); a ReplicaSet write that conflicts only
// because of that is retried in the same sync from a live read, instead of waiting for a
// rate-limited requeue in the middle of a scaling event.
func TestAlongsideRetriesAnAnnotationOnlyConflict(t *testing.T) {
	w := newAlongsideWorld(t, testutil.GrayWeb(10, "20"), grayapi.TakeoverAdmission)
	w.step()
	w.cap = 2
	w.takeOverAsPolicy("v2", savedDefault)
	w.settle()
	w.wantSizes(sz("v1", 8, "v2", 2))

	w.cap = 4
	twenty := int32(20)
	w.edit(func(d *appsv1.Deployment) { d.Spec.Replicas = &twenty })
	copied := false
	w.f.client.PrependReactor("update", "replicasets", func(action clienttesting.Action) (bool, runtime.Object, error) {
		rs := action.(clienttesting.UpdateAction).GetObject().(*appsv1.ReplicaSet)
		if !copied && rs.Spec.Template.Spec.Containers[0].Image == "v2" && *rs.Spec.Replicas == 4 {
			copied = true
			stored := w.replicaSet(rs.Name).DeepCopy()
			stored.Annotations[grayapi.StatusAnnotation] = "copied by the built-in controller"
			w.put(stored) // a new resourceVersion: the update in flight conflicts
		}
		return false, nil, nil
	})
	w.sync()
	if !copied {
		t.Fatal("no write of the canary")
	}
	w.wantSizes(sz("v1", 16, "v2", 4))
}

// A status patch that lost only to the built-in controller's own status write (same
// generation) is sent again at once: waiting for a rate-limited requeue every time would
// stretch each step by the built-in controller's write rate.
func TestAlongsideStatusPatchRetriesAfterABuiltInStatusWrite(t *testing.T) {
	w := newAlongsideWorld(t, testutil.GrayWeb(10, "50"), grayapi.TakeoverAdmission)
	w.step()
	w.cap = 5
	w.takeOverAsPolicy("v2", savedDefault)
	w.settle()

	w.cap = 10
	twenty := int32(20)
	w.edit(func(d *appsv1.Deployment) { d.Spec.Replicas = &twenty })
	wrote := false
	w.f.client.PrependReactor("get", "deployments", func(action clienttesting.Action) (bool, runtime.Object, error) {
		if wrote {
			return false, nil, nil
		}
		wrote = true
		live := w.deployment().DeepCopy()
		d := live.DeepCopy()
		d.Status.ObservedGeneration = d.Generation // the built-in controller's status write
		w.put(d)
		return true, live, nil
	})
	w.sync()
	w.wantSizes(sz("v1", 10, "v2", 10))
}
