package rollout

import "testing"

func TestGrayTarget(t *testing.T) {
	tests := []struct {
		replicas int32
		percent  int32
		want     int32
	}{
		// the hand-computed table of the doc comment
		{replicas: 1, percent: 1, want: 1},
		{replicas: 1, percent: 33, want: 1},
		{replicas: 1, percent: 34, want: 1},
		{replicas: 1, percent: 50, want: 1},
		{replicas: 1, percent: 99, want: 1},
		{replicas: 2, percent: 1, want: 1},
		{replicas: 2, percent: 33, want: 1},
		{replicas: 2, percent: 34, want: 1},
		{replicas: 2, percent: 50, want: 1},
		{replicas: 2, percent: 99, want: 1},
		{replicas: 3, percent: 1, want: 1},
		{replicas: 3, percent: 33, want: 1},
		{replicas: 3, percent: 34, want: 2},
		{replicas: 3, percent: 50, want: 2},
		{replicas: 3, percent: 99, want: 2},
		{replicas: 10, percent: 1, want: 1},
		{replicas: 10, percent: 33, want: 4},
		{replicas: 10, percent: 34, want: 4},
		{replicas: 10, percent: 50, want: 5},
		{replicas: 10, percent: 99, want: 9},
		// edges
		{replicas: 0, percent: 50, want: 0},
		{replicas: 10, percent: 0, want: 0},
		{replicas: -3, percent: 50, want: 0},
		{replicas: 10, percent: -5, want: 0},
		{replicas: 10, percent: 100, want: 9},
		{replicas: 10, percent: 250, want: 9},
		{replicas: 1, percent: 100, want: 1},
		{replicas: 100, percent: 25, want: 25},
		{replicas: 2147483647, percent: 50, want: 1073741824},
		{replicas: 2147483647, percent: 100, want: 2147483646},
	}
	for _, tt := range tests {
		if got := GrayTarget(tt.replicas, tt.percent); got != tt.want {
			t.Errorf("GrayTarget(R=%d, P=%d) = %d, want %d", tt.replicas, tt.percent, got, tt.want)
		}
	}
}
