package graysync

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/kubegray/kubectl-gray/internal/testutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// A gray Deployment no rollout holds in alongside mode (never taken over, or released when its
// rollout completed) serves no request: one written is dropped with a GrayResumeIgnored Warning,
// as in instead mode, where it used to stay on the Deployment for good (TestGitOps, Argo CD's
// actions tried on a released Deployment). Its user's pause is a plain one there, which the
// built-in controller ends on an unpause, so the status serves the unpause while it lasts (it
// served nothing, which gated Argo CD's resume off).
func TestAlongsideReleasedServes(t *testing.T) {
	w := newAlongsideWorld(t, testutil.GrayWeb(10, "20"), grayapi.TakeoverAdmission)
	w.settle()
	if st := w.status(); st.Phase != grayapi.PhaseComplete || st.Serves == nil || len(st.Serves) != 0 {
		t.Fatalf("status of the untaken Deployment = %+v, want Complete serving nothing ([])", st)
	}
	w.takeEvents()
	for _, req := range []string{"1:next", "1:undo", "1:abort"} {
		w.setAnnotation(grayapi.ResumeAnnotation, req)
		w.settle()
		if value, pending := w.deployment().Annotations[grayapi.ResumeAnnotation]; pending {
			t.Fatalf("%s stays on the released Deployment (%q)", req, value)
		}
		w.wantEvents("Warning GrayResumeIgnored Ignored kubegray.io/resume=\"" + req + "\": no gray rollout is in flight")
	}
	w.edit(func(d *appsv1.Deployment) { d.Spec.Paused = true })
	w.builtInObserves()
	w.settle()
	if st := w.status(); st.Serves.String() != "unpause" || st.ObservedGeneration != w.deployment().Generation {
		t.Fatalf("status of the Deployment its user paused = %+v, want it to serve the unpause", st)
	}
	w.edit(func(d *appsv1.Deployment) { d.Spec.Paused = false })
	w.builtInObserves()
	w.settle()
	if st := w.status(); st.Serves.String() != "nothing" {
		t.Fatalf("status once unpaused serves %s, want nothing", st.Serves)
	}
}

// builtInObserves is the built-in controller's status write after a change of spec: it observes
// the generation (gray-controller records a completed revision only once it has).
func (w *grayWorld) builtInObserves() {
	d := w.deployment()
	d.Status.ObservedGeneration = d.Generation
	w.put(d)
}
