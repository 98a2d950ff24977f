package gray

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegray/kubectl-gray/pkg/deployutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// What each phase shows in the GrayHeld and Stalled conditions (Argo CD and Flux read them),
// from the conditions the Deployment had before; two hold points, revision 2. The messages
// are written out by hand.
func TestSetConditions(t *testing.T) {
	type cond struct {
		status          corev1.ConditionStatus
		reason, message string
	}
	earlier := metav1.NewTime(testNow.Add(-time.Hour))
	was := func(kind appsv1.DeploymentConditionType, c cond) appsv1.DeploymentCondition {
		return *deployutil.NewDeploymentCondition(kind, c.status, c.reason, c.message, earlier)
	}
	heldAt20 := cond{corev1.ConditionTrue, grayapi.ReasonHoldPointReached, "held at 20% (step 1/2): 2 of 10 replicas on revision 2; run kubectl gray resume"}
	deadline := &grayapi.Failure{Reason: grayapi.ReasonProgressDeadlineExceeded}
	for _, tc := range []struct {
		name     string
		before   []appsv1.DeploymentCondition
		replicas int32
		st       grayapi.Status
		held     cond
		stalled  *cond // nil: no Stalled condition
		// heldSince is GrayHeld's lastTransitionTime: kept while its status stays.
		heldSince metav1.Time
	}{
		{"held at its target", nil, 10, grayapi.Status{Phase: grayapi.PhaseHeld, Revision: 2, Percent: 20, Target: 2},
			heldAt20, nil, metav1.NewTime(testNow)},
		{"held, then the Deployment scaled to 20", []appsv1.DeploymentCondition{was(grayapi.ConditionGrayHeld, heldAt20)}, 20,
			grayapi.Status{Phase: grayapi.PhaseHeld, Revision: 2, Percent: 20, Target: 4},
			cond{corev1.ConditionTrue, grayapi.ReasonHoldPointReached, "held at 20% (step 1/2): 4 of 20 replicas on revision 2; run kubectl gray resume"},
			nil, earlier},
		{"progressing from a hold", []appsv1.DeploymentCondition{was(grayapi.ConditionGrayHeld, heldAt20)}, 10,
			grayapi.Status{Phase: grayapi.PhaseProgressing, Revision: 2, Step: 1, Percent: 50, Target: 5, Message: "rolling to 50%"},
			cond{corev1.ConditionFalse, "Progressing", "rolling to 50%"}, nil, metav1.NewTime(testNow)},
		{"degraded, fewer pods not ready since", []appsv1.DeploymentCondition{
			was(grayapi.ConditionGrayHeld, cond{corev1.ConditionFalse, grayapi.ReasonProgressDeadlineExceeded, "2 new pods not ready"}),
			was(grayapi.ConditionStalled, cond{corev1.ConditionTrue, grayapi.ReasonProgressDeadlineExceeded, "2 new pods not ready"}),
		}, 10, grayapi.Status{Phase: grayapi.PhaseDegraded, Revision: 2, Percent: 20, Target: 2, Failure: deadline, Message: "1 new pod not ready"},
			cond{corev1.ConditionFalse, grayapi.ReasonProgressDeadlineExceeded, "1 new pod not ready"},
			&cond{corev1.ConditionTrue, grayapi.ReasonProgressDeadlineExceeded, "1 new pod not ready"}, earlier},
		{"aborted, then back on the stable revision", []appsv1.DeploymentCondition{
			was(grayapi.ConditionStalled, cond{corev1.ConditionTrue, "Aborted", "aborted: scaling back"}),
		}, 10, grayapi.Status{Phase: grayapi.PhaseAborted, Revision: 2, Failure: deadline, Message: "aborted: back on revision 1"},
			cond{corev1.ConditionFalse, "Aborted", "aborted: back on revision 1"},
			&cond{corev1.ConditionTrue, "Aborted", "aborted: back on revision 1"}, metav1.NewTime(testNow)},
		{"a failure's Stalled goes once it is resumed", []appsv1.DeploymentCondition{
			was(grayapi.ConditionStalled, cond{corev1.ConditionTrue, grayapi.ReasonProgressDeadlineExceeded, "2 new pods not ready"}),
		}, 10, grayapi.Status{Phase: grayapi.PhaseProgressing, Revision: 2, Percent: 20, Target: 2, Message: "rolling to 20%"},
			cond{corev1.ConditionFalse, "Progressing", "rolling to 20%"}, nil, metav1.NewTime(testNow)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status := appsv1.DeploymentStatus{Conditions: tc.before}
			SetConditions(&status, tc.st, tc.replicas, 2, metav1.NewTime(testNow))
			check := func(kind appsv1.DeploymentConditionType, want cond) *appsv1.DeploymentCondition {
				got := deployutil.GetDeploymentCondition(status, kind)
				if got == nil || got.Status != want.status || got.Reason != want.reason || got.Message != want.message {
					t.Errorf("%s = %+v, want %+v", kind, got, want)
				}
				return got
			}
			if held := check(grayapi.ConditionGrayHeld, tc.held); held != nil && !held.LastTransitionTime.Equal(&tc.heldSince) {
				t.Errorf("GrayHeld last transition %s, want %s", held.LastTransitionTime, tc.heldSince)
			}
			switch {
			case tc.stalled != nil:
				check(grayapi.ConditionStalled, *tc.stalled)
			case deployutil.GetDeploymentCondition(status, grayapi.ConditionStalled) != nil:
				t.Errorf("Stalled = %+v, want none", deployutil.GetDeploymentCondition(status, grayapi.ConditionStalled))
			}
		})
	}
}

// A message of 250 KB (a value quoted whole by some path) reaches the conditions cut to
// grayapi.MaxStatusMessage, as the status annotation's is: Argo CD shows a condition's message
// whole.
func TestSetConditionsCapsMessages(t *testing.T) {
	huge := strings.Repeat("5", 250000)
	for _, st := range []grayapi.Status{
		{Phase: grayapi.PhaseInvalid, Revision: 2, Message: "invalid " + huge},
		{Phase: grayapi.PhaseHeld, Revision: 2, Percent: 20, Target: 2,
			Gates: []grayapi.GateStatus{{Name: "smoke", Verdict: grayapi.GateCannotTell, Unsure: 9, Last: grayapi.GateError, Why: huge}}},
	} {
		var status appsv1.DeploymentStatus
		SetConditions(&status, st, 10, 2, metav1.NewTime(testNow))
		for _, c := range status.Conditions {
			if len(c.Message) > grayapi.MaxStatusMessage {
				t.Errorf("%s, phase %s: a message of %d bytes, want at most %d", c.Type, st.Phase, len(c.Message), grayapi.MaxStatusMessage)
			}
		}
	}
}
