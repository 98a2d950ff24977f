package rollout

import (
	"fmt"
	"reflect"
	"testing"
)

func TestBuiltInRescales(t *testing.T) {
	tests := []struct {
		name     string
		replicas int32
		sizes    GrayStep
		want     bool
	}{
		// The rows of the doc comment.
		{name: "one active at R", replicas: 10, sizes: GrayStep{New: 0, Old: []int32{10}}, want: false},
		{name: "one active below R", replicas: 10, sizes: GrayStep{New: 0, Old: []int32{9}}, want: true},
		{name: "two active", replicas: 10, sizes: GrayStep{New: 1, Old: []int32{9}}, want: false},
		{name: "lone new below R", replicas: 10, sizes: GrayStep{New: 9, Old: []int32{0}}, want: true},
		{name: "none active", replicas: 10, sizes: GrayStep{New: 0, Old: []int32{0, 0}}, want: true},
		// More.
		{name: "lone new at R", replicas: 10, sizes: GrayStep{New: 10, Old: []int32{0, 0}}, want: false},
		{name: "lone old above R", replicas: 10, sizes: GrayStep{New: 0, Old: []int32{0, 11}}, want: true},
		{name: "three active, none at R", replicas: 10, sizes: GrayStep{New: 1, Old: []int32{2, 3}}, want: false},
		{name: "R = 0, none active", replicas: 0, sizes: GrayStep{New: 0, Old: []int32{0}}, want: false},
		{name: "R = 0, one active", replicas: 0, sizes: GrayStep{New: 0, Old: []int32{2}}, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := BuiltInRescales(tt.replicas, tt.sizes); got != tt.want {
				t.Errorf("BuiltInRescales(%d, %+v) = %t, want %t", tt.replicas, tt.sizes, got, tt.want)
			}
		})
	}
}

func TestGrayAlongsideWrites(t *testing.T) {
	newRS := func(size int32) GrayWrite { return GrayWrite{New: true, Size: size} }
	old := func(i int, size int32) GrayWrite { return GrayWrite{Old: i, Size: size} }
	tests := []struct {
		name     string
		replicas int32
		hasNew   bool
		maxNew   int32
		current  GrayStep
		planned  GrayStep
		want     []GrayWrite
	}{
		// The rows of the doc comment.
		{name: "surge 0: the new ReplicaSet gets its first pod before the old one shrinks",
			replicas: 10, hasNew: true, maxNew: 3,
			current: GrayStep{New: 0, Old: []int32{10}}, planned: GrayStep{New: 0, Old: []int32{9}},
			want: []GrayWrite{newRS(1), old(0, 9)}},
		{name: "full, last old pod: the new ReplicaSet reaches R first",
			replicas: 10, hasNew: true, maxNew: 10,
			current: GrayStep{New: 9, Old: []int32{1}}, planned: GrayStep{New: 9, Old: []int32{0}},
			want: []GrayWrite{newRS(10), old(0, 0)}},
		{name: "full, last three old pods while new is 8: one kept",
			replicas: 10, hasNew: true, maxNew: 10,
			current: GrayStep{New: 8, Old: []int32{3}}, planned: GrayStep{New: 8, Old: []int32{0}},
			want: []GrayWrite{old(0, 1), newRS(8)}},
		{name: "canary emptied while new is 0: the new ReplicaSet grows first",
			replicas: 10, hasNew: true, maxNew: 2,
			current: GrayStep{New: 0, Old: []int32{1, 9}}, planned: GrayStep{New: 0, Old: []int32{0, 9}},
			want: []GrayWrite{newRS(1), old(0, 0), old(1, 9)}},
		{name: "hold point lowered to 0%: the old ReplicaSet grows before the new one empties",
			replicas: 10, hasNew: true, maxNew: 0,
			current: GrayStep{New: 5, Old: []int32{5}}, planned: GrayStep{New: 0, Old: []int32{10}},
			want: []GrayWrite{old(0, 10), newRS(0)}},
		{name: "R = 1: none active is as bad as a lone one",
			replicas: 1, hasNew: true, maxNew: 1,
			current: GrayStep{New: 0, Old: []int32{1}}, planned: GrayStep{New: 0, Old: []int32{0}},
			want: []GrayWrite{newRS(1), old(0, 0)}},
		// More.
		{name: "surge 0, unavailable 3: new 1 while old loses 3",
			replicas: 10, hasNew: true, maxNew: 3,
			current: GrayStep{New: 0, Old: []int32{10}}, planned: GrayStep{New: 0, Old: []int32{7}},
			want: []GrayWrite{newRS(1), old(0, 7)}},
		{name: "new already active: the planned step is safe as it is",
			replicas: 10, hasNew: true, maxNew: 3,
			current: GrayStep{New: 1, Old: []int32{9}}, planned: GrayStep{New: 1, Old: []int32{8}},
			want: []GrayWrite{old(0, 8), newRS(1)}},
		{name: "a growing step: the lone old ReplicaSet's unchanged size first (a rolling step does not write it)",
			replicas: 10, hasNew: true, maxNew: 3,
			current: GrayStep{New: 0, Old: []int32{9}}, planned: GrayStep{New: 1, Old: []int32{9}},
			want: []GrayWrite{old(0, 9), newRS(1)}},
		{name: "R 1 → 2 while held at 50%: the lone canary keeps its size and is written first",
			replicas: 2, hasNew: true, maxNew: 1,
			current: GrayStep{New: 1, Old: []int32{0}}, planned: GrayStep{New: 1, Old: []int32{1}},
			want: []GrayWrite{newRS(1), old(0, 1)}},
		{name: "two old ReplicaSets stay active: no extra pod",
			replicas: 10, hasNew: true, maxNew: 3,
			current: GrayStep{New: 0, Old: []int32{2, 8}}, planned: GrayStep{New: 0, Old: []int32{1, 8}},
			want: []GrayWrite{old(0, 1), newRS(0), old(1, 8)}},
		{name: "hold point 0%: no room for an extra pod",
			replicas: 10, hasNew: true, maxNew: 0,
			current: GrayStep{New: 0, Old: []int32{1, 9}}, planned: GrayStep{New: 0, Old: []int32{0, 9}},
			want: []GrayWrite{old(0, 0), newRS(0), old(1, 9)}},
		{name: "full, two old ReplicaSets emptied while new is 7: one pod kept on the stable one",
			replicas: 10, hasNew: true, maxNew: 10,
			current: GrayStep{New: 7, Old: []int32{1, 2}}, planned: GrayStep{New: 7, Old: []int32{0, 0}},
			want: []GrayWrite{old(1, 1), old(0, 0), newRS(7)}}, // the one that empties last
		{name: "full, last old pod while new is 8: the new one grows, the old pod stays",
			replicas: 10, hasNew: true, maxNew: 10,
			current: GrayStep{New: 8, Old: []int32{1}}, planned: GrayStep{New: 8, Old: []int32{0}},
			want: []GrayWrite{newRS(9), old(0, 1)}},
		{name: "full, new already at R: old emptied as planned",
			replicas: 10, hasNew: true, maxNew: 10,
			current: GrayStep{New: 10, Old: []int32{3}}, planned: GrayStep{New: 10, Old: []int32{0}},
			want: []GrayWrite{old(0, 0), newRS(10)}},
		{name: "scaled 20 → 3 while held: both shrink, new first",
			replicas: 3, hasNew: true, maxNew: 1,
			current: GrayStep{New: 4, Old: []int32{16}}, planned: GrayStep{New: 1, Old: []int32{2}},
			want: []GrayWrite{newRS(1), old(0, 2)}},
		{name: "scaled 10 → 20 while held: both grow, new first",
			replicas: 20, hasNew: true, maxNew: 4,
			current: GrayStep{New: 2, Old: []int32{8}}, planned: GrayStep{New: 4, Old: []int32{16}},
			want: []GrayWrite{newRS(4), old(0, 16)}},
		{name: "R 1 → 6 while held at 83%: the lone canary first, so that a resize of it by the built-in controller conflicts",
			replicas: 6, hasNew: true, maxNew: 5,
			current: GrayStep{New: 1, Old: []int32{0}}, planned: GrayStep{New: 5, Old: []int32{1}},
			want: []GrayWrite{newRS(5), old(0, 1)}},
		{name: "R 1 → 6 with the lone old ReplicaSet: it is written first too",
			replicas: 6, hasNew: true, maxNew: 1,
			current: GrayStep{New: 0, Old: []int32{1, 0}}, planned: GrayStep{New: 1, Old: []int32{5, 0}},
			want: []GrayWrite{old(0, 5), newRS(1), old(1, 0)}},
		{name: "a lone canary that empties keeps the order of rule 3",
			replicas: 4, hasNew: true, maxNew: 0,
			current: GrayStep{New: 1, Old: []int32{0}}, planned: GrayStep{New: 0, Old: []int32{4}},
			want: []GrayWrite{old(0, 4), newRS(0)}},
		{name: "a lone ReplicaSet already at R is left in the order of rule 3",
			replicas: 6, hasNew: true, maxNew: 5,
			current: GrayStep{New: 6, Old: []int32{0}}, planned: GrayStep{New: 5, Old: []int32{1}},
			want: []GrayWrite{old(0, 1), newRS(5)}},
		{name: "scaled 4 → 1 while held at 50%: the ReplicaSet that empties goes last",
			replicas: 1, hasNew: true, maxNew: 1,
			current: GrayStep{New: 2, Old: []int32{2}}, planned: GrayStep{New: 1, Old: []int32{0}},
			want: []GrayWrite{newRS(1), old(0, 0)}},
		{name: "no new ReplicaSet: nothing to grow, no write for it",
			replicas: 12, hasNew: false, maxNew: 3,
			current: GrayStep{New: 0, Old: []int32{7, 3}}, planned: GrayStep{New: 0, Old: []int32{9, 3}},
			want: []GrayWrite{old(0, 9), old(1, 3)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plannedOld := append([]int32(nil), tt.planned.Old...)
			got := GrayAlongsideWrites(GrayWritesInput{Replicas: tt.replicas, HasNew: tt.hasNew, MaxNew: tt.maxNew,
				Current: tt.current, Planned: tt.planned})
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("GrayAlongsideWrites() = %+v, want %+v", got, tt.want)
			}
			if !reflect.DeepEqual(tt.planned.Old, plannedOld) {
				t.Errorf("GrayAlongsideWrites changed its input: planned old %v, was %v", tt.planned.Old, plannedOld)
			}
		})
	}
}

// TestGrayAlongsideWritesRollouts drives gray rollouts (to the hold point, then to the end)
// through PlanGrayStep and GrayAlongsideWrites, pods becoming available between steps, for
// every small R, fenceposts, hold point and old generation (one stable ReplicaSet, or an
// abandoned canary before it), and checks after every single write that the built-in
// controller has nothing to resize (at least two active ReplicaSets, or one at R), that the
// new ReplicaSet stays within its target, that the pods never exceed R + surge by more than
// the one documented extra pod, and that each phase ends where it must.
func TestGrayAlongsideWritesRollouts(t *testing.T) {
	safe := func(replicas int32, sizes []int32) bool {
		var active []int32
		for _, s := range sizes {
			if s > 0 {
				active = append(active, s)
			}
		}
		return len(active) >= 2 || (len(active) == 1 && active[0] == replicas) || (len(active) == 0 && replicas == 0)
	}
	for replicas := int32(1); replicas <= 12; replicas++ {
		for rawSurge := int32(0); rawSurge <= 3; rawSurge++ {
			for rawUnavailable := int32(0); rawUnavailable <= 3; rawUnavailable++ {
				for _, percent := range []int32{10, 30, 50, 90} {
					for _, canary := range []int32{0, 1, 2} {
						if canary >= replicas {
							continue
						}
						surge, unavailable := resolve(replicas, rawSurge, rawUnavailable)
						var old []GrayReplicaSet
						if canary > 0 {
							old = append(old, GrayReplicaSet{Spec: canary, Available: canary})
						}
						old = append(old, GrayReplicaSet{Spec: replicas - canary, Available: replicas - canary})
						newRS := GrayReplicaSet{}
						for _, target := range []int32{GrayTarget(replicas, percent), replicas} {
							name := func() string {
								return fmt.Sprintf("R=%d surge=%d unavailable=%d %d%% canary=%d target=%d", replicas, surge, unavailable, percent, canary, target)
							}
							for syncs := 0; ; syncs++ {
								if syncs > 4*int(replicas)+10 {
									t.Fatalf("%s: no steady state, new %d old %v", name(), newRS.Spec, old)
								}
								plan := PlanGrayStep(GrayStepInput{Replicas: replicas, Surge: surge, Unavailable: unavailable, Target: target, New: newRS, Old: old})
								current := GrayStep{New: newRS.Spec, Old: make([]int32, len(old))}
								for i, rs := range old {
									current.Old[i] = rs.Spec
								}
								writes := GrayAlongsideWrites(GrayWritesInput{Replicas: replicas, HasNew: true, MaxNew: target, Current: current, Planned: plan})
								changed := false
								for _, w := range writes {
									sizes := []int32{newRS.Spec}
									if w.New {
										changed = changed || newRS.Spec != w.Size
										newRS.Spec = w.Size
										sizes[0] = w.Size
									} else {
										changed = changed || old[w.Old].Spec != w.Size
										old[w.Old].Spec = w.Size
									}
									total := newRS.Spec
									for _, rs := range old {
										sizes = append(sizes, rs.Spec)
										total += rs.Spec
									}
									if !safe(replicas, sizes) {
										t.Fatalf("%s: a write left new %d old %v for the built-in controller to resize", name(), newRS.Spec, old)
									}
									if newRS.Spec > target {
										t.Fatalf("%s: new %d above the target", name(), newRS.Spec)
									}
									if total > replicas+surge+1 {
										t.Fatalf("%s: %d pods, more than R + surge + 1", name(), total)
									}
								}
								if !changed {
									break
								}
								newRS.Available = newRS.Spec
								for i := range old {
									old[i].Available = old[i].Spec
								}
							}
							var oldTotal int32
							for _, rs := range old {
								oldTotal += rs.Spec
							}
							if newRS.Spec != target || oldTotal != replicas-target {
								t.Fatalf("%s: settled at new %d old %v, want new %d old total %d", name(), newRS.Spec, old, target, replicas-target)
							}
						}
					}
				}
			}
		}
	}
}
