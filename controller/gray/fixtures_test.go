package gray

import (
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegray/kubectl-gray/internal/testutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// testNow is the instant every decision here is asked at.
var testNow = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

// heldAt20 is web's revision 2 held at 20% of 10 (target 2) over stable revision 1, reached three
// minutes before testNow and settled two minutes before.
func heldAt20() grayapi.Status {
	heldAt, settledAt := metav1.NewTime(testNow.Add(-3*time.Minute)), metav1.NewTime(testNow.Add(-2*time.Minute))
	return grayapi.Status{Revision: 2, StableRevision: 1, Step: 0, Percent: 20, Target: 2, Phase: grayapi.PhaseHeld, HeldAt: &heldAt, SettledAt: &settledAt}
}

// heldFacts is web's revision 2 held at 20% of 10 over stable revision 1, as a sync gathers it.
func heldFacts() Facts {
	d := testutil.GrayWeb(10, "20")
	d.Generation, d.Spec.Paused = 5, true
	held := heldAt20()
	held.ObservedGeneration = 5
	canary, stable := planRS(2, 2, 2, 10), planRS(1, 8, 8, 10)
	return Facts{Prev: held, HasPrev: true, Points: []int32{20}, Deployment: d, NewRS: canary, OldRSs: []*appsv1.ReplicaSet{stable},
		Cached: []*appsv1.ReplicaSet{canary, stable}, Now: testNow}
}
