package gray

import (
	"context"
	"testing"
)

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
