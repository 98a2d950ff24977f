package rollout

import (
	"reflect"
	"testing"
)

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

func TestGrayCaps(t *testing.T) {
	tests := []struct {
		name       string
		replicas   int32
		target     int32
		wantMaxNew int32
		wantMinOld int32
	}{
		{name: "20% of 10", replicas: 10, target: 2, wantMaxNew: 2, wantMinOld: 8},
		{name: "full", replicas: 10, target: 10, wantMaxNew: 10, wantMinOld: 0},
		{name: "hold point 0", replicas: 3, target: 0, wantMaxNew: 0, wantMinOld: 3},
		{name: "target above R is clamped", replicas: 3, target: 5, wantMaxNew: 3, wantMinOld: 0},
		{name: "negative target is clamped", replicas: 3, target: -1, wantMaxNew: 0, wantMinOld: 3},
		{name: "R = 0", replicas: 0, target: 0, wantMaxNew: 0, wantMinOld: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			maxNew, minOld := GrayCaps(tt.replicas, tt.target)
			if maxNew != tt.wantMaxNew || minOld != tt.wantMinOld {
				t.Errorf("GrayCaps(%d, %d) = %d, %d, want %d, %d", tt.replicas, tt.target, maxNew, minOld, tt.wantMaxNew, tt.wantMinOld)
			}
		})
	}
}

func TestPlanGrayStep(t *testing.T) {
	rs := func(spec, available int32) GrayReplicaSet { return GrayReplicaSet{Spec: spec, Available: available} }
	tests := []struct {
		name        string
		replicas    int32
		surge       int32
		unavailable int32
		target      int32
		newRS       GrayReplicaSet
		old         []GrayReplicaSet
		wantNew     int32
		wantOld     []int32
	}{
		// The rows of the doc comment.
		{name: "surge 3: new grows to T, not to 3", replicas: 10, surge: 3, unavailable: 2, target: 2,
			newRS: rs(0, 0), old: []GrayReplicaSet{rs(10, 10)}, wantNew: 2, wantOld: []int32{10}},
		{name: "surge 3: old stops at R-T although 12-8-2 would allow 2 and availability 2", replicas: 10, surge: 3, unavailable: 2, target: 2,
			newRS: rs(2, 0), old: []GrayReplicaSet{rs(10, 10)}, wantNew: 2, wantOld: []int32{8}},
		{name: "surge 0 unavailable 1: old first", replicas: 10, surge: 0, unavailable: 1, target: 2,
			newRS: rs(0, 0), old: []GrayReplicaSet{rs(10, 10)}, wantNew: 0, wantOld: []int32{9}},
		{name: "surge 0 unavailable 1: then new", replicas: 10, surge: 0, unavailable: 1, target: 2,
			newRS: rs(0, 0), old: []GrayReplicaSet{rs(9, 9)}, wantNew: 1, wantOld: []int32{9}},
		{name: "surge 0 unavailable 1: waits for the new pod", replicas: 10, surge: 0, unavailable: 1, target: 2,
			newRS: rs(1, 0), old: []GrayReplicaSet{rs(9, 9)}, wantNew: 1, wantOld: []int32{9}},
		{name: "surge 0 unavailable 1: new pod available, old to 8", replicas: 10, surge: 0, unavailable: 1, target: 2,
			newRS: rs(1, 1), old: []GrayReplicaSet{rs(9, 9)}, wantNew: 1, wantOld: []int32{8}},
		{name: "abandoned canary goes first, stable last", replicas: 10, surge: 3, unavailable: 2, target: 2,
			newRS: rs(2, 2), old: []GrayReplicaSet{rs(1, 0), rs(9, 9)}, wantNew: 2, wantOld: []int32{0, 8}},
		// More.
		{name: "minReadySeconds: ready but not yet available old pods are not taken as the first to go",
			replicas: 10, surge: 3, unavailable: 2, target: 10,
			newRS: GrayReplicaSet{Spec: 4, Available: 4, Ready: 4}, old: []GrayReplicaSet{{Spec: 9, Available: 6, Ready: 9}},
			// budget₁ = min(13−8−0, 9) = 5 finds no not-ready pod (upstream would count the 3 not yet
			// available as unhealthy and remove them, costing available pods); budget₂ = 4+6−8 = 2.
			wantNew: 4, wantOld: []int32{7}},
		{name: "held and settled: nothing to do", replicas: 10, surge: 3, unavailable: 2, target: 2,
			newRS: rs(2, 2), old: []GrayReplicaSet{rs(8, 8)}, wantNew: 2, wantOld: []int32{8}},
		{name: "new above T is cut to T only", replicas: 10, surge: 3, unavailable: 2, target: 2,
			newRS: rs(5, 5), old: []GrayReplicaSet{rs(5, 5)}, wantNew: 2, wantOld: []int32{5}},
		{name: "P=0: new stays at 0, old stays at R", replicas: 10, surge: 3, unavailable: 2, target: 0,
			newRS: rs(0, 0), old: []GrayReplicaSet{rs(10, 10)}, wantNew: 0, wantOld: []int32{10}},
		{name: "maxSurge 100%: straight to T", replicas: 10, surge: 10, unavailable: 0, target: 2,
			newRS: rs(0, 0), old: []GrayReplicaSet{rs(10, 10)}, wantNew: 2, wantOld: []int32{10}},
		{name: "maxSurge 100%, unavailable 0: old waits for new availability", replicas: 10, surge: 10, unavailable: 0, target: 2,
			newRS: rs(2, 1), old: []GrayReplicaSet{rs(10, 10)}, wantNew: 2, wantOld: []int32{9}},
		{name: "full rollout is plain upstream (rolling sync 3)", replicas: 10, surge: 3, unavailable: 2, target: 10,
			newRS: rs(5, 5), old: []GrayReplicaSet{rs(8, 8)}, wantNew: 5, wantOld: []int32{3}},
		{name: "full rollout is plain upstream (rolling sync 4)", replicas: 10, surge: 3, unavailable: 2, target: 10,
			newRS: rs(5, 5), old: []GrayReplicaSet{rs(3, 3)}, wantNew: 10, wantOld: []int32{3}},
		{name: "old pods not yet gone (available above spec) are not unhealthy", replicas: 10, surge: 3, unavailable: 2, target: 2,
			newRS: rs(2, 2), old: []GrayReplicaSet{rs(9, 10)}, wantNew: 2, wantOld: []int32{8}},
		{name: "R = 1, 50%: T = R, old may go to 0", replicas: 1, surge: 1, unavailable: 0, target: 1,
			newRS: rs(1, 1), old: []GrayReplicaSet{rs(1, 1)}, wantNew: 1, wantOld: []int32{0}},
		{name: "R = 2, 50%: one each", replicas: 2, surge: 1, unavailable: 0, target: 1,
			newRS: rs(1, 1), old: []GrayReplicaSet{rs(2, 2)}, wantNew: 1, wantOld: []int32{1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := PlanGrayStep(GrayStepInput{
				Replicas: tt.replicas, Surge: tt.surge, Unavailable: tt.unavailable, Target: tt.target,
				New: tt.newRS, Old: tt.old,
			})
			if got.New != tt.wantNew || !reflect.DeepEqual(got.Old, tt.wantOld) {
				t.Errorf("PlanGrayStep() = new %d old %v, want new %d old %v", got.New, got.Old, tt.wantNew, tt.wantOld)
			}
		})
	}
}

func TestSpreadOld(t *testing.T) {
	tests := []struct {
		name  string
		specs []int32
		total int32
		want  []int32
	}{
		{name: "one old ReplicaSet takes it all", specs: []int32{8}, total: 16, want: []int32{16}},
		{name: "exact proportions", specs: []int32{6, 2}, total: 16, want: []int32{12, 4}},
		{name: "leftover to the largest", specs: []int32{12, 4}, total: 2, want: []int32{2, 0}},
		{name: "leftover to the first of equals", specs: []int32{3, 3}, total: 5, want: []int32{3, 2}},
		{name: "leftover to the largest even when listed second", specs: []int32{2, 6}, total: 3, want: []int32{0, 3}},
		{name: "all empty: the first takes it", specs: []int32{0, 0}, total: 4, want: []int32{4, 0}},
		{name: "to zero", specs: []int32{5, 4}, total: 0, want: []int32{0, 0}},
		{name: "negative total counts as zero", specs: []int32{5}, total: -3, want: []int32{0}},
		{name: "nothing to spread over", specs: nil, total: 4, want: []int32{}},
		{name: "no int32 overflow", specs: []int32{100000, 100000}, total: 200000, want: []int32{100000, 100000}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := SpreadOld(tt.specs, tt.total); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("SpreadOld(%v, %d) = %v, want %v", tt.specs, tt.total, got, tt.want)
			}
		})
	}
}

func TestGrayScaleSizes(t *testing.T) {
	tests := []struct {
		name    string
		in      GrayScaleInput
		wantNew int32
		wantOld []int32
	}{
		{name: "held, 10 → 20", in: GrayScaleInput{Replicas: 20, Target: 4, Held: true, HasNew: true, NewSpec: 2, Old: []int32{8}},
			wantNew: 4, wantOld: []int32{16}},
		{name: "held, 20 → 3", in: GrayScaleInput{Replicas: 3, Target: 1, Held: true, HasNew: true, NewSpec: 4, Old: []int32{16}},
			wantNew: 1, wantOld: []int32{2}},
		{name: "held, two old ReplicaSets", in: GrayScaleInput{Replicas: 20, Target: 4, Held: true, HasNew: true, NewSpec: 2, Old: []int32{6, 2}},
			wantNew: 4, wantOld: []int32{12, 4}},
		{name: "not held: proportional new, capped", in: GrayScaleInput{Replicas: 20, Target: 4, HasNew: true, NewSpec: 1, ProportionalNew: 2, Old: []int32{9}},
			wantNew: 2, wantOld: []int32{18}},
		{name: "not held: proportional new above T is capped", in: GrayScaleInput{Replicas: 20, Target: 4, HasNew: true, NewSpec: 3, ProportionalNew: 6, Old: []int32{10}},
			wantNew: 4, wantOld: []int32{16}},
		{name: "not held but new already at T'", in: GrayScaleInput{Replicas: 5, Target: 1, HasNew: true, NewSpec: 2, ProportionalNew: 1, Old: []int32{8}},
			wantNew: 1, wantOld: []int32{4}},
		{name: "no new ReplicaSet yet", in: GrayScaleInput{Replicas: 12, Target: 3, Old: []int32{7, 3}},
			wantNew: 0, wantOld: []int32{9, 3}},
		{name: "P = 0 held", in: GrayScaleInput{Replicas: 20, Target: 0, Held: true, HasNew: true, NewSpec: 0, Old: []int32{10}},
			wantNew: 0, wantOld: []int32{20}},
		{name: "complete rollout scaled: like upstream, all on the new one", in: GrayScaleInput{Replicas: 7, Target: 7, HasNew: true, NewSpec: 10, ProportionalNew: 7, Old: []int32{0}},
			wantNew: 7, wantOld: []int32{0}},
		{name: "to zero", in: GrayScaleInput{Replicas: 0, Target: 0, Held: true, HasNew: true, NewSpec: 2, Old: []int32{8}},
			wantNew: 0, wantOld: []int32{0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gotNew, gotOld := GrayScaleSizes(tt.in)
			if gotNew != tt.wantNew || !reflect.DeepEqual(gotOld, tt.wantOld) {
				t.Errorf("GrayScaleSizes() = %d %v, want %d %v", gotNew, gotOld, tt.wantNew, tt.wantOld)
			}
		})
	}
}

func TestPlanGrayRestore(t *testing.T) {
	tests := []struct {
		name    string
		in      GrayRestoreInput
		wantNew int32
		wantOld []int32
	}{
		{name: "lowered 50% to 20%: old grows within the surge, new shrinks within availability",
			in:      GrayRestoreInput{Replicas: 10, Surge: 3, Unavailable: 2, Target: 2, NewSpec: 5, Available: 10, Old: []int32{5}},
			wantNew: 3, wantOld: []int32{8}},
		{name: "then the last surplus canary goes",
			in:      GrayRestoreInput{Replicas: 10, Surge: 3, Unavailable: 2, Target: 2, NewSpec: 3, Available: 11, Old: []int32{8}},
			wantNew: 2, wantOld: []int32{8}},
		{name: "maxUnavailable 0: nothing shrinks before the surge pod is available",
			in:      GrayRestoreInput{Replicas: 10, Surge: 1, Unavailable: 0, Target: 2, NewSpec: 5, Available: 10, Old: []int32{5}},
			wantNew: 5, wantOld: []int32{6}},
		{name: "maxSurge 0: one canary pod goes first",
			in:      GrayRestoreInput{Replicas: 10, Surge: 0, Unavailable: 1, Target: 2, NewSpec: 5, Available: 10, Old: []int32{5}},
			wantNew: 4, wantOld: []int32{5}},
		{name: "canary scaled up by someone else: its unready pods go at once",
			in:      GrayRestoreInput{Replicas: 6, Surge: 0, Unavailable: 1, Target: 5, NewSpec: 6, NewUnavailable: 5, Available: 1, Old: []int32{0}},
			wantNew: 5, wantOld: []int32{0}},
		{name: "canary resized by someone else, status not observed yet: wait",
			in:      GrayRestoreInput{Replicas: 6, Surge: 0, Unavailable: 1, Target: 5, NewSpec: 6, Available: 0, Old: []int32{0}},
			wantNew: 6, wantOld: []int32{0}},
		{name: "old scaled away by someone else: it comes back first",
			in:      GrayRestoreInput{Replicas: 3, Surge: 1, Unavailable: 0, Target: 2, NewSpec: 3, Available: 3, Old: []int32{0}},
			wantNew: 3, wantOld: []int32{1}},
		{name: "old share short over two ReplicaSets, the stable one first",
			in:      GrayRestoreInput{Replicas: 10, Surge: 3, Unavailable: 2, Target: 2, NewSpec: 1, Available: 6, Old: []int32{3, 2}},
			wantNew: 1, wantOld: []int32{5, 3}},
		{name: "nothing broke",
			in:      GrayRestoreInput{Replicas: 10, Surge: 3, Unavailable: 2, Target: 2, NewSpec: 2, Available: 10, Old: []int32{8}},
			wantNew: 2, wantOld: []int32{8}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gotNew, gotOld := PlanGrayRestore(tt.in)
			if gotNew != tt.wantNew || !reflect.DeepEqual(gotOld, tt.wantOld) {
				t.Errorf("PlanGrayRestore() = %d %v, want %d %v", gotNew, gotOld, tt.wantNew, tt.wantOld)
			}
		})
	}
}

func TestGrayStepTarget(t *testing.T) {
	points := []int32{10, 30, 60}
	tests := []struct {
		name        string
		replicas    int32
		points      []int32
		step        int32
		wantPercent int32
		wantTarget  int32
	}{
		{name: "first point", replicas: 10, points: points, step: 0, wantPercent: 10, wantTarget: 1},
		{name: "last point", replicas: 10, points: points, step: 2, wantPercent: 60, wantTarget: 6},
		{name: "the end", replicas: 10, points: points, step: 3, wantPercent: 100, wantTarget: 10},
		{name: "past the end", replicas: 10, points: points, step: 7, wantPercent: 100, wantTarget: 10},
		{name: "negative step counts as 0", replicas: 10, points: points, step: -1, wantPercent: 10, wantTarget: 1},
		{name: "0%", replicas: 10, points: []int32{0, 50}, step: 0, wantPercent: 0, wantTarget: 0},
		{name: "R = 1 at 20%", replicas: 1, points: []int32{20}, step: 0, wantPercent: 20, wantTarget: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, target := GrayStepTarget(tt.replicas, tt.points, tt.step)
			if p != tt.wantPercent || target != tt.wantTarget {
				t.Errorf("GrayStepTarget(%d, %v, %d) = %d%%, %d, want %d%%, %d", tt.replicas, tt.points, tt.step, p, target, tt.wantPercent, tt.wantTarget)
			}
		})
	}
}

func TestGrayContinuedStep(t *testing.T) {
	tests := []struct {
		name    string
		points  []int32
		step    int32
		percent int32
		want    int32
	}{
		{name: "unchanged list", points: []int32{10, 30, 60}, step: 1, percent: 30, want: 1},
		{name: "point inserted before", points: []int32{10, 20, 30, 60}, step: 1, percent: 30, want: 2},
		{name: "point removed: the one below", points: []int32{20, 50}, step: 1, percent: 30, want: 0},
		{name: "all points below: the last", points: []int32{10, 20}, step: 2, percent: 30, want: 1},
		{name: "all points above: the first", points: []int32{50, 70}, step: 0, percent: 20, want: 0},
		{name: "lowered single point", points: []int32{20}, step: 0, percent: 50, want: 0},
		{name: "finished rollouts stay finished", points: []int32{10, 50}, step: 1, percent: 100, want: 2},
		{name: "step beyond a shortened list", points: []int32{10}, step: 2, percent: 60, want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := GrayContinuedStep(tt.points, tt.step, tt.percent); got != tt.want {
				t.Errorf("GrayContinuedStep(%v, %d, %d) = %d, want %d", tt.points, tt.step, tt.percent, got, tt.want)
			}
		})
	}
}

func TestGrayFirstStepNotPassed(t *testing.T) {
	tests := []struct {
		name        string
		replicas    int32
		points      []int32
		newReplicas int32
		want        int32
	}{
		{name: "nothing rolled yet", replicas: 10, points: []int32{20, 60}, newReplicas: 0, want: 0},
		{name: "exactly at the first target", replicas: 10, points: []int32{20, 60}, newReplicas: 2, want: 0},
		{name: "first point passed", replicas: 10, points: []int32{20, 60}, newReplicas: 5, want: 1},
		{name: "all passed", replicas: 10, points: []int32{20, 60}, newReplicas: 7, want: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := GrayFirstStepNotPassed(tt.replicas, tt.points, tt.newReplicas); got != tt.want {
				t.Errorf("GrayFirstStepNotPassed(%d, %v, %d) = %d, want %d", tt.replicas, tt.points, tt.newReplicas, got, tt.want)
			}
		})
	}
}
