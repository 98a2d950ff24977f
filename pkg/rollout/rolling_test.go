package rollout

import "testing"

func TestNewReplicasForRolling(t *testing.T) {
	tests := []struct {
		name       string
		desired    int32
		surge      int32
		newSpec    int32
		allSpecSum int32
		want       int32
	}{
		// upstream TestDeploymentController_reconcileNewReplicaSet (R=10)
		{name: "surge 0, old 10: no room", desired: 10, surge: 0, newSpec: 0, allSpecSum: 10, want: 0},
		{name: "surge 2, old 10: new 2", desired: 10, surge: 2, newSpec: 0, allSpecSum: 10, want: 2},
		{name: "surge 2, old 5: new 7", desired: 10, surge: 2, newSpec: 0, allSpecSum: 5, want: 7},
		{name: "surge 2, new 2 + old 10: at max", desired: 10, surge: 2, newSpec: 2, allSpecSum: 12, want: 2},
		// upstream TestNewRSNewReplicas
		{name: "R=1 surge 1, new 5 already over max", desired: 1, surge: 1, newSpec: 5, allSpecSum: 5, want: 5},
		{name: "R=6 surge 10, new 2: capped at R", desired: 6, surge: 10, newSpec: 2, allSpecSum: 2, want: 6},
		// the rolling sequence of docs/worked-numbers.md, R=10 surge 3
		{name: "rolling sync 1: create with 3", desired: 10, surge: 3, newSpec: 0, allSpecSum: 10, want: 3},
		{name: "rolling sync 2: 3 → 5", desired: 10, surge: 3, newSpec: 3, allSpecSum: 11, want: 5},
		{name: "rolling sync 4: 5 → 10", desired: 10, surge: 3, newSpec: 5, allSpecSum: 8, want: 10},
		{name: "scaling example B: 3 → 5", desired: 10, surge: 3, newSpec: 3, allSpecSum: 11, want: 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := NewReplicasForRolling(tt.desired, tt.surge, tt.newSpec, tt.allSpecSum); got != tt.want {
				t.Errorf("NewReplicasForRolling(%d, %d, %d, %d) = %d, want %d", tt.desired, tt.surge, tt.newSpec, tt.allSpecSum, got, tt.want)
			}
		})
	}
}

func TestMaxScaledDown(t *testing.T) {
	tests := []struct {
		name           string
		allPods        int32
		minAvailable   int32
		newUnavailable int32
		want           int32
	}{
		{name: "rolling sync 1: 13 − 8 − 3", allPods: 13, minAvailable: 8, newUnavailable: 3, want: 2},
		{name: "rolling sync 3: new pods available", allPods: 13, minAvailable: 8, newUnavailable: 0, want: 5},
		{name: "nothing to spare", allPods: 10, minAvailable: 8, newUnavailable: 2, want: 0},
		{name: "negative means nothing", allPods: 10, minAvailable: 9, newUnavailable: 2, want: -1},
		// upstream reconcileOldReplicaSets: R=10, surge 0, unavailable 0 → fencepost 1
		{name: "R=10 unavailable 1, old 10", allPods: 10, minAvailable: 9, newUnavailable: 0, want: 1},
		// scaling example A resume: 7 − 4 − 2
		{name: "scaling example A resume at 5/2", allPods: 7, minAvailable: 4, newUnavailable: 2, want: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := MaxScaledDown(tt.allPods, tt.minAvailable, tt.newUnavailable); got != tt.want {
				t.Errorf("MaxScaledDown(%d, %d, %d) = %d, want %d", tt.allPods, tt.minAvailable, tt.newUnavailable, got, tt.want)
			}
		})
	}
}
