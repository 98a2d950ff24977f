package gray

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/kubegray/kubectl-gray/internal/testutil"
)

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

// BenchmarkDecide and BenchmarkServes price what a status write now asks beside the sync's own
// decision: Serves decides once per request (BENCHMARKS.md: what a rollout serves).
//
//	go test -run '^$' -bench 'BenchmarkDecide$|BenchmarkServes$' -benchmem -count 5 ./controller/gray/
func BenchmarkDecide(b *testing.B) {
	f := heldFacts()
	for b.Loop() {
		Decide(context.Background(), f)
	}
}

func BenchmarkServes(b *testing.B) {
	f := heldFacts()
	for b.Loop() {
		Serves(context.Background(), f, UnpauseReachesHold)
	}
}
