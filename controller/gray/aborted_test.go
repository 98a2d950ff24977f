package gray

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kubegray/kubectl-gray/internal/testutil"
	"github.com/kubegray/kubectl-gray/pkg/deployutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// TestDecideAborted pins the sync of an aborted rollout. web has 10 replicas, maxSurge 3 and
// maxUnavailable 2; revision 3's canary (2, none ready) was held at 20% over stable revision 1
// (8, all available). The sizes are pkg/rollout's first worked row of PlanGrayAbort: the stable
// revision grows by min(2, 13 − 10) to 10, and the canary loses its 2 not-ready replicas.
func TestDecideAborted(t *testing.T) {
	heldAt := metav1.NewTime(testNow)
	now := metav1.NewTime(testNow)
	failure := &grayapi.Failure{Reason: grayapi.ReasonProgressDeadlineExceeded, Message: "replica set web-3 has 0 of 2 replicas available"}
	inFlight := grayapi.Status{Revision: 3, StableRevision: 1, Step: 0, Percent: 20, Target: 2, Phase: grayapi.PhaseDegraded, HeldAt: &heldAt, Failure: failure}
	web := func(paused bool, conditions ...appsv1.DeploymentCondition) *appsv1.Deployment {
		d := testutil.GrayWeb(10, "20")
		d.Spec.Paused = paused
		d.Spec.ProgressDeadlineSeconds = ptr.To[int32](20)
		d.Status.Conditions = conditions
		return d
	}
	// aborted is inFlight aborted, saying that the stable revision runs stable of 10.
	aborted := func(failure *grayapi.Failure, stable string) grayapi.Status {
		return grayapi.Status{Revision: 3, StableRevision: 1, Step: 0, Percent: 20, Phase: grayapi.PhaseAborted, Failure: failure,
			Message: "revision 3 aborted (" + failure.Reason + ": " + failure.Message + "); stable revision 1 runs " + stable +
				" of 10 replicas; kubectl gray retry web, or a new template, starts again"}
	}
	timedOut := func(message string) *appsv1.DeploymentCondition {
		return deployutil.NewDeploymentCondition(appsv1.DeploymentProgressing, corev1.ConditionFalse, deployutil.TimedOutReason, message, now)
	}
	canary, stable := planRS(3, 2, 0, 10), planRS(1, 8, 8, 10)
	tests := []struct {
		name  string
		f     abortedFacts
		want  AbortedSync
		sizes []int32 // the canary's, then the old ReplicaSets' in the plan's order
	}{{
		name: "aborted on its deadline while held: the hold goes first, the stable revision back to 10",
		f: abortedFacts{Status: inFlight, Prev: inFlight, HasPrev: true, Deployment: web(true), NewRS: canary,
			OldRSs: []*appsv1.ReplicaSet{stable}, Now: testNow},
		want: AbortedSync{Status: aborted(failure, "8"), Reported: aborted(failure, "10"), LeavesHold: true,
			Progressing: timedOut(aborted(failure, "10").Message)},
		sizes: []int32{0, 10},
	}, {
		name: "the next sync, not paused, the failure already mirrored: nothing to say again",
		f: abortedFacts{Status: aborted(failure, "10"), Prev: aborted(failure, "10"), HasPrev: true,
			Deployment: web(false, *timedOut(aborted(failure, "10").Message)), NewRS: planRS(3, 0, 0, 10),
			OldRSs: []*appsv1.ReplicaSet{planRS(1, 10, 10, 10)}, Now: testNow},
		want:  AbortedSync{Status: aborted(failure, "10"), Reported: aborted(failure, "10")},
		sizes: []int32{0, 10},
	}, {
		name: "the stable ReplicaSet deleted under a standing abort: no sizes, and the message says 0",
		f: abortedFacts{Status: inFlight, Prev: inFlight, HasPrev: true, Deployment: web(true), NewRS: canary,
			OldRSs: []*appsv1.ReplicaSet{planRS(2, 0, 0, 10)}, Now: testNow},
		want: AbortedSync{Status: aborted(failure, "0"), Reported: aborted(failure, "0"), LeavesHold: true,
			Progressing: timedOut(aborted(failure, "0").Message)},
	}, {
		name: "its status lost: the failure re-derived from the abort record, a pause not ours kept",
		f: abortedFacts{Status: grayapi.Status{Revision: 3, StableRevision: 1, Percent: 20, Target: 2}, Deployment: web(true),
			NewRS: canary, OldRSs: []*appsv1.ReplicaSet{stable}, Now: testNow},
		want: func() AbortedSync {
			lost := &grayapi.Failure{Reason: grayapi.ReasonAborted, Message: "replica set web-3 carries kubegray.io/aborted=3"}
			return AbortedSync{Status: aborted(lost, "8"), Reported: aborted(lost, "10"), Paused: true,
				Progressing: timedOut(aborted(lost, "10").Message)}
		}(),
		sizes: []int32{0, 10},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := decideAborted(tt.f)
			var sizes []int32
			if got.Sizes != nil {
				sizes = append([]int32{got.Sizes.NewSize}, got.Sizes.OldSizes...)
			}
			got.Sizes = nil
			if !apiequality.Semantic.DeepEqual(got, tt.want) || !apiequality.Semantic.DeepEqual(sizes, tt.sizes) {
				t.Errorf("decideAborted =\n%+v sizes %v\nwant\n%+v sizes %v", got, sizes, tt.want, tt.sizes)
			}
		})
	}
}
