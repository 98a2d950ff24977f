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
	// Unobserved: the status does not describe the current spec yet (its
	// observedGeneration is behind), so Available and Ready are taken as 0
	// and which pods are not ready is unknown.
	Unobserved bool
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
