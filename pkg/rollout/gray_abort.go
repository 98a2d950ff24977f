package rollout

// An aborted gray rollout going back to its stable revision by sizes alone
// (PlanGrayAbort): the template stays as written, so the canary's ReplicaSet
// stays "new" and is emptied instead of replaced.

// GrayAbortInput is an aborted gray Deployment: the stable ReplicaSet grows
// back to every replica and every other ReplicaSet (the canary, abandoned
// canaries) goes to 0.
type GrayAbortInput struct {
	// Replicas is the Deployment's spec.replicas (R).
	Replicas int32
	// Surge and Unavailable are the resolved maxSurge and maxUnavailable
	// (both-zero rule applied).
	Surge, Unavailable int32
	// Stable is the stable revision's ReplicaSet.
	Stable GrayReplicaSet
	// Leaving are the ReplicaSets that go to 0, in the order they shrink:
	// the aborted canary first, then abandoned canaries.
	Leaving []GrayReplicaSet
}

// PlanGrayAbort moves an aborted rollout one step back to its stable
// revision the way a rolling update moves, within maxSurge and
// maxUnavailable (a canary that had every pod available can be aborted as
// well as a failing one):
//
//	stable' = R                                             if stable > R (a scale-down)
//	stable' = stable + min(R − stable, max(0, R + surge − Σspec))   otherwise
//	slack   = max(0, Σavailable − (R − unavailable))
//	each leaving ReplicaSet in order loses its not-ready replicas, which
//	cost no availability (none while its status is behind its spec: which
//	pods are not ready is unknown then), and then available ones while
//	slack lasts.
//
// Worked rows (spec/available; a not-ready replica is spec − available here):
//
//	R=10, surge 3, unavail 2, stable 8/8, canary 2/0 (never ready)
//	  → stable 8 + min(2, 13−10) = 10; slack 8−8 = 0; canary loses its 2 not-ready → 0
//	R=10, surge 1, unavail 0, stable 5/5, canary 5/5 (a person aborts a good canary)
//	  → stable 5 + min(5, 11−10) = 6; slack 10−10 = 0 → canary 5
//	  then stable 6/6, canary 5/5 → stable 6 + min(4, 11−11) = 6; slack 11−10 = 1 → canary 4
//	R=8, surge 0, unavail 2, stable 3/3, canary 4 with its status still of 5 (unobserved)
//	  → stable 3 + min(5, 8−7) = 4; slack 3−6 < 0; the canary keeps 4 until its status catches up
//	R=5 (scaled down from 10), stable 10/10, canary 0/0 → stable 5
func PlanGrayAbort(in GrayAbortInput) (stable int32, leaving []int32) {
	replicas := max(in.Replicas, 0)
	total, available := in.Stable.Spec, in.Stable.Available
	for _, rs := range in.Leaving {
		total += rs.Spec
		available += rs.Available
	}
	stable = in.Stable.Spec
	if stable > replicas {
		stable = replicas
	} else {
		stable += min(replicas-stable, max(0, replicas+in.Surge-total))
	}
	slack := max(0, available-(replicas-in.Unavailable))
	leaving = make([]int32, len(in.Leaving))
	for i, rs := range in.Leaving {
		free := min(rs.notReady(), rs.Spec)
		if rs.Unobserved {
			// A status behind its spec cannot say which pods are not ready: taking them all
			// for not ready would shrink ready ones below maxUnavailable.
			free = 0
		}
		shrink := min(rs.Spec, free+slack)
		slack -= max(0, shrink-free)
		leaving[i] = rs.Spec - shrink
	}
	return stable, leaving
}
