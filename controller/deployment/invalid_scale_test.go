package deployment

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// An invalid annotation freezes a rollout's progress, never its replica count: a Complete
// Deployment scales as upstream would (everything on its one ReplicaSet).
func TestScaleWhileInvalidComplete(t *testing.T) {
	for key, value := range map[string]string{grayapi.PercentAnnotation: "abc", grayapi.HoldForAnnotation: "10", grayapi.OnFailureAnnotation: "Rollback"} {
		t.Run(key, func(t *testing.T) {
			w := startGray(t, grayDeployment(10, "20"))
			w.setAnnotation(key, value)
			w.settle()
			w.wantState(grayapi.PhaseInvalid, false)
			for _, replicas := range []int32{15, 4} {
				w.edit(func(d *appsv1.Deployment) { d.Spec.Replicas = ptrInt32(replicas) })
				w.settle()
				w.wantSizes(sz("v1", int(replicas)))
				w.wantState(grayapi.PhaseInvalid, false)
			}
		})
	}
}

// A held rollout scales with its share kept while Invalid: 20% of 15 is 3, of 4 is 1.
func TestScaleWhileInvalidHeld(t *testing.T) {
	w := startGray(t, grayDeployment(10, "20"))
	w.setImage("v2")
	w.settle()
	w.wantState(grayapi.PhaseHeld, true)
	w.setAnnotation(grayapi.PercentAnnotation, "20%%")
	w.settle()
	for _, c := range []struct{ replicas, stable, canary int32 }{{15, 12, 3}, {4, 3, 1}} {
		w.edit(func(d *appsv1.Deployment) { d.Spec.Replicas = ptrInt32(c.replicas) })
		w.settle()
		w.wantSizes(sz("v1", int(c.stable), "v2", int(c.canary)))
		w.wantState(grayapi.PhaseInvalid, true)
		if st := w.status(); st.Target != c.canary || st.HeldAt == nil {
			t.Fatalf("status %+v at %d replicas, want target %d and the hold kept", st, c.replicas, c.canary)
		}
	}
}

// A resume or undo request cannot be served while Invalid: it is dropped at once with the
// reason, so that fixing the annotation later does not carry it out by surprise.
func TestRequestsWhileInvalidAreDroppedAtOnce(t *testing.T) {
	for _, action := range []string{"undo", "next", "retry"} {
		t.Run(action, func(t *testing.T) {
			w := startGray(t, grayDeployment(10, "20,50"))
			w.setImage("v2")
			w.settle()
			w.setAnnotation(grayapi.PercentAnnotation, "x")
			w.settle()
			w.takeEvents()
			w.setAnnotation(grayapi.ResumeAnnotation, "2:"+action)
			w.settle()
			if _, ok := w.deployment().Annotations[grayapi.ResumeAnnotation]; ok {
				t.Fatalf("the %s request was kept while Invalid", action)
			}
			w.wantEvents("GrayResumeIgnored", "the rollout is Invalid")
			w.setAnnotation(grayapi.PercentAnnotation, "20,50")
			w.settle()
			w.wantState(grayapi.PhaseHeld, true)
			w.wantSizes(sz("v1", 8, "v2", 2))
		})
	}
}

// An abort needs no hold point: it is carried out while Invalid.
func TestAbortWhileInvalid(t *testing.T) {
	w := startGray(t, grayDeployment(10, "20"))
	w.setImage("v2")
	w.settle()
	w.setAnnotation(grayapi.PercentAnnotation, "x")
	w.settle()
	w.setAnnotation(grayapi.ResumeAnnotation, "2:abort")
	w.settle()
	w.wantSizes(sz("v1", 10, "v2", 0))
	if st := w.status(); st.Phase != grayapi.PhaseAborted {
		t.Fatalf("phase %s after an abort while Invalid, want Aborted", st.Phase)
	}
}
