package rollout

import "slices"

// GrayWrite is one ReplicaSet write of a gray step.
type GrayWrite struct {
	// New is true for the write to the new ReplicaSet.
	New bool
	// Old is the index of the old ReplicaSet written; unused when New.
	Old int
	// Size is the spec.replicas it gets.
	Size int32
}

// GrayWritesInput is one planned gray step of a taken-over Deployment (alongside mode).
type GrayWritesInput struct {
	// Replicas is the Deployment's spec.replicas (R).
	Replicas int32
	// HasNew is false when the new template has no ReplicaSet yet.
	HasNew bool
	// MaxNew is the most replicas the new ReplicaSet may have (GrayCaps' maxNew).
	MaxNew int32
	// Current are the sizes before the step, Planned the sizes the step plans
	// (PlanGrayStep, GrayScaleSizes or PlanGrayRestore), Old aligned with the
	// caller's old ReplicaSets (for a rolling step, scale-down order: the
	// abandoned canaries first, the stable ReplicaSet last).
	Current, Planned GrayStep
}

// BuiltInRescales reports whether the built-in deployment controller would
// resize one of these ReplicaSets of a paused Deployment of R replicas on the
// Recreate strategy (upstream sync.go: scale, FindActiveOrLatest): it does when at most one of
// them is active (spec > 0) and that one (or, with none active, an empty one)
// is not at R. Worked rows (R=10):
//
//	new 0, old [10]    → false (one active, at R)
//	new 0, old [9]     → true  (one active, not at R)
//	new 1, old [9]     → false (two active: Recreate scales nothing)
//	new 9, old [0]     → true
//	new 0, old [0 0]   → true  (none active: the new one is scaled to R)
func BuiltInRescales(replicas int32, sizes GrayStep) bool {
	active, lone := 0, int32(0)
	for _, s := range append([]int32{sizes.New}, sizes.Old...) {
		if s > 0 {
			active++
			lone = s
		}
	}
	switch active {
	case 0:
		return replicas > 0
	case 1:
		return lone != replicas
	}
	return false
}

// GrayAlongsideWrites orders, and where no order is enough adjusts, the
// ReplicaSet writes of one gray step of a taken-over Deployment, so that no
// write leaves the ReplicaSets in a state where the built-in controller would
// resize one (BuiltInRescales): it runs next to ours, sees the Deployment
// paused on Recreate, and would undo the step.
//
//  1. A step that shrinks old ReplicaSets and would end with the new one
//     empty and the built-in controller rescaling (a lone active old one not
//     at R, or none active) grows the new ReplicaSet by one (within MaxNew)
//     in the same step: the rollout grows it next anyway, and with maxSurge 0
//     there is no other way forward. The Deployment briefly runs one pod above
//     R + maxSurge.
//  2. A step that empties the last old ReplicaSets while the new one is
//     short of R keeps one pod on the last of them (in input order: the
//     stable ReplicaSet of a rolling step) when it removes two or more: the
//     next step grows the new ReplicaSet, and no surge is exceeded. When it
//     removes only one, the new ReplicaSet grows by one first (within
//     MaxNew), again one pod above R + maxSurge, and the old pod stays if
//     that still leaves the new ReplicaSet short of R.
//  3. The writes that grow a ReplicaSet go before those that shrink one,
//     the new ReplicaSet before the old ones, the old ones in input order,
//     except that a write bringing an empty ReplicaSet back comes first
//     among the grows and one emptying a ReplicaSet last among the shrinks:
//     the count of active ReplicaSets then never dips between two writes (a
//     canary alone at 1 of R=1 scaled to 6 gets its old pod back before it
//     grows to 5, or in between the built-in controller would scale it to 6).
//     ReplicaSets whose size does not change come last (a caller refreshing
//     annotations writes them too). The new ReplicaSet is left out when
//     there is none.
//  4. When the sizes before the step already leave the built-in controller
//     a lone active ReplicaSet to resize (a scaling event of a Deployment
//     whose canary is the whole of it), the write to that ReplicaSet goes
//     first, unless it empties it: the built-in controller is resizing it
//     from the same state at the same moment, and our write makes its write
//     conflict instead of landing after our others (a canary of 6 of 6 next
//     to the old pod just brought back is saturated, and the built-in
//     controller would empty the old ReplicaSet again). That holds for a
//     write that only refreshes its annotations too (a scaling event writes
//     every active ReplicaSet; R 1→2 at 50% keeps the canary at 1). If its
//     write lands first, ours conflicts and the caller plans again from the
//     live ReplicaSets.
//
// Worked rows (R=10; sizes as new, old):
//
//	surge 0, T 3:  0, [10] planned 0, [9]          → new 1, old 9          (rule 1)
//	full:          9, [1] planned 9, [0]           → new 10, old 0         (rule 2, one removed)
//	full:          8, [3] planned 8, [0]           → old 1, new 8          (rule 2, one kept)
//	T 2:           0, [1 9] planned 0, [0 9]       → new 1, old₀ 0, old₁ 9 (rule 1, canary first)
//	T 0:           5, [5] planned 0, [10]          → old 10, new 0         (rule 3: grow first)
//	R=1, T 1:      0, [1] planned 0, [0]           → new 1, old 0          (rule 1: none active is unsafe too)
//	R 1→6, T 5:    1, [0] planned 5, [1]           → new 5, old 1          (rule 4: the lone canary first)
func GrayAlongsideWrites(in GrayWritesInput) []GrayWrite {
	planned := GrayStep{New: in.Planned.New, Old: append([]int32(nil), in.Planned.Old...)}
	var before, after int32
	shrinksOld, last := false, -1
	for i, s := range in.Current.Old {
		before += s
		after += planned.Old[i]
		if planned.Old[i] < s {
			shrinksOld = true
			if planned.Old[i] == 0 {
				last = i
			}
		}
	}

	if in.HasNew && shrinksOld {
		// Rule 1.
		if planned.New == 0 && planned.New+1 <= in.MaxNew && BuiltInRescales(in.Replicas, planned) {
			planned.New = 1
		}
		// Rule 2.
		if after == 0 && last >= 0 && planned.New > 0 && planned.New < in.Replicas {
			switch {
			case before >= 2:
				planned.Old[last] = 1
			case planned.New+1 <= in.MaxNew:
				planned.New++
				if planned.New < in.Replicas {
					planned.Old[last] = in.Current.Old[last]
				}
			}
		}
	}

	var activations, grows, shrinks, deactivations, same []GrayWrite
	add := func(w GrayWrite, from int32) {
		to := w.Size
		switch {
		case to > from && from == 0:
			activations = append(activations, w)
		case to > from:
			grows = append(grows, w)
		case to < from && to == 0:
			deactivations = append(deactivations, w)
		case to < from:
			shrinks = append(shrinks, w)
		default:
			same = append(same, w)
		}
	}
	if in.HasNew {
		add(GrayWrite{New: true, Size: planned.New}, in.Current.New)
	}
	for i, s := range in.Current.Old {
		add(GrayWrite{Old: i, Size: planned.Old[i]}, s)
	}
	writes := slices.Concat(activations, grows, shrinks, deactivations, same)
	// Rule 4.
	if lone, ok := loneActive(in); ok && BuiltInRescales(in.Replicas, in.Current) {
		for i, w := range writes {
			if w.Size > 0 && w.New == lone.New && w.Old == lone.Old {
				writes = slices.Concat([]GrayWrite{w}, writes[:i], writes[i+1:])
				break
			}
		}
	}
	return writes
}

// loneActive names the only active ReplicaSet of in.Current (as a GrayWrite without a size),
// and reports false when none or several are.
func loneActive(in GrayWritesInput) (GrayWrite, bool) {
	var lone GrayWrite
	active := 0
	if in.HasNew && in.Current.New > 0 {
		lone, active = GrayWrite{New: true}, 1
	}
	for i, s := range in.Current.Old {
		if s > 0 {
			lone, active = GrayWrite{Old: i}, active+1
		}
	}
	return lone, active == 1
}
