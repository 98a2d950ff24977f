package deployment

// What the built-in controller and people do to a taken-over Deployment: resize its
// ReplicaSets, pause it themselves, change it between a sync's read and its writes.

import (
	"reflect"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubegray/kubectl-gray/internal/testutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// builtInScaled is what the built-in controller's paused sync does to a lone active
// ReplicaSet of a Deployment scaled to replicas: spec and desired annotation set to it, by
// its own field manager.
func (w *grayWorld) builtInScaled(image string, replicas int32) {
	w.t.Helper()
	for _, rs := range w.replicaSets() {
		if rs.Spec.Template.Spec.Containers[0].Image != image {
			continue
		}
		rs.Spec.Replicas = &replicas
		rs.Generation++
		rs.Annotations["deployment.kubernetes.io/desired-replicas"] = itoa(replicas)
		rs.ManagedFields = []metav1.ManagedFieldsEntry{{
			Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, FieldsType: "FieldsV1",
			FieldsV1: metav1.NewFieldsV1(`{"f:spec":{"f:replicas":{}}}`),
		}}
		w.put(rs)
	}
}

// sizeWrites lists the ReplicaSet updates among actions as "image=size desired N".
func sizeWrites(actions []clienttesting.Action) []string {
	var got []string
	for _, rs := range updatedReplicaSets(actions) {
		got = append(got, rs.Spec.Template.Spec.Containers[0].Image+"="+itoa(*rs.Spec.Replicas)+
			" desired "+rs.Annotations["deployment.kubernetes.io/desired-replicas"])
	}
	return got
}

// Issue 10 case 2: R=1 held at 83% (the canary is the lone active ReplicaSet), scaled to 6;
// the built-in controller scales the canary to 6 before we see the scale. The hold is restored
// in one sync, the empty old ReplicaSet first (so that the built-in controller never sees a
// lone canary again), then the canary back to T(6) = 5.
func TestAlongsideRestoresAHoldTheBuiltInControllerResized(t *testing.T) {
	w := newAlongsideWorld(t, grayDeployment(1, "83"), TakeoverAdmission)
	w.step()
	w.cap = 1
	w.takeOverAsPolicy("v2", savedDefault)
	w.settle()
	w.wantSizes(sz("v1", 0, "v2", 1))

	six := int32(6)
	w.edit(func(d *appsv1.Deployment) { d.Spec.Replicas = &six })
	w.builtInScaled("v2", 6)
	actions := w.sync()
	got := sizeWrites(actions)
	// The canary, a whole Deployment of 6 by now, is first marked as sized for 5 so that the
	// built-in controller does not empty the old ReplicaSet as it comes back.
	if want := []string{"v2=6 desired 5", "v1=1 desired 6", "v2=5 desired 6"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("restore wrote %v, want %v", got, want)
	}
	w.wantSizes(sz("v1", 1, "v2", 5))
	w.ready()
	w.settle()
	w.wantSizes(sz("v1", 1, "v2", 5))
	if st := w.status(); st.Phase != grayapi.PhaseHeld || st.Target != 5 {
		t.Fatalf("status %+v, want Held at 5", st)
	}
}

// Issue 10, random-164 of the 200-scenario run: the same scale of a lone canary, but the
// built-in controller resizes the canary after our informer read it and before our writes.
// Had the sync grown the old ReplicaSet first, it would have left a canary of 6 of 6, sized
// for 6, next to an old pod: the built-in controller empties the old ReplicaSet as soon as
// the canary's pods are available, and a requeue with backoff (or a controller killed in
// between) gives it the time. The lone canary is written first (rule 4 of
// GrayAlongsideWrites), that write conflicts, and the sync plans again from the live
// ReplicaSets: the restore marks the canary unsaturated before the old pod comes back.
func TestAlongsideRestoresAHoldResizedDuringTheSync(t *testing.T) {
	for _, tc := range []struct {
		name      string
		percent   string
		scaledTo  int32
		target    int32
		wantWrite []string
	}{
		// The planned canary write, which conflicts, then the restore on the live canary:
		// marked as sized for the target, the old pod back, the canary down to the target.
		{name: "R 1 to 6 at 83%", percent: "83", scaledTo: 6, target: 5,
			wantWrite: []string{"v2=5 desired 6", "v2=6 desired 5", "v1=1 desired 6", "v2=5 desired 6"}},
		// random-4 and random-13 of the 200-scenario run: the canary keeps its size, and its
		// write (annotations only) still goes first.
		{name: "R 1 to 2 at 57%", percent: "57", scaledTo: 2, target: 1,
			wantWrite: []string{"v2=1 desired 2", "v2=2 desired 1", "v1=1 desired 2", "v2=1 desired 2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newAlongsideWorld(t, grayDeployment(1, tc.percent), TakeoverAdmission)
			w.step()
			w.cap = 1
			w.takeOverAsPolicy("v2", savedDefault)
			w.settle()
			w.wantSizes(sz("v1", 0, "v2", 1))

			scaled := tc.scaledTo
			w.edit(func(d *appsv1.Deployment) { d.Spec.Replicas = &scaled })
			w.refreshCaches() // the sync sees the scale and a canary of 1
			w.builtInScaled("v2", tc.scaledTo)
			before := len(w.f.client.Actions())
			if err := w.f.dc.syncDeployment(w.f.ctx, grayKey); err != nil {
				t.Fatalf("sync that met the built-in controller's resize failed (it would wait for a requeue): %v", err)
			}
			got := sizeWrites(w.f.client.Actions()[before:])
			if !reflect.DeepEqual(got, tc.wantWrite) {
				t.Fatalf("sync wrote %v, want %v", got, tc.wantWrite)
			}
			want := map[string]int32{"v1": tc.scaledTo - tc.target, "v2": tc.target}
			w.wantSizes(want)
			w.ready()
			w.settle()
			w.wantSizes(want)
			if st := w.status(); st.Phase != grayapi.PhaseHeld || st.Target != tc.target {
				t.Fatalf("status %+v, want Held at %d", st, tc.target)
			}
		})
	}
}

// Issue 14, the eager scenario that failed 1 run in 4 on Kubernetes 1.35: a template the
// built-in controller saw before the takeover gets its ReplicaSet from it, and on another
// minor version its pod-template-hash differs from ours. A sync whose cache lacks that
// ReplicaSet must not create a second one of the same template under our hash: it waits for
// the informer and then rolls the built-in controller's ReplicaSet as the new one.
func TestAlongsideEagerWaitsForTheBuiltInControllersReplicaSet(t *testing.T) {
	w := newAlongsideWorld(t, grayDeployment(10, "20"), TakeoverEager)
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
	builtIn := testutil.ReplicaSet("web-builtin", 10, testutil.RSOwnedBy(w.deployment()), testutil.RSRevision(1), replicasAnnotations(10, 13))
	builtIn.Labels["pod-template-hash"] = "builtin"
	builtIn.Spec.Template.Labels["pod-template-hash"] = "builtin"
	builtIn.CreationTimestamp = metav1.NewTime(w.created.Add(time.Minute))
	builtIn.Generation = 1
	w.put(builtIn)

	before := len(w.f.client.Actions())
	if err := w.f.dc.syncDeployment(w.f.ctx, grayKey); err != nil {
		t.Fatal(err)
	}
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

// Issue 11 case 6: alongside mode respects the user's own pause (saved as kubegray.io/paused
// by the takeover, since the takeover's own pause would hide it), takes `kubectl rollout
// resume` as the user's resume, and hands the pause back at release.
func TestAlongsideRespectsTheUsersPause(t *testing.T) {
	w := newAlongsideWorld(t, grayDeployment(10, "20"), TakeoverAdmission)
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
	if userPaused(w.deployment()) {
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
	w2 := newAlongsideWorld(t, grayDeployment(10, "20"), TakeoverAdmission)
	w2.step()
	w2.cap = 2
	w2.takeOverAsPolicy("v2", savedDefault)
	w2.settle()
	w2.setAnnotation(grayapi.PausedAnnotation, "true")
	w2.cap = -1
	w2.edit(func(d *appsv1.Deployment) { delete(d.Annotations, grayapi.PercentAnnotation) })
	w2.sync()
	d := w2.deployment()
	if !d.Spec.Paused || userPaused(d) || d.Annotations[grayapi.StrategyAnnotation] != "" || d.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType {
		t.Fatalf("after the release: paused %t, %s=%q, %s=%q, strategy %s; want released on RollingUpdate and paused by its user", d.Spec.Paused,
			grayapi.PausedAnnotation, d.Annotations[grayapi.PausedAnnotation], grayapi.StrategyAnnotation, d.Annotations[grayapi.StrategyAnnotation], d.Spec.Strategy.Type)
	}
}

// Issue 11 case 7: every gray status patch in alongside mode is conditional on the Deployment
// the sync read, so a percent lowered after the live read fails the sync's first write
// instead of being acted on one sync late.
func TestAlongsideStatusPatchesAreConditional(t *testing.T) {
	w := newAlongsideWorld(t, grayDeployment(10, "50"), TakeoverAdmission)
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
// rate-limited requeue while the hold stays broken.
func TestAlongsideRetriesAnAnnotationOnlyConflict(t *testing.T) {
	w := newAlongsideWorld(t, grayDeployment(1, "83"), TakeoverAdmission)
	w.step()
	w.cap = 1
	w.takeOverAsPolicy("v2", savedDefault)
	w.settle()

	six := int32(6)
	w.edit(func(d *appsv1.Deployment) { d.Spec.Replicas = &six })
	w.builtInScaled("v2", 6)
	copied := false
	w.f.client.PrependReactor("update", "replicasets", func(action clienttesting.Action) (bool, runtime.Object, error) {
		rs := action.(clienttesting.UpdateAction).GetObject().(*appsv1.ReplicaSet)
		if !copied && rs.Spec.Template.Spec.Containers[0].Image == "v2" && *rs.Spec.Replicas == 5 {
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
	w.wantSizes(sz("v1", 1, "v2", 5))
}

// A status patch that lost only to the built-in controller's own status write (same
// generation) is sent again at once: waiting for a rate-limited requeue every time would
// stretch each step by the built-in controller's write rate.
func TestAlongsideStatusPatchRetriesAfterABuiltInStatusWrite(t *testing.T) {
	w := newAlongsideWorld(t, grayDeployment(10, "50"), TakeoverAdmission)
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
