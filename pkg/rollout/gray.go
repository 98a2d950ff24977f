package rollout

// GrayTarget returns how many replicas the new (gray) ReplicaSet should run
// when a Deployment of R replicas is held at P percent:
//
//	P ≤ 0 or R ≤ 0: 0
//	T = ceil(R·P/100)      (P above 100 counts as 100)
//	T ≥ 1                  (a positive percentage always gets a canary)
//	T ≤ R − 1 when R ≥ 2   (a gray step never replaces every old replica)
//
// A single-replica Deployment (R = 1) has no old replica to keep, so any
// positive percentage gives 1.
//
// Worked table (computed by hand):
//
//	 R \ P |  1  33  34  50  99
//	-------+--------------------
//	   1   |  1   1   1   1   1
//	   2   |  1   1   1   1   1   (99: ceil 1.98 = 2, capped at R−1 = 1)
//	   3   |  1   1   2   2   2   (33: ceil 0.99 = 1; 34: ceil 1.02 = 2; 99: 3 capped at 2)
//	  10   |  1   4   4   5   9   (1: ceil 0.1 = 1; 33: ceil 3.3 = 4; 99: 10 capped at 9)
func GrayTarget(replicas int32, percent int32) int32 {
	if replicas <= 0 || percent <= 0 {
		return 0
	}
	if percent > 100 {
		percent = 100
	}
	// int64 so that R·P cannot overflow for any int32 R.
	t := int32((int64(replicas)*int64(percent) + 99) / 100)
	if t < 1 {
		t = 1
	}
	if replicas >= 2 && t > replicas-1 {
		t = replicas - 1
	}
	return t
}

// GrayCaps returns the two bounds a gray rollout adds to maxSurge and
// maxUnavailable while it rolls toward target T out of replicas R:
//
//	maxNew = T       the new ReplicaSet never has more than T replicas
//	minOld = R − T   the old ReplicaSets together never drop below R − T
//
// T is clamped to 0…R first (a full rollout passes T = R). Worked rows:
//
//	R=10, T=2  → maxNew 2,  minOld 8
//	R=10, T=10 → maxNew 10, minOld 0   (full: plain rolling update)
//	R=3,  T=0  → maxNew 0,  minOld 3   (hold point 0%)
func GrayCaps(replicas, target int32) (maxNew, minOld int32) {
	replicas = max(replicas, 0)
	target = min(max(target, 0), replicas)
	return target, replicas - target
}

// GrayReplicaSet is a ReplicaSet as a gray rollout step sees it.
type GrayReplicaSet struct {
	// Spec is spec.replicas.
	Spec int32
	// Available is status.availableReplicas.
	Available int32
	// Ready is status.readyReplicas (at least Available; a pod is available
	// once it has been ready for minReadySeconds).
	Ready int32
}

// notReady is how many of rs's replicas the ReplicaSet controller deletes
// before any ready pod when rs shrinks: it ranks not-ready pods first, but
// among ready ones it may pick an available pod (one doubled up on a node,
// say) before one still inside minReadySeconds.
func (rs GrayReplicaSet) notReady() int32 {
	return max(rs.Spec-max(rs.Ready, rs.Available), 0)
}

// GrayStepInput is everything one gray rolling-update step looks at.
type GrayStepInput struct {
	// Replicas is the Deployment's spec.replicas (R).
	Replicas int32
	// Surge is the resolved maxSurge.
	Surge int32
	// Unavailable is the resolved maxUnavailable, both-zero rule applied and
	// clamped to R (deployutil.MaxUnavailable).
	Unavailable int32
	// Target is the gray target T (GrayTarget, or R when the rollout goes to
	// the end).
	Target int32
	// New is the new ReplicaSet.
	New GrayReplicaSet
	// Old are the old ReplicaSets in the order they are scaled down:
	// abandoned canaries first, the stable ReplicaSet last.
	Old []GrayReplicaSet
}

// GrayStep is the outcome of PlanGrayStep: the new spec.replicas of the new
// ReplicaSet and of every old one (aligned with GrayStepInput.Old).
type GrayStep struct {
	New int32
	Old []int32
}

// PlanGrayStep plans one step of a gray rolling update: the upstream step
// (NewReplicasForRolling, then MaxScaledDown with the unhealthy-first and the
// availability-bounded scale-downs) with GrayCaps applied.
//
//  1. new > T: new = T, nothing else (the caller restores the old share with
//     SpreadOld; this only happens when the hold point moved down).
//  2. new' = min(NewReplicasForRolling(R, surge, new, Σspec), T); if it grows,
//     that is the whole step (upstream scales old ReplicaSets on a later sync).
//  3. Otherwise old ReplicaSets shrink, never below minOld = R − T in total:
//     budget₁ = min(Σspec − (R − unavailable) − (new − newAvailable), Σold − minOld);
//     each old ReplicaSet in order loses up to its not-ready replicas
//     (spec − max(ready, available)) while budget₁ lasts; then
//     budget₂ = min(Σavailable − (R − unavailable), Σold' − minOld) and each old
//     ReplicaSet in order loses up to its whole spec while budget₂ lasts.
//     Nothing shrinks when budget₁ ≤ 0.
//
// The ReplicaSet controller deletes not-ready pods first, so step 3 never
// plans availability below R − unavailable when it was at or above it.
// (Upstream removes spec − available "unhealthy" replicas there; with
// minReadySeconds a ready but not yet available pod is not deleted first, so
// that can cost available pods.)
//
// Worked rows (R=10, T=2, so maxNew 2 and minOld 8; new and old as spec/available):
//
//	surge 3, unavail 2, new 0/0, old [10/10] → new min(0+min(13−10, 10), 2) = 2
//	surge 3, unavail 2, new 2/0, old [10/10] → budget₁ min(12−8−2, 10−8) = 2, nothing unhealthy;
//	                                           budget₂ min(10−8, 10−8) = 2 → old [8]
//	surge 0, unavail 1, new 0/0, old [10/10] → no room to grow; budget₁ min(10−9−0, 2) = 1,
//	                                           budget₂ min(10−9, 2) = 1 → old [9]
//	surge 0, unavail 1, new 0/0, old [9/9]   → new 0+min(10−9, 10) = 1
//	surge 0, unavail 1, new 1/0, old [9/9]   → budget₁ min(10−9−1, 9−8) = 0 → nothing (waits)
//	surge 3, unavail 2, new 2/2, old [canary 1/0, stable 9/9]
//	                                         → budget₁ min(12−8−0, 10−8) = 2: the canary loses its
//	                                           unavailable 1; budget₂ min(11−8, 9−8) = 1: the stable
//	                                           loses 1 → old [0 8]
func PlanGrayStep(in GrayStepInput) GrayStep {
	out := GrayStep{New: in.New.Spec, Old: make([]int32, len(in.Old))}
	var oldTotal, oldAvailable int32
	for i, rs := range in.Old {
		out.Old[i] = rs.Spec
		oldTotal += rs.Spec
		oldAvailable += rs.Available
	}
	maxNew, minOld := GrayCaps(in.Replicas, in.Target)
	if in.New.Spec > maxNew {
		out.New = maxNew
		return out
	}
	allSpec := in.New.Spec + oldTotal
	if grown := min(NewReplicasForRolling(in.Replicas, in.Surge, in.New.Spec, allSpec), maxNew); grown > in.New.Spec {
		out.New = grown
		return out
	}

	minAvailable := in.Replicas - in.Unavailable
	budget := min(MaxScaledDown(allSpec, minAvailable, in.New.Spec-in.New.Available), oldTotal-minOld)
	if budget <= 0 {
		return out
	}
	// Unhealthy replicas first: removing them costs no availability.
	var removed int32
	for i, rs := range in.Old {
		if removed >= budget {
			break
		}
		if unhealthy := rs.notReady(); unhealthy > 0 {
			n := min(budget-removed, unhealthy)
			out.Old[i] -= n
			removed += n
		}
	}
	// Then healthy ones, as far as availability and the old floor allow.
	budget = min(in.New.Available+oldAvailable-minAvailable, oldTotal-removed-minOld)
	removed = 0
	for i := range out.Old {
		if removed >= budget {
			break
		}
		n := min(out.Old[i], budget-removed)
		out.Old[i] -= n
		removed += n
	}
	return out
}

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
// event: the new ReplicaSet is above the target (the hold point was lowered,
// or in alongside mode the built-in controller resized it), or the old
// ReplicaSets together are below R − T (the built-in controller scaled them
// away).
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

// GrayStepTarget returns the share and the target of step for replicas R and
// hold points: points[step] and GrayTarget(R, points[step]) while step is a
// hold point, 100% and R once step reaches len(points) (the rollout goes to
// the end). Worked rows with points [10 30 60], R=10:
//
//	step 0 → 10%, 1
//	step 2 → 60%, 6
//	step 3 → 100%, 10
func GrayStepTarget(replicas int32, points []int32, step int32) (percent, target int32) {
	if step < 0 {
		step = 0
	}
	if int(step) >= len(points) {
		return fullPercent, max(replicas, 0)
	}
	return points[step], GrayTarget(replicas, points[step])
}

// GrayContinuedStep is the step of a rollout that had reached step at percent
// when its hold points are (possibly) edited to points:
//
//	percent ≥ 100:                 len(points) (a rollout that went to the end stays there)
//	points[step] == percent:       step (nothing changed)
//	otherwise:                     the last point not above percent, or 0 if all are above
//
// so that an edit never widens a rollout beyond what the new list allows.
// Worked rows (reached 30% at step 1):
//
//	[10 30 60]    → 1
//	[10 20 30 60] → 2 (30)
//	[20 50]       → 0 (20: the new ReplicaSet shrinks to it)
//	[50 70]       → 0 (50: the rollout moves on to it)
func GrayContinuedStep(points []int32, step, percent int32) int32 {
	if percent >= fullPercent {
		return int32(len(points))
	}
	if step >= 0 && int(step) < len(points) && points[step] == percent {
		return step
	}
	continued := int32(0)
	for i, p := range points {
		if p <= percent {
			continued = int32(i)
		}
	}
	return continued
}

// GrayFirstStepNotPassed is where a rollout found half-way (the new
// ReplicaSet already has newReplicas of R) joins the hold points: the first
// step whose target is at least newReplicas, or len(points) when it is past
// them all. Worked rows (R=10, points [20 60]):
//
//	new 0 → 0 (T 2)
//	new 5 → 1 (T 6; 20% is passed)
//	new 7 → 2 (the end)
func GrayFirstStepNotPassed(replicas int32, points []int32, newReplicas int32) int32 {
	for i, p := range points {
		if GrayTarget(replicas, p) >= newReplicas {
			return int32(i)
		}
	}
	return int32(len(points))
}
