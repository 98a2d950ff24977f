package graysync

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/kubegray/kubectl-gray/internal/testutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// abortedAt20 is web rolled to v2, held at 20% of 10, and aborted on request: v1 back at 10.
func abortedAt20(t *testing.T) *grayWorld {
	t.Helper()
	w := startGray(t, testutil.GrayWeb(10, "20"))
	w.setImage("v2")
	w.settle()
	w.setAnnotation(grayapi.ResumeAnnotation, "2:abort")
	w.settle()
	w.wantSizes(sz("v1", 10, "v2", 0))
	return w
}

// kubegray.io/on-failure: abort records the failure in one status write before anything moves,
// then aborts by sizes alone: the template stays the canary's (Git's), the stable revision gets
// every replica back, and nothing rolls again until a retry.
func TestGrayOnFailureAbort(t *testing.T) {
	d := testutil.GrayWeb(10, "20", testutil.WithProgressDeadline(10))
	d.Annotations[grayapi.OnFailureAnnotation] = "abort"
	w := startGray(t, d)
	w.holdNotReady("v2")
	w.takeEvents()
	w.at(11)
	w.sync()
	w.wantState(grayapi.PhaseDegraded, true)
	w.wantSizes(sz("v1", 8, "v2", 2))
	if c := deployutilCondition(w.deployment(), grayapi.ConditionStalled); c == nil || c.Status != corev1.ConditionTrue {
		t.Fatalf("Stalled = %+v before the abort acts, want True", c)
	}

	w.sync()
	if st := w.status(); st.Phase != grayapi.PhaseAborted || st.Failure == nil || st.Failure.Reason != grayapi.ReasonProgressDeadlineExceeded {
		t.Fatalf("status after the abort's first sync %+v, want Aborted with the deadline failure", st)
	}
	if label := w.replicaSetOf("v2").Labels[grayapi.AbortedLabel]; label != "2" {
		t.Fatalf("canary's %s label = %q, want 2", grayapi.AbortedLabel, label)
	}
	w.settleNotReady("v2")
	w.wantState(grayapi.PhaseAborted, false)
	w.wantSizes(sz("v1", 10, "v2", 0))
	if image := w.deployment().Spec.Template.Spec.Containers[0].Image; image != "v2" {
		t.Fatalf("template runs %s after the abort, want v2 (the abort keeps the template)", image)
	}
	dep := w.deployment()
	if c := deployutilCondition(dep, appsv1.DeploymentProgressing); c == nil || c.Status != corev1.ConditionFalse || c.Reason != "ProgressDeadlineExceeded" {
		t.Fatalf("Progressing = %+v, want False/ProgressDeadlineExceeded so that kubectl rollout status fails", c)
	}
	if c := deployutilCondition(dep, grayapi.ConditionStalled); c == nil || c.Status != corev1.ConditionTrue || c.Reason != grayapi.ReasonAborted {
		t.Fatalf("Stalled = %+v, want True/Aborted", c)
	}
	w.wantEvents("GrayAborted", "scaling replica set")

	// A GitOps tool applying the same manifest again changes nothing.
	w.setAnnotation("argocd.argoproj.io/tracking-id", "web")
	w.settleNotReady("v2")
	w.wantSizes(sz("v1", 10, "v2", 0))
	w.wantState(grayapi.PhaseAborted, false)

	// A new template is a new rollout, held at its first point.
	w.setImage("v3")
	w.settle()
	if st := w.status(); st.Phase != grayapi.PhaseHeld || st.Failure != nil || st.Revision != 3 {
		t.Fatalf("next rollout: %+v, want Held on revision 3 and no failure", st)
	}
	w.wantSizes(sz("v1", 8, "v2", 0, "v3", 2))
}

// A person's abort ("<rev>:abort", kubectl gray abort) of a healthy held canary moves pods back
// within maxSurge and maxUnavailable, and a retry starts the same revision at its first hold point.
func TestGrayAbortAndRetryOnRequest(t *testing.T) {
	d := testutil.GrayWeb(10, "20,50", testutil.WithProgressDeadline(600))
	w := startGray(t, d)
	w.setImage("v2")
	w.settle()
	w.wantState(grayapi.PhaseHeld, true)
	w.setAnnotation(grayapi.ResumeAnnotation, "2:next")
	w.settle()
	w.wantSizes(sz("v1", 5, "v2", 5))
	w.takeEvents()

	w.setAnnotation(grayapi.ResumeAnnotation, "2:abort")
	w.settle()
	w.wantState(grayapi.PhaseAborted, false)
	w.wantSizes(sz("v1", 10, "v2", 0))
	if _, ok := w.deployment().Annotations[grayapi.ResumeAnnotation]; ok {
		t.Fatalf("the abort request was not consumed")
	}
	if st := w.status(); st.Failure == nil || st.Failure.Reason != grayapi.ReasonAborted {
		t.Fatalf("status %+v, want the failure Aborted", st)
	}
	w.wantEvents("GrayAborted")

	w.setAnnotation(grayapi.ResumeAnnotation, "2:retry")
	w.settle()
	w.wantState(grayapi.PhaseHeld, true)
	w.wantSizes(sz("v1", 8, "v2", 2))
	if _, ok := w.replicaSetOf("v2").Labels[grayapi.AbortedLabel]; ok {
		t.Fatalf("the abort record stayed after the retry")
	}
	w.wantEvents("GrayRetried")
}

// A retry of a rollout that is not aborted, or an abort of a revision not in flight, is dropped
// at once with the reason.
func TestGrayAbortRequestsIgnored(t *testing.T) {
	w := startGray(t, testutil.GrayWeb(10, "20"))
	w.setImage("v2")
	w.settle()
	w.takeEvents()
	w.setAnnotation(grayapi.ResumeAnnotation, "2:retry")
	w.settle()
	w.wantEvents("GrayResumeIgnored", "revision 2 is not aborted")
	w.setAnnotation(grayapi.ResumeAnnotation, "1:abort")
	w.settle()
	w.wantEvents("GrayResumeIgnored", "revision 1 is not the rollout in flight")
	w.wantState(grayapi.PhaseHeld, true)
	w.wantSizes(sz("v1", 8, "v2", 2))
}

// The abort's record on the canary's ReplicaSet outlives a lost status: the rollout stays aborted.
func TestGrayAbortSurvivesALostStatus(t *testing.T) {
	w := abortedAt20(t)
	w.edit(func(d *appsv1.Deployment) { delete(d.Annotations, grayapi.StatusAnnotation) })
	w.settle()
	w.wantSizes(sz("v1", 10, "v2", 0))
	w.wantState(grayapi.PhaseAborted, false)
}

// Leaving gray while aborted lets the rollout complete, and takes the abort record off, so that
// opting in again later does not abort the same revision a second time.
func TestGrayLeavingGrayDropsTheAbortRecord(t *testing.T) {
	w := abortedAt20(t)
	w.edit(func(d *appsv1.Deployment) { delete(d.Annotations, grayapi.PercentAnnotation) })
	w.settle()
	w.wantSizes(sz("v1", 0, "v2", 10))
	if _, ok := w.replicaSetOf("v2").Labels[grayapi.AbortedLabel]; ok {
		t.Fatalf("the abort record stayed on a Deployment that left gray")
	}
	w.setAnnotation(grayapi.PercentAnnotation, "20")
	w.settle()
	w.wantSizes(sz("v1", 0, "v2", 10))
}

// Someone deletes an aborted canary's ReplicaSet (kubectl delete rs, a cleanup script) while the
// template still names it: the sync finds no canary and an Aborted status of the revision in
// flight. It stays aborted, with the stable revision at every replica, and recreates nothing, and
// does not crash the controller (it once did: the aborted sync read the missing canary's name);
// a retry starts the revision again.
func TestGrayAbortedCanaryReplicaSetDeleted(t *testing.T) {
	w := abortedAt20(t)
	canary := w.replicaSetOf("v2")
	if err := w.f.client.Tracker().Delete(replicaSetsResource, canary.Namespace, canary.Name); err != nil {
		t.Fatal(err)
	}
	w.settle()
	w.wantSizes(sz("v1", 10))
	w.wantState(grayapi.PhaseAborted, false)

	// A retry starts revision 2 from its first hold point, its ReplicaSet made anew.
	w.setAnnotation(grayapi.ResumeAnnotation, "2:retry")
	w.settle()
	w.wantSizes(sz("v1", 8, "v2", 2))
	w.wantState(grayapi.PhaseHeld, true)
}
