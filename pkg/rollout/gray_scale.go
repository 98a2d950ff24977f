package rollout

// A gray Deployment resized (GrayScaleSizes), or brought back under its caps
// (PlanGrayRestore), and how old replicas are shared out among the old
// ReplicaSets (SpreadOld).

// SpreadOld shares total out over old ReplicaSets in proportion to their
// current sizes (specs), the way a gray Deployment keeps its old share when
// it is scaled:
//
//	share_i = floor(spec_i · total / Σspec)
//	the leftover total − Σshare goes to the largest ReplicaSet (the first
//	one in input order among equally large)
//	Σspec = 0: everything goes to the first ReplicaSet of the input
//
// Callers list the stable ReplicaSet first so that it wins every tie. A
// negative total counts as 0. Worked rows:
//
//	[8]    → 16: [16]
//	[6 2]  → 16: 6·16/8 = 12, 2·16/8 = 4 → [12 4]
//	[12 4] → 2:  12·2/16 = 1.5 → 1, 4·2/16 = 0.5 → 0, leftover 1 to 12 → [2 0]
//	[3 3]  → 5:  2 and 2, leftover 1 to the first → [3 2]
//	[0 0]  → 4:  [4 0]
func SpreadOld(specs []int32, total int32) []int32 {
	out := make([]int32, len(specs))
	if len(specs) == 0 {
		return out
	}
	total = max(total, 0)
	var sum int64
	largest := 0
	for i, s := range specs {
		sum += int64(s)
		if s > specs[largest] {
			largest = i
		}
	}
	if sum == 0 {
		out[0] = total
		return out
	}
	var given int32
	for i, s := range specs {
		// int64: spec·total overflows int32 long before either does.
		out[i] = int32(int64(s) * int64(total) / sum)
		given += out[i]
	}
	out[largest] += total - given
	return out
}

// GrayScaleInput describes a gray Deployment whose spec.replicas changed.
type GrayScaleInput struct {
	// Replicas is the new replica count R'.
	Replicas int32
	// Target is T for R' (GrayTarget(R', P), or R' when the rollout goes to
	// the end).
	Target int32
	// Held is true while the rollout is held at its hold point.
	Held bool
	// HasNew is false when the new template has no ReplicaSet yet.
	HasNew bool
	// NewSpec is the new ReplicaSet's spec.replicas.
	NewSpec int32
	// ProportionalNew is the new ReplicaSet's size under upstream proportional
	// scaling (PlanScale); only used while not held.
	ProportionalNew int32
	// Old are the old ReplicaSets' spec.replicas, stable first (see SpreadOld).
	Old []int32
}

// GrayScaleSizes resizes a gray Deployment to R' replicas: the share of the
// new ReplicaSet is preserved and no surge is added.
//
//	new' = T(R')                          if held, or if new ≥ T(R')
//	new' = min(T(R'), proportional new)   otherwise (a step in flight keeps its pace)
//	old' = SpreadOld(old, R' − new')
//
// Worked rows (20%, held):
//
//	R 10→20, T 4:  new 2 → 4,  old [8]  → [16]
//	R 20→3,  T 1:  new 4 → 1,  old [16] → [2]
//	R 10→20, T 4, not held, new 1, proportional 2: new 2, old [9] → [18]
//	no new ReplicaSet yet, R 10→12: old [7 3] → 12·7/10 = 8, 12·3/10 = 3, leftover 1 to the 7 → [9 3]
func GrayScaleSizes(in GrayScaleInput) (newSize int32, oldSizes []int32) {
	maxNew, _ := GrayCaps(in.Replicas, in.Target)
	switch {
	case !in.HasNew:
		newSize = 0
	case in.Held || in.NewSpec >= maxNew:
		newSize = maxNew
	default:
		newSize = min(maxNew, max(in.ProportionalNew, 0))
	}
	return newSize, SpreadOld(in.Old, max(in.Replicas, 0)-newSize)
}

// GrayRestoreInput is a gray Deployment whose caps broke without a scaling
// event: the new ReplicaSet is above the target (the hold point was lowered),
// or the old ReplicaSets together are below R − T (someone resized one
// through the scale subresource, which the freeze policy cannot see).
type GrayRestoreInput struct {
	// Replicas is the Deployment's spec.replicas (R).
	Replicas int32
	// Surge and Unavailable are the resolved maxSurge and maxUnavailable
	// (both-zero rule applied).
	Surge, Unavailable int32
	// Target is the gray target T.
	Target int32
	// NewSpec is the new ReplicaSet's spec.replicas.
	NewSpec int32
	// NewUnavailable counts the new ReplicaSet's replicas known not to be
	// ready (the ones the ReplicaSet controller deletes first, see
	// GrayReplicaSet.notReady): 0 when its status has not observed its spec.
	NewUnavailable int32
	// Available counts the replicas known to be available over every
	// ReplicaSet; one whose status has not observed its spec counts 0.
	Available int32
	// Old are the old ReplicaSets' spec.replicas, stable first (see SpreadOld).
	Old []int32
}

// PlanGrayRestore moves a gray Deployment back under its caps the way a
// rolling update moves, so that restoring the hold never costs more than
// maxSurge and maxUnavailable allow: the old ReplicaSets grow first, within
// the surge, and the new one shrinks as far as availability allows (the
// ReplicaSet controller deletes unavailable pods first). The new ReplicaSet
// only ever shrinks, so while it comes down it is above the new target but
// never grows there.
//
//	grow   = min(max(0, (R − T) − Σold), max(0, R + surge − (new + Σold)))
//	old'   = SpreadOld(old, Σold + grow)        (unchanged when grow = 0)
//	shrink = min(max(0, new − T), NewUnavailable + max(0, Available − (R − unavailable)))
//	new'   = new − shrink
//
// Worked rows (R=10, T=2: the hold point lowered from 50% to 20%):
//
//	surge 3, unavail 2, new 5, old [5], 10 available → grow min(3, 3) = 3 → old [8];
//	                                                   shrink min(3, 0 + 10−8) = 2 → new 3
//	then old [8] and new 3 all available (11)       → grow 0; shrink min(1, 11−8) = 1 → new 2
//	surge 1, unavail 0, new 5, old [5], 10 available → old [6]; shrink min(3, 10−10) = 0 → new 5
//	surge 0, unavail 1, new 5, old [5], 10 available → grow 0 (no room); shrink 1 → new 4
//
// and after the built-in controller's paused sync (alongside mode):
//
//	R=6, T=5, surge 0, unavail 1: it scaled the lone canary 1 → 6, 1 available, old [0]:
//	  grow min(1, 0) = 0; shrink min(1, 5 + 0) = 1 → new 5 (an unready pod goes)
//	R=3, T=2, surge 1, unavail 0: it scaled the old ReplicaSet to 0, new 3 all available:
//	  grow min(1, 1) = 1 → old [1]; shrink min(1, 3−3) = 0 → new 3 until the old pod is up
func PlanGrayRestore(in GrayRestoreInput) (newSize int32, oldSizes []int32) {
	_, minOld := GrayCaps(in.Replicas, in.Target)
	var oldTotal int32
	for _, s := range in.Old {
		oldTotal += s
	}
	oldSizes = append([]int32(nil), in.Old...)
	if grow := min(max(0, minOld-oldTotal), max(0, in.Replicas+in.Surge-in.NewSpec-oldTotal)); grow > 0 {
		oldSizes = SpreadOld(in.Old, oldTotal+grow)
	}
	slack := max(0, in.Available-(in.Replicas-in.Unavailable))
	shrink := min(max(0, in.NewSpec-in.Target), max(0, in.NewUnavailable)+slack)
	return in.NewSpec - shrink, oldSizes
}

// fullPercent is the share of a rollout that goes to the end.
const fullPercent = 100
