package gray

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
