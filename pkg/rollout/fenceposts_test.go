package rollout

import (
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"
)

func str(s string) *intstr.IntOrString { v := intstr.FromString(s); return &v }
func num(n int32) *intstr.IntOrString  { v := intstr.FromInt32(n); return &v }

func TestResolveFenceposts(t *testing.T) {
	tests := []struct {
		name            string
		maxSurge        *intstr.IntOrString
		maxUnavailable  *intstr.IntOrString
		desired         int32
		wantSurge       int32
		wantUnavailable int32
		wantErr         bool
	}{
		{name: "0%/0% of 0 → both-zero rule", maxSurge: str("0%"), maxUnavailable: str("0%"), desired: 0, wantSurge: 0, wantUnavailable: 1},
		{name: "39%/39% of 10: surge up, unavailable down", maxSurge: str("39%"), maxUnavailable: str("39%"), desired: 10, wantSurge: 4, wantUnavailable: 3},
		{name: "bad surge string", maxSurge: str("oops"), maxUnavailable: str("39%"), desired: 10, wantErr: true},
		{name: "bad unavailable string", maxSurge: str("55%"), maxUnavailable: str("urg"), desired: 10, wantErr: true},
		{name: "number without percent sign as string", maxSurge: str("12"), maxUnavailable: num(1), desired: 10, wantErr: true},
		{name: "nil surge", maxSurge: nil, maxUnavailable: str("39%"), desired: 10, wantSurge: 0, wantUnavailable: 3},
		{name: "nil unavailable", maxSurge: str("39%"), maxUnavailable: nil, desired: 10, wantSurge: 4, wantUnavailable: 0},
		{name: "both nil", maxSurge: nil, maxUnavailable: nil, desired: 10, wantSurge: 0, wantUnavailable: 1},
		{name: "defaults 25%/25% of 10", maxSurge: str("25%"), maxUnavailable: str("25%"), desired: 10, wantSurge: 3, wantUnavailable: 2},
		{name: "defaults 25%/25% of 20", maxSurge: str("25%"), maxUnavailable: str("25%"), desired: 20, wantSurge: 5, wantUnavailable: 5},
		{name: "defaults 25%/25% of 5", maxSurge: str("25%"), maxUnavailable: str("25%"), desired: 5, wantSurge: 2, wantUnavailable: 1},
		{name: "defaults 25%/25% of 1", maxSurge: str("25%"), maxUnavailable: str("25%"), desired: 1, wantSurge: 1, wantUnavailable: 0},
		{name: "surge 0, 25% of 3 rounds to 0 → unavailable 1", maxSurge: num(0), maxUnavailable: str("25%"), desired: 3, wantSurge: 0, wantUnavailable: 1},
		{name: "absolute ints pass through", maxSurge: num(3), maxUnavailable: num(2), desired: 10, wantSurge: 3, wantUnavailable: 2},
		{name: "absolute ints above desired are not clamped here", maxSurge: num(20), maxUnavailable: num(20), desired: 10, wantSurge: 20, wantUnavailable: 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			surge, unavailable, err := ResolveFenceposts(tt.maxSurge, tt.maxUnavailable, tt.desired)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if surge != tt.wantSurge || unavailable != tt.wantUnavailable {
				t.Errorf("got surge %d unavailable %d, want %d %d", surge, unavailable, tt.wantSurge, tt.wantUnavailable)
			}
		})
	}
}
