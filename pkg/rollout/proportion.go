package rollout

import (
	"math"
	"sort"
)

// ReplicaSetFraction estimates how many replicas one ReplicaSet should gain
// (positive) or lose (negative) when a Deployment with several active
// ReplicaSets is resized (upstream getReplicaSetFraction).
//
//	if R == 0:                          −rsSpec                  (everything goes)
//	oldMax = annotatedMax               (max-replicas annotation of the RS)
//	if !hasAnnotatedMax || oldMax == 0: oldMax = statusReplicas  (fallback)
//	if oldMax == 0:                     0                        (no basis to estimate)
//	fraction = round(float(rsSpec·newMax) / float(oldMax)) − rsSpec
//
// newMax is R + MaxSurge of the resized Deployment. The rounding is
// math.Round (half away from zero) and, like upstream, rsSpec·newMax is
// multiplied in int32 BEFORE the conversion to float, so it wraps for
// products above 2³¹−1 (e.g. 50000·50000); this is kept on purpose so the
// result matches the upstream controller bit for bit.
//
// Worked rows:
//
//	rsSpec 8,  newMax 25, oldMax 13        → round(15.38) − 8  = +7
//	rsSpec 15, newMax 7,  oldMax 25        → round(4.2)   − 15 = −11
//	rsSpec 12, newMax 10, oldMax 12        → round(10)    − 12 = −2
//	rsSpec 10, R 0                          → −10
//	rsSpec 10, no annotation, statusReplicas 0 → 0
func ReplicaSetFraction(rsSpec, desired, newMax, annotatedMax int32, hasAnnotatedMax bool, statusReplicas int32) int32 {
	if desired == 0 {
		return -rsSpec
	}
	oldMax := annotatedMax
	if !hasAnnotatedMax || oldMax == 0 {
		oldMax = statusReplicas
		if oldMax == 0 {
			return 0
		}
	}
	// int32 product first: this wraps exactly where upstream's does.
	product := rsSpec * newMax
	return int32(math.Round(float64(product)/float64(oldMax))) - rsSpec
}

// Proportion bounds a ReplicaSet's fraction by what is still left to
// distribute (upstream GetReplicaSetProportion). toAdd is the total change
// for the Deployment (allowed size minus current active sum) and added the
// change already handed to ReplicaSets earlier in the iteration.
//
//	if rsSpec == 0 || toAdd == 0 || added == toAdd: 0
//	allowed = toAdd − added
//	toAdd > 0: min(fraction, allowed)   (never add more than is left)
//	toAdd < 0: max(fraction, allowed)   (never remove more than is left)
//
// Worked rows:
//
//	rsSpec 3, fraction +3,  toAdd 12,  added 9   → min(3, 3)    = 3
//	rsSpec 6, fraction −4,  toAdd −18, added −14 → max(−4, −4)  = −4
//	rsSpec 1, fraction +1,  toAdd 1,   added 1   → 0 (nothing left)
//	rsSpec 0, fraction any                       → 0 (empty RSs never grow proportionally)
func Proportion(rsSpec, fraction, toAdd, added int32) int32 {
	if rsSpec == 0 || toAdd == 0 || toAdd == added {
		return 0
	}
	allowed := toAdd - added
	if toAdd > 0 {
		return min(fraction, allowed)
	}
	return max(fraction, allowed)
}

// ScaleReplicaSet is one ReplicaSet as the proportional scaler sees it.
type ScaleReplicaSet struct {
	// Spec is spec.replicas.
	Spec int32
	// Available is status.availableReplicas; only the new ReplicaSet's value
	// is used (saturation check).
	Available int32
	// Desired and HasDesired carry the desired-replicas annotation as the
	// saturation check reads it (strconv.Atoi, then int32 conversion).
	Desired    int32
	HasDesired bool
	// Max and HasMax carry the max-replicas annotation (a uint ≤ MaxInt32);
	// HasMax is false when it is missing or unparsable.
	Max    int32
	HasMax bool
}

// ScaleInput is everything upstream scale() looks at, as plain values.
type ScaleInput struct {
	// Desired is the Deployment's spec.replicas (R).
	Desired int32
	// MaxSurge is the resolved surge of the Deployment; 0 unless RollingUpdate.
	MaxSurge int32
	// RollingUpdate is true for the RollingUpdate strategy. Recreate never
	// scales several active ReplicaSets proportionally.
	RollingUpdate bool
	// StatusReplicas is the Deployment's status.replicas, the fallback base of
	// ReplicaSetFraction when a max-replicas annotation is missing.
	StatusReplicas int32
	// ReplicaSets holds the new and all old ReplicaSets ordered OLDEST FIRST by
	// (creationTimestamp, name). The position is the age rank used by every
	// tie-break, so the order must be exactly that.
	ReplicaSets []ScaleReplicaSet
	// NewIndex is the position of the new ReplicaSet in ReplicaSets, or −1
	// when the Deployment has no new ReplicaSet (e.g. template changed while
	// paused).
	NewIndex int
}

// ScaleStep is one ReplicaSet write the scaler wants, in the order the
// writes must be issued (the controller stops at the first failed write, so
// the order is observable).
type ScaleStep struct {
	// Index is the position in ScaleInput.ReplicaSets.
	Index int
	// Size is the new spec.replicas.
	Size int32
	// Force asks for a write even when Size equals the current spec, if the
	// desired-/max-replicas annotations are stale (upstream forceUpdate).
	Force bool
}

// PlanScale decides how a resized (or paused) Deployment's ReplicaSets are
// resized, following upstream scale() exactly:
//
//  1. At most one active ReplicaSet (spec > 0): that one, or if none is
//     active the new ReplicaSet, or else the newest old one, is set to R
//     (no step at all when it already has R).
//  2. The new ReplicaSet is saturated (spec = desired annotation = available
//     = R): every active old ReplicaSet goes to 0, newest first.
//  3. RollingUpdate only: allowed = R + MaxSurge (0 when R = 0),
//     toAdd = allowed − Σspec(active). Active ReplicaSets are ordered by
//     spec descending, ties newer first when toAdd > 0 and older first when
//     toAdd < 0 (toAdd = 0 keeps "old newest-first, then new"). Each gets
//     spec + Proportion(ReplicaSetFraction(...)); the first (largest) one
//     also gets the leftover toAdd − added, clamped at 0. Every active
//     ReplicaSet gets a forced step.
//
// Worked rows (upstream sync.go: scale; R=10→20, surge 3→5, old 8 / new 5, both annotated
// max 13): toAdd = 25 − 13 = 12; old round(8·25/13)=15 → +7; new
// round(5·25/13)=10 → +5 (allowed 5); leftover 0 → old 15 / new 10.
// R=3→4, surge 0, three RSs of 1 (max 3): fractions round(4/3)−1 = 0 each,
// leftover 1 goes to the first in order = the newest → 2/1/1.
func PlanScale(in ScaleInput) []ScaleStep {
	rss := in.ReplicaSets
	if len(rss) == 0 {
		return nil
	}
	hasNew := in.NewIndex >= 0 && in.NewIndex < len(rss)

	// Old ReplicaSets newest first, then the new one: the order upstream
	// builds after FindActiveOrLatest sorts the old list.
	var oldNewestFirst []int
	for i := len(rss) - 1; i >= 0; i-- {
		if !hasNew || i != in.NewIndex {
			oldNewestFirst = append(oldNewestFirst, i)
		}
	}
	candidates := oldNewestFirst
	if hasNew {
		candidates = append(append([]int(nil), oldNewestFirst...), in.NewIndex)
	}
	var active []int
	for _, i := range candidates {
		if rss[i].Spec > 0 {
			active = append(active, i)
		}
	}

	pick := -1
	switch len(active) {
	case 0:
		if hasNew {
			pick = in.NewIndex
		} else {
			pick = oldNewestFirst[0]
		}
	case 1:
		pick = active[0]
	}
	if pick >= 0 {
		if rss[pick].Spec == in.Desired {
			return nil
		}
		return []ScaleStep{{Index: pick, Size: in.Desired}}
	}

	if hasNew && saturated(rss[in.NewIndex], in.Desired) {
		var steps []ScaleStep
		for _, i := range oldNewestFirst {
			if rss[i].Spec > 0 {
				steps = append(steps, ScaleStep{Index: i, Size: 0})
			}
		}
		return steps
	}

	if !in.RollingUpdate {
		return nil
	}

	var sum int32
	for _, i := range active {
		sum += rss[i].Spec
	}
	var allowedSize int32
	if in.Desired > 0 {
		allowedSize = in.Desired + in.MaxSurge
	}
	toAdd := allowedSize - sum

	switch {
	case toAdd > 0:
		sort.SliceStable(active, func(a, b int) bool {
			x, y := active[a], active[b]
			if rss[x].Spec != rss[y].Spec {
				return rss[x].Spec > rss[y].Spec
			}
			return x > y // same size: newer first when adding
		})
	case toAdd < 0:
		sort.SliceStable(active, func(a, b int) bool {
			x, y := active[a], active[b]
			if rss[x].Spec != rss[y].Spec {
				return rss[x].Spec > rss[y].Spec
			}
			return x < y // same size: older first when removing
		})
	}

	newMax := in.Desired + in.MaxSurge
	sizes := make([]int32, len(active))
	var added int32
	for k, i := range active {
		sizes[k] = rss[i].Spec
		if toAdd == 0 {
			continue
		}
		f := ReplicaSetFraction(rss[i].Spec, in.Desired, newMax, rss[i].Max, rss[i].HasMax, in.StatusReplicas)
		p := Proportion(rss[i].Spec, f, toAdd, added)
		sizes[k] += p
		added += p
	}
	if toAdd != 0 {
		sizes[0] = max(sizes[0]+toAdd-added, 0)
	}

	steps := make([]ScaleStep, len(active))
	for k, i := range active {
		steps[k] = ScaleStep{Index: i, Size: sizes[k], Force: true}
	}
	return steps
}

// saturated mirrors upstream IsSaturated on plain values: the new ReplicaSet
// owns all R replicas, believes so itself (desired annotation), and all of
// them are available.
func saturated(rs ScaleReplicaSet, desired int32) bool {
	return rs.HasDesired && rs.Spec == desired && rs.Desired == desired && rs.Available == desired
}
