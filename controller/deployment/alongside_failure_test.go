package deployment

import (
	"testing"

	"github.com/kubegray/kubectl-gray/internal/testutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// In alongside mode the Deployment stays paused on Recreate while taken over: the deadline
// runs on our hold alone, and the rollback write keeps the takeover.
func TestAlongsideOnFailureRollback(t *testing.T) {
	d := grayDeployment(10, "20", testutil.WithProgressDeadline(10))
	d.Annotations[grayapi.OnFailureAnnotation] = "rollback"
	w := newAlongsideWorld(t, d, TakeoverAdmission)
	w.step()
	w.takeOverAsPolicy("v2", savedDefault)
	w.freezes()
	for range 10 {
		w.sync()
		w.readyBut("v2", 0)
	}
	w.wantSizes(sz("v1", 8, "v2", 2))
	if st := w.status(); st.Phase != grayapi.PhaseProgressing || st.HeldAt == nil {
		t.Fatalf("phase %s heldAt %v, want Progressing on our hold (canary not ready)", st.Phase, st.HeldAt)
	}
	w.at(11)
	w.sync()
	w.wantTakenOver(savedDefault)
	if image := w.deployment().Spec.Template.Spec.Containers[0].Image; image != "v1" {
		t.Fatalf("template runs %s after the rollback on failure, want v1", image)
	}
	if st := w.status(); st.Phase != grayapi.PhaseRolledBack || st.Failure == nil || st.Failure.RolledBackFrom != 2 {
		t.Fatalf("after the rollback write: %+v", st)
	}
	// The built-in controller's paused sync renumbers the ReplicaSet that matches the template
	// again before our next sync (seen on a real cluster): our status then names a revision
	// the new ReplicaSet no longer has, and the failure must survive that.
	stable := w.replicaSetOf("v1")
	stable.Annotations["deployment.kubernetes.io/revision"] = "3"
	stable.Annotations["deployment.kubernetes.io/revision-history"] = "1"
	w.put(stable)
	w.settle()
	w.wantSizes(sz("v1", 10, "v2", 0))
	w.wantReleased(quarterStrategy())
	if st := w.status(); st.Phase != grayapi.PhaseComplete || st.Failure == nil || st.Failure.RolledBackFrom != 2 {
		t.Fatalf("released status %+v: want Complete with the failure of revision 2 kept", st)
	}
	w.wantEvents("GrayDegraded", "GrayRolledBack", "after revision 2 failed")
}
