package measure

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/kubegray/kubectl-gray/pkg/gates"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// BenchmarkQuietNamespaceDelay: how long a quiet namespace's measurements wait for a slot of a
// provider of concurrency 4, alone and beside a noisy namespace whose 16 gates take 500 ms each
// and are asked again as soon as they are taken. Each iteration asks for the quiet namespace's 4
// measurements (5 ms each) at once and waits for them; the delay is from the ask to the start of
// the measurement, reported as its p50 and p99 (ms).
func BenchmarkQuietNamespaceDelay(b *testing.B) {
	for _, noisy := range []bool{false, true} {
		name := "alone"
		if noisy {
			name = "beside-noisy"
		}
		b.Run(name, func(b *testing.B) {
			provider := &gates.Provider{Name: "bench-" + name, Type: gates.ProviderPrometheus, Timeout: 10 * time.Second, Concurrency: 4}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan string, 1000)
			p := NewPool(ctx, time.Now, func(n string) { done <- n })
			var noise sync.WaitGroup
			if noisy {
				for i := range 16 {
					noise.Go(func() {
						for round := 0; ctx.Err() == nil; round++ {
							finished := make(chan struct{})
							p.Submit(Job{Key: Key{Deployment: types.UID(fmt.Sprintf("noisy-%d", i)), Gate: "slow"}, Name: fmt.Sprintf("noisy/web-%d", i),
								Provider: provider, Due: time.Unix(int64(round), 0),
								Measure: func(ctx context.Context, _ time.Time) (grayapi.GateOutcome, string, string) {
									defer close(finished)
									select {
									case <-time.After(500 * time.Millisecond):
									case <-ctx.Done():
									}
									return grayapi.GatePass, "", "slow"
								}})
							select {
							case <-finished:
							case <-ctx.Done():
							}
						}
					})
				}
				time.Sleep(100 * time.Millisecond)
			}
			var mu sync.Mutex
			var delays []time.Duration
			b.ResetTimer()
			for round := 0; round < b.N; round++ {
				var quiet sync.WaitGroup
				for i := range 4 {
					quiet.Add(1)
					asked := time.Now()
					p.Submit(Job{Key: Key{Deployment: types.UID(fmt.Sprintf("quiet-%d", i)), Gate: "fast"}, Name: fmt.Sprintf("quiet/web-%d", i),
						Provider: provider, Due: time.Unix(int64(round), 0),
						Measure: func(context.Context, time.Time) (grayapi.GateOutcome, string, string) {
							defer quiet.Done()
							mu.Lock()
							delays = append(delays, time.Since(asked))
							mu.Unlock()
							time.Sleep(5 * time.Millisecond)
							return grayapi.GatePass, "", "fast"
						}})
				}
				quiet.Wait()
			}
			b.StopTimer()
			cancel()
			noise.Wait()
			slices.Sort(delays)
			at := func(q float64) float64 {
				return float64(delays[int(q*float64(len(delays)-1))]) / float64(time.Millisecond)
			}
			b.ReportMetric(at(0.5), "p50-ms")
			b.ReportMetric(at(0.99), "p99-ms")
		})
	}
}
