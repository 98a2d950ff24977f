package rollout

import (
	"reflect"
	"testing"
)

func TestReplicaSetFraction(t *testing.T) {
	tests := []struct {
		name           string
		rsSpec         int32
		desired        int32
		newMax         int32
		annotatedMax   int32
		hasMax         bool
		statusReplicas int32
		want           int32
	}{
		// upstream TestGetReplicaSetFraction
		{name: "R=0 always scales to 0", rsSpec: 10, desired: 0, newMax: 0, want: -10},
		{name: "missing max, status 0: no basis", rsSpec: 5, desired: 10, newMax: 10, want: 0},
		{name: "max 0, status 0: no basis", rsSpec: 5, desired: 10, newMax: 10, annotatedMax: 0, hasMax: true, want: 0},
		{name: "missing max falls back to status 100: 50·120/100", rsSpec: 50, desired: 120, newMax: 120, statusReplicas: 100, want: 10},
		{name: "max 0 falls back to status 100", rsSpec: 50, desired: 120, newMax: 120, annotatedMax: 0, hasMax: true, statusReplicas: 100, want: 10},
		{name: "max 100 → 120: +1/5", rsSpec: 50, desired: 120, newMax: 120, annotatedMax: 100, hasMax: true, want: 10},
		{name: "surge 10, max 110 → 130: round(59.09)−50", rsSpec: 50, desired: 120, newMax: 130, annotatedMax: 110, hasMax: true, want: 9},
		{name: "max 12 → 10: round(5)−6", rsSpec: 6, desired: 10, newMax: 10, annotatedMax: 12, hasMax: true, want: -1},
		{name: "surge 10, max 130 → 110: round(42.3)−50", rsSpec: 50, desired: 100, newMax: 110, annotatedMax: 130, hasMax: true, want: -8},
		// rounding is half away from zero, not to even
		{name: "2.5 rounds to 3", rsSpec: 1, desired: 5, newMax: 5, annotatedMax: 2, hasMax: true, want: 2},
		{name: "5·1/2 = 2.5 rounds to 3", rsSpec: 5, desired: 1, newMax: 1, annotatedMax: 2, hasMax: true, want: -2},
		// docs/worked-numbers.md: proportional scaling
		{name: "scaling example A old 10·25/13", rsSpec: 10, desired: 20, newMax: 25, annotatedMax: 13, hasMax: true, want: 9},
		{name: "scaling example A new 3·25/13 (before bounding)", rsSpec: 3, desired: 20, newMax: 25, annotatedMax: 13, hasMax: true, want: 3},
		{name: "scaling example B old 8·25/13", rsSpec: 8, desired: 20, newMax: 25, annotatedMax: 13, hasMax: true, want: 7},
		{name: "scaling example D first 100·140/120", rsSpec: 100, desired: 120, newMax: 140, annotatedMax: 120, hasMax: true, want: 17},
		// int32 overflow kept on purpose: 50000·50000 wraps to −1794967296;
		// −1794967296/50000 = −35899.35 → −35899; −35899 − 50000.
		{name: "int32 product overflow like upstream", rsSpec: 50000, desired: 50000, newMax: 50000, annotatedMax: 50000, hasMax: true, want: -85899},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ReplicaSetFraction(tt.rsSpec, tt.desired, tt.newMax, tt.annotatedMax, tt.hasMax, tt.statusReplicas)
			if got != tt.want {
				t.Errorf("ReplicaSetFraction() = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestProportion(t *testing.T) {
	tests := []struct {
		name     string
		rsSpec   int32
		fraction int32
		toAdd    int32
		added    int32
		want     int32
	}{
		{name: "empty RS never grows", rsSpec: 0, fraction: 5, toAdd: 5, added: 0, want: 0},
		{name: "nothing to add", rsSpec: 4, fraction: 5, toAdd: 0, added: 0, want: 0},
		{name: "all added already", rsSpec: 4, fraction: 1, toAdd: 3, added: 3, want: 0},
		{name: "up: fraction below allowed", rsSpec: 8, fraction: 7, toAdd: 12, added: 0, want: 7},
		{name: "up: bounded by what is left (scaling example A new)", rsSpec: 3, fraction: 3, toAdd: 12, added: 9, want: 3},
		{name: "up: bounded by what is left (scaling example B new)", rsSpec: 5, fraction: 5, toAdd: 12, added: 7, want: 5},
		{name: "up: bounded below fraction", rsSpec: 5, fraction: 8, toAdd: 20, added: 12, want: 8},
		{name: "up: fraction larger than rest", rsSpec: 5, fraction: 8, toAdd: 20, added: 15, want: 5},
		{name: "up: negative fraction passes through", rsSpec: 5, fraction: -2, toAdd: 3, added: 0, want: -2},
		{name: "down: fraction above allowed", rsSpec: 19, fraction: -14, toAdd: -18, added: 0, want: -14},
		{name: "down: bounded by what is left", rsSpec: 6, fraction: -5, toAdd: -18, added: -14, want: -4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Proportion(tt.rsSpec, tt.fraction, tt.toAdd, tt.added); got != tt.want {
				t.Errorf("Proportion(%d, %d, %d, %d) = %d, want %d", tt.rsSpec, tt.fraction, tt.toAdd, tt.added, got, tt.want)
			}
		})
	}
}

// annotated builds a ReplicaSet entry annotated by an earlier scale to
// (prevDesired, prevMax), with the given available count.
func annotated(spec, available, prevDesired, prevMax int32) ScaleReplicaSet {
	return ScaleReplicaSet{Spec: spec, Available: available, Desired: prevDesired, HasDesired: true, Max: prevMax, HasMax: true}
}

// TestProportionalSizesWorkedExamples covers scaling examples A–D of docs/worked-numbers.md. ReplicaSets are
// listed oldest first.
func TestProportionalSizesWorkedExamples(t *testing.T) {
	tests := []struct {
		name     string
		desired  int32
		maxSurge int32
		rss      []ScaleReplicaSet
		newIndex int
		want     []int32
	}{
		{
			name: "A pause at old 8 / new 3 fills to R+surge on the largest (old)", desired: 10, maxSurge: 3,
			rss:      []ScaleReplicaSet{annotated(8, 8, 10, 13), annotated(3, 0, 10, 13)},
			newIndex: 1, want: []int32{10, 3},
		},
		{
			name: "A paused, scale to 20", desired: 20, maxSurge: 5,
			rss:      []ScaleReplicaSet{annotated(10, 8, 10, 13), annotated(3, 0, 10, 13)},
			newIndex: 1, want: []int32{19, 6},
		},
		{
			name: "A paused, scale to 5", desired: 5, maxSurge: 2,
			rss:      []ScaleReplicaSet{annotated(19, 8, 20, 25), annotated(6, 0, 20, 25)},
			newIndex: 1, want: []int32{5, 2},
		},
		{
			name: "A pause and scale to 20 in one sync", desired: 20, maxSurge: 5,
			rss:      []ScaleReplicaSet{annotated(8, 8, 10, 13), annotated(3, 0, 10, 13)},
			newIndex: 1, want: []int32{19, 6},
		},
		{
			name: "B unpaused scale to 20 at old 8 / new 5", desired: 20, maxSurge: 5,
			rss:      []ScaleReplicaSet{annotated(8, 8, 10, 13), annotated(5, 0, 10, 13)},
			newIndex: 1, want: []int32{15, 10},
		},
		{
			name: "B then scale to 5", desired: 5, maxSurge: 2,
			rss:      []ScaleReplicaSet{annotated(15, 8, 20, 25), annotated(10, 0, 20, 25)},
			newIndex: 1, want: []int32{4, 3},
		},
		{
			name: "C e2e proportional scaling 10 → 30, surge 3", desired: 30, maxSurge: 3,
			rss:      []ScaleReplicaSet{annotated(8, 8, 10, 13), annotated(5, 0, 10, 13)},
			newIndex: 1, want: []int32{20, 13},
		},
		{
			name: "D integration 100 → 120, surge 20", desired: 120, maxSurge: 20,
			rss:      []ScaleReplicaSet{annotated(100, 100, 100, 120), annotated(20, 0, 100, 120)},
			newIndex: 1, want: []int32{117, 23},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := ScaleInput{Desired: tt.desired, MaxSurge: tt.maxSurge, RollingUpdate: true, ReplicaSets: tt.rss, NewIndex: tt.newIndex}
			if got := ProportionalSizes(in); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ProportionalSizes() = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestPlanScaleUpstreamTestScale covers the 17 rows of upstream TestScale
// (scaling example E of docs/worked-numbers.md). maxSurge is 0 unless noted; every ReplicaSet carries the
// annotations written at the previous size. ReplicaSets are listed oldest
// first (older, old, new), so "new 2 / old 3" reads [3, 2] here.
func TestPlanScaleUpstreamTestScale(t *testing.T) {
	tests := []struct {
		name      string
		desired   int32
		maxSurge  int32
		rss       []ScaleReplicaSet
		newIndex  int
		want      []int32
		wantSteps []ScaleStep
	}{
		{
			name: "normal scaling event 10 → 12", desired: 12,
			rss: []ScaleReplicaSet{annotated(10, 0, 10, 10)}, newIndex: 0,
			want: []int32{12}, wantSteps: []ScaleStep{{Index: 0, Size: 12}},
		},
		{
			name: "normal scaling event 10 → 5", desired: 5,
			rss: []ScaleReplicaSet{annotated(10, 0, 10, 10)}, newIndex: 0,
			want: []int32{5}, wantSteps: []ScaleStep{{Index: 0, Size: 5}},
		},
		{
			name: "proportional 5 → 10 (new 2, old 3)", desired: 10,
			rss: []ScaleReplicaSet{annotated(3, 0, 5, 5), annotated(2, 0, 5, 5)}, newIndex: 1,
			want: []int32{6, 4},
		},
		{
			name: "proportional 5 → 3 (new 2, old 3)", desired: 3,
			rss: []ScaleReplicaSet{annotated(3, 0, 5, 5), annotated(2, 0, 5, 5)}, newIndex: 1,
			want: []int32{2, 1},
		},
		{
			name: "proportional 9 → 4 (new 8, old 1)", desired: 4,
			rss: []ScaleReplicaSet{annotated(1, 0, 9, 9), annotated(8, 0, 9, 9)}, newIndex: 1,
			want: []int32{0, 4},
		},
		{
			name: "proportional 7 → 10 (new 2, old 3, older 2)", desired: 10,
			rss: []ScaleReplicaSet{annotated(2, 0, 7, 7), annotated(3, 0, 7, 7), annotated(2, 0, 7, 7)}, newIndex: 2,
			want: []int32{3, 4, 3},
		},
		{
			name: "proportional 13 → 8 (new 2, old 8, older 3)", desired: 8,
			rss: []ScaleReplicaSet{annotated(3, 0, 13, 13), annotated(8, 0, 13, 13), annotated(2, 0, 13, 13)}, newIndex: 2,
			want: []int32{2, 5, 1},
		},
		{
			name: "leftover 3 → 4 goes to the newest", desired: 4,
			rss: []ScaleReplicaSet{annotated(1, 0, 3, 3), annotated(1, 0, 3, 3), annotated(1, 0, 3, 3)}, newIndex: 2,
			want: []int32{1, 1, 2},
		},
		{
			name: "leftover 3 → 2 comes from the oldest", desired: 2,
			rss: []ScaleReplicaSet{annotated(1, 0, 3, 3), annotated(1, 0, 3, 3), annotated(1, 0, 3, 3)}, newIndex: 2,
			want: []int32{0, 1, 1},
		},
		{
			name: "no new RS 4 → 5: newest old gets +1", desired: 5,
			rss: []ScaleReplicaSet{annotated(2, 0, 4, 4), annotated(2, 0, 4, 4)}, newIndex: -1,
			want: []int32{2, 3},
		},
		{
			name: "6 → 0 scales everything to 0", desired: 0,
			rss: []ScaleReplicaSet{annotated(1, 0, 6, 6), annotated(2, 0, 6, 6), annotated(3, 0, 6, 6)}, newIndex: 2,
			want: []int32{0, 0, 0},
		},
		{
			name: "all zero, R=6: only the new RS is scaled", desired: 6,
			rss: []ScaleReplicaSet{annotated(0, 0, 6, 6), annotated(0, 0, 6, 6), annotated(0, 0, 6, 6)}, newIndex: 2,
			want: []int32{0, 0, 6}, wantSteps: []ScaleStep{{Index: 2, Size: 6}},
		},
		{
			name: "failed rs update: only the stale middle RS grows", desired: 5,
			rss: []ScaleReplicaSet{annotated(1, 0, 5, 5), annotated(1, 0, 3, 3), annotated(2, 0, 5, 5)}, newIndex: 2,
			want: []int32{1, 2, 2},
		},
		{
			name: "surge 2, 10 → 20 with 6/6", desired: 20, maxSurge: 2,
			rss: []ScaleReplicaSet{annotated(6, 0, 10, 12), annotated(6, 0, 10, 12)}, newIndex: 1,
			want: []int32{11, 11},
		},
		{
			name: "surge 3 → 6 and 10 → 50 with new 5 / old 8", desired: 50, maxSurge: 6,
			rss: []ScaleReplicaSet{annotated(8, 0, 10, 13), annotated(5, 0, 10, 13)}, newIndex: 1,
			want: []int32{34, 22},
		},
		{
			name: "size and template change 10 → 14, no new RS, 7/3", desired: 14,
			rss: []ScaleReplicaSet{annotated(3, 0, 10, 10), annotated(7, 0, 10, 10)}, newIndex: -1,
			want: []int32{4, 10},
		},
		{
			name: "saturated but broken new RS does not affect old pods", desired: 2, maxSurge: 1,
			rss: []ScaleReplicaSet{annotated(1, 0, 2, 3), annotated(2, 0, 2, 3)}, newIndex: 1,
			want: []int32{1, 2}, wantSteps: []ScaleStep{{Index: 0, Size: 1, Force: true}, {Index: 1, Size: 2, Force: true}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := ScaleInput{Desired: tt.desired, MaxSurge: tt.maxSurge, RollingUpdate: true, ReplicaSets: tt.rss, NewIndex: tt.newIndex}
			if got := ProportionalSizes(in); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ProportionalSizes() = %v, want %v", got, tt.want)
			}
			if tt.wantSteps != nil {
				if got := PlanScale(in); !reflect.DeepEqual(got, tt.wantSteps) {
					t.Errorf("PlanScale() = %+v, want %+v", got, tt.wantSteps)
				}
			}
		})
	}
}

// TestPlanScaleBranches pins the order and force flag of the writes, which
// the controller relies on.
func TestPlanScaleBranches(t *testing.T) {
	tests := []struct {
		name           string
		in             ScaleInput
		want           []ScaleStep
		wantNilOrEmpty bool
	}{
		{
			name:           "no ReplicaSets",
			in:             ScaleInput{Desired: 3, RollingUpdate: true, NewIndex: -1},
			wantNilOrEmpty: true,
		},
		{
			name: "single active RS already at R: no write even with stale annotations (docs/worked-numbers.md: stale desired-replicas)",
			in: ScaleInput{Desired: 5, RollingUpdate: true, NewIndex: 0,
				ReplicaSets: []ScaleReplicaSet{annotated(5, 5, 4, 4)}},
			wantNilOrEmpty: true,
		},
		{
			name: "no active RS and no new RS: the newest old one gets R",
			in: ScaleInput{Desired: 4, RollingUpdate: true, NewIndex: -1,
				ReplicaSets: []ScaleReplicaSet{annotated(0, 0, 0, 0), annotated(0, 0, 0, 0)}},
			want: []ScaleStep{{Index: 1, Size: 4}},
		},
		{
			name: "new RS not newest (rollback): single active old RS is the one scaled",
			in: ScaleInput{Desired: 4, RollingUpdate: true, NewIndex: 0,
				ReplicaSets: []ScaleReplicaSet{annotated(0, 0, 3, 3), annotated(3, 3, 3, 3)}},
			want: []ScaleStep{{Index: 1, Size: 4}},
		},
		{
			name: "saturated new RS: active old RSs go to 0, newest first, not forced",
			in: ScaleInput{Desired: 4, MaxSurge: 1, RollingUpdate: true, NewIndex: 3,
				ReplicaSets: []ScaleReplicaSet{annotated(1, 1, 4, 5), annotated(0, 0, 4, 5), annotated(2, 2, 4, 5), annotated(4, 4, 4, 5)}},
			want: []ScaleStep{{Index: 2, Size: 0}, {Index: 0, Size: 0}},
		},
		{
			name: "saturation needs the desired annotation",
			in: ScaleInput{Desired: 4, MaxSurge: 1, RollingUpdate: true, NewIndex: 1,
				ReplicaSets: []ScaleReplicaSet{annotated(1, 1, 4, 5), {Spec: 4, Available: 4, Max: 5, HasMax: true}}},
			// not saturated → proportional pass with toAdd = 5 − 5 = 0: old first, then new.
			want: []ScaleStep{{Index: 0, Size: 1, Force: true}, {Index: 1, Size: 4, Force: true}},
		},
		{
			name: "Recreate with two active unsaturated RSs: nothing",
			in: ScaleInput{Desired: 6, RollingUpdate: false, NewIndex: 1,
				ReplicaSets: []ScaleReplicaSet{annotated(3, 3, 5, 5), annotated(2, 0, 5, 5)}},
			wantNilOrEmpty: true,
		},
		{
			name: "toAdd 0 keeps order old newest-first then new, all forced",
			in: ScaleInput{Desired: 5, RollingUpdate: true, NewIndex: 0,
				ReplicaSets: []ScaleReplicaSet{annotated(1, 0, 5, 5), annotated(2, 0, 5, 5), annotated(2, 0, 5, 5)}},
			want: []ScaleStep{{Index: 2, Size: 2, Force: true}, {Index: 1, Size: 2, Force: true}, {Index: 0, Size: 1, Force: true}},
		},
		{
			name: "stale small max annotation: the largest RS absorbs the leftover and is clamped at 0",
			in: ScaleInput{Desired: 3, RollingUpdate: true, NewIndex: 1,
				ReplicaSets: []ScaleReplicaSet{annotated(5, 5, 3, 10), annotated(4, 0, 1, 1)}},
			// toAdd = 3 − 9 = −6; a: round(5·3/10)=2 → −3; b: round(4·3/1)=12 → +8
			// (max(8, −3)); leftover −6 − 5 = −11 → a = 5 − 3 − 11 = −9 → 0.
			want: []ScaleStep{{Index: 0, Size: 0, Force: true}, {Index: 1, Size: 12, Force: true}},
		},
		{
			name: "missing max annotation falls back to status.replicas",
			in: ScaleInput{Desired: 12, RollingUpdate: true, StatusReplicas: 6, NewIndex: 1,
				ReplicaSets: []ScaleReplicaSet{{Spec: 3}, {Spec: 3}}},
			// toAdd 6; both round(3·12/6)−3 = 3; order newer first.
			want: []ScaleStep{{Index: 1, Size: 6, Force: true}, {Index: 0, Size: 6, Force: true}},
		},
		{
			name: "missing max annotation and status 0: leftover all to the largest",
			in: ScaleInput{Desired: 12, RollingUpdate: true, NewIndex: 1,
				ReplicaSets: []ScaleReplicaSet{{Spec: 4}, {Spec: 3}}},
			want: []ScaleStep{{Index: 0, Size: 9, Force: true}, {Index: 1, Size: 3, Force: true}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := PlanScale(tt.in)
			if tt.wantNilOrEmpty {
				if len(got) != 0 {
					t.Errorf("PlanScale() = %+v, want no steps", got)
				}
				return
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("PlanScale() = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// ProportionalSizes (a test view of PlanScale) applies PlanScale and returns the resulting spec.replicas
// of every ReplicaSet, aligned with in.ReplicaSets (ReplicaSets without a
// step keep their spec). It is the value-level view of a scaling event.
//
// Worked row (scaling example C of docs/worked-numbers.md): R 10→30 with maxSurge 3, first RS 8 / second 5,
// both annotated max 13; allowed 33, toAdd 20; first round(8·33/13)=20,
// second round(5·33/13)=13 → [20, 13].
func ProportionalSizes(in ScaleInput) []int32 {
	out := make([]int32, len(in.ReplicaSets))
	for i, rs := range in.ReplicaSets {
		out[i] = rs.Spec
	}
	for _, s := range PlanScale(in) {
		out[s.Index] = s.Size
	}
	return out
}
