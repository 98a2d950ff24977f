package graysync

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kubegray/kubectl-gray/internal/testutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// In alongside mode the Deployment stays taken over while aborted (its template is the
// canary's, which the built-in controller would roll out if it were released): the failure is
// recorded first, then the sizes go back to the stable revision under the freeze.
func TestAlongsideOnFailureAbort(t *testing.T) {
	d := testutil.GrayWeb(10, "20", testutil.WithProgressDeadline(10))
	d.Annotations[grayapi.OnFailureAnnotation] = "abort"
	w := newAlongsideWorld(t, d, grayapi.TakeoverAdmission)
	w.step()
	w.takeOverAsPolicy("v2", savedDefault)
	w.freezes()
	for range 10 {
		w.sync()
		w.readyBut("v2", 0)
	}
	w.wantSizes(sz("v1", 8, "v2", 2))
	w.at(11)
	w.sync()
	if st := w.status(); st.Phase != grayapi.PhaseDegraded {
		t.Fatalf("phase %s after the deadline, want Degraded before anything moves", st.Phase)
	}
	w.wantSizes(sz("v1", 8, "v2", 2))
	for range 10 {
		w.sync()
		w.readyBut("v2", 0)
	}
	w.wantSizes(sz("v1", 10, "v2", 0))
	w.wantTakenOver(savedDefault)
	if image := w.deployment().Spec.Template.Spec.Containers[0].Image; image != "v2" {
		t.Fatalf("template runs %s after the abort, want v2", image)
	}
	if st := w.status(); st.Phase != grayapi.PhaseAborted || st.Failure == nil || st.Failure.Reason != grayapi.ReasonProgressDeadlineExceeded {
		t.Fatalf("status %+v, want Aborted with the deadline failure", st)
	}
	w.wantEvents("GrayDegraded", "GrayAborted")
}

// Opted in and given its new image in one write (kubectl gray set --image), so that no sync saw
// revision 1 complete before the canary; the canary never becomes ready, the step is Degraded,
// and it is undone by hand. The built-in controller renumbers revision 1 as 3 before our next
// sync. The rollback must land on revision 1's ReplicaSet, skip every hold point, take the
// failed canary to 0 and say so, and never take the failed canary for the stable revision.
func TestAlongsideUndoOfAFailedCanaryOptedInWithItsImage(t *testing.T) {
	d := testutil.GrayWeb(2, "34", testutil.WithProgressDeadline(8),
		testutil.WithRollingUpdate(intstr.FromInt32(0), intstr.FromInt32(1)))
	w := newAlongsideWorld(t, d, grayapi.TakeoverAdmission)
	w.cap = 1
	w.takeOverAsPolicy("v2", "RollingUpdate;maxSurge=0;maxUnavailable=1")
	w.freezes()
	for range 10 {
		w.sync()
		w.readyBut("v2", 0)
	}
	w.wantSizes(sz("v1", 1, "v2", 1))
	if marks := w.stableMarks(); !marks["v1"] || len(marks) != 1 {
		t.Fatalf("stable marks while the canary runs: %v, want v1 alone (marked when the rollout started)", marks)
	}
	w.at(9)
	w.sync()
	if st := w.status(); st.Phase != grayapi.PhaseDegraded || st.StableRevision != 1 {
		t.Fatalf("status %+v, want Degraded with stable revision 1", st)
	}

	// kubectl gray undo: the template goes back to revision 1's; the built-in controller's paused
	// sync renumbers that ReplicaSet before ours runs.
	w.setImage("v1")
	w.renumber("v1", "3", "1")
	w.cap = 2
	var phases []grayapi.Phase
	for range 40 {
		if writes(w.sync()) == 0 {
			break
		}
		phases = append(phases, w.status().Phase)
		w.readyBut("v2", 0)
	}
	w.wantSizes(sz("v1", 2, "v2", 0))
	w.wantReleased(appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
		RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: ptrTo(intstr.FromInt32(0)), MaxUnavailable: ptrTo(intstr.FromInt32(1))}})
	st := w.status()
	if st.Phase != grayapi.PhaseComplete || st.Revision != 3 || st.StableRevision != 3 || st.Failure == nil ||
		st.Failure.RolledBackFrom != 2 || st.Failure.Reason != grayapi.ReasonProgressDeadlineExceeded {
		t.Fatalf("status after the undo %+v (phases %v), want Complete on revision 3 with the failure of revision 2", st, phases)
	}
	for _, p := range phases {
		if p == grayapi.PhaseHeld {
			t.Fatalf("the rollback held on its way: phases %v", phases)
		}
	}
	w.wantEvents("GrayDegraded", "GrayRolledBack", "revision 2 abandoned")
}

func ptrTo[T any](v T) *T { return &v }
