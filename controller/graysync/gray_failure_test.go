package graysync

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/kubegray/kubectl-gray/internal/testutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// deleteReplicaSetOf removes the ReplicaSet running image from the server, as `kubectl delete rs`
// does (its pods go with it).
func (w *grayWorld) deleteReplicaSetOf(image string) {
	w.t.Helper()
	rs := w.replicaSetOf(image)
	if err := w.f.client.Tracker().Delete(replicaSetsResource, rs.Namespace, rs.Name); err != nil {
		w.t.Fatal(err)
	}
}

// A held rollout whose stable ReplicaSet is deleted has nothing to go back to: the canary never
// grows, no other old ReplicaSet is revived in its place (not even by a scale), the rollout is
// Degraded saying why, and a resume --full still finishes it on the new revision.
func TestGrayStableReplicaSetGone(t *testing.T) {
	w := newGrayWorld(t, testutil.GrayWeb(10, "20"))
	w.cap = 2
	w.setImage("v2")
	w.settle()
	w.setImage("v3") // v2 becomes an abandoned canary at 2 → 0 on the way to v3's hold
	w.settle()
	w.wantSizes(sz("v1", 8, "v2", 0, "v3", 2))

	w.deleteReplicaSetOf("v1")
	w.settle()
	w.wantSizes(sz("v2", 0, "v3", 2))
	st := w.status()
	if st.Phase != grayapi.PhaseDegraded || st.Failure == nil || st.Failure.Reason != grayapi.ReasonStableReplicaSetGone ||
		!strings.Contains(st.Message, "the replica set of stable revision 1 is gone") {
		t.Fatalf("status %+v, want Degraded because stable revision 1 is gone", st)
	}
	w.wantEvents("Warning GrayDegraded Revision 3: the replica set of stable revision 1 is gone")

	w.cap = 4
	w.edit(func(d *appsv1.Deployment) { d.Spec.Replicas = ptrInt32(20) })
	w.settle()
	w.wantSizes(sz("v2", 0, "v3", 4))

	w.cap = 20
	w.setAnnotation(grayapi.ResumeAnnotation, "3:full")
	w.settle()
	w.wantSizes(sz("v2", 0, "v3", 20))
	if st := w.status(); st.Phase != grayapi.PhaseComplete || st.Failure != nil {
		t.Fatalf("status %+v, want Complete", st)
	}
}

// kubegray.io/resume "<revision>:undo" (Argo CD's gray-undo action) rolls a held rollout back
// as kubectl gray undo would: the stable template written back, the request gone, and the way
// back skips every hold point. A request for another revision is dropped with a warning.
func TestGrayUndoRequest(t *testing.T) {
	w := newGrayWorld(t, testutil.GrayWeb(10, "20,50"))
	w.cap = 2
	w.setImage("v2")
	w.settle()
	w.wantState(grayapi.PhaseHeld, true)

	w.setAnnotation(grayapi.ResumeAnnotation, "7:undo")
	w.settle()
	w.wantState(grayapi.PhaseHeld, true)
	if _, ok := w.deployment().Annotations[grayapi.ResumeAnnotation]; ok {
		t.Fatal("a request for another revision was kept")
	}
	w.wantEvents("GrayResumeIgnored", "revision 7 is not the rollout in flight (revision 2)")

	w.cap = 10
	w.setAnnotation(grayapi.ResumeAnnotation, "2:undo")
	w.settle()
	w.wantSizes(sz("v1", 10, "v2", 0))
	d := w.deployment()
	if image := d.Spec.Template.Spec.Containers[0].Image; image != "v1" {
		t.Fatalf("template runs %s after the undo request, want v1", image)
	}
	if _, ok := d.Annotations[grayapi.ResumeAnnotation]; ok {
		t.Fatal("the undo request was not consumed")
	}
	st := w.status()
	if st.Phase != grayapi.PhaseComplete || st.Failure == nil || st.Failure.RolledBackFrom != 2 || st.Failure.Reason != grayapi.ReasonRolledBack {
		t.Fatalf("status %+v, want Complete with revision 2 rolled back", st)
	}
	w.wantEvents("GrayRolledBack", "revision 2 abandoned")
}
