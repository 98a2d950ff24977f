package rollout

// NewReplicasForRolling returns the size the new ReplicaSet should have in a
// rolling update step (upstream reconcileNewReplicaSet via NewRSNewReplicas).
// desired is R, surge the resolved maxSurge, newSpec the new ReplicaSet's
// spec.replicas and allSpecSum the sum of spec.replicas over ALL ReplicaSets
// of the Deployment (new included).
//
//	maxTotal = R + surge
//	if allSpecSum >= maxTotal: newSpec                      (no room to grow)
//	else:                      newSpec + min(maxTotal − allSpecSum, R − newSpec)
//
// The second term of the min keeps the new ReplicaSet from growing past R.
// Callers handle newSpec ≥ R themselves (upstream scales a too-large new
// ReplicaSet straight down to R before getting here).
//
// Worked rows (R=10):
//
//	surge 2, new 0, old 10 (sum 10) → 0 + min(12−10, 10−0) = 2
//	surge 2, new 0, old 5  (sum 5)  → 0 + min(12−5, 10−0)  = 7
//	surge 2, new 2, old 10 (sum 12) → 2 (sum already at 12)
//	surge 3, new 5, old 3  (sum 8)  → 5 + min(13−8, 10−5)  = 10
func NewReplicasForRolling(desired, surge, newSpec, allSpecSum int32) int32 {
	maxTotal := desired + surge
	if allSpecSum >= maxTotal {
		return newSpec
	}
	return newSpec + min(maxTotal-allSpecSum, desired-newSpec)
}

// MaxScaledDown returns how many old replicas a rolling update may remove in
// this step (upstream reconcileOldReplicaSets):
//
//	maxScaledDown = allPods − minAvailable − newUnavailable
//
// where allPods is the sum of spec.replicas over all ReplicaSets, minAvailable
// is R − maxUnavailable and newUnavailable is the new ReplicaSet's spec minus
// its available replicas. Unavailable new pods are subtracted because they
// already use up part of the unavailability budget. A result ≤ 0 means
// nothing may be scaled down.
//
// Worked rows (R=10, surge 3, unavailable 2 → minAvailable 8):
//
//	all 13 (old 10, new 3 with 0 available) → 13 − 8 − 3 = 2
//	all 13 (old 8,  new 5 with 5 available) → 13 − 8 − 0 = 5
//	all 10 (old 8,  new 2 with 0 available) → 10 − 8 − 2 = 0 (nothing)
func MaxScaledDown(allPods, minAvailable, newUnavailable int32) int32 {
	return allPods - minAvailable - newUnavailable
}
