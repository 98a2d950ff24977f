package gray

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/kubegray/kubectl-gray/pkg/deployutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// PhaseFacts is what DecidePhase decides from.
type PhaseFacts struct {
	// st is the rollout as identified, stepped and held in this sync.
	Status grayapi.Status
	// steps is the number of hold points.
	Steps      int
	Deployment *appsv1.Deployment
	// complete is upstream's DeploymentComplete for the status about to be written.
	Complete bool
	NewRS    *appsv1.ReplicaSet
	OldRSs   []*appsv1.ReplicaSet
	// heldBefore: the status read already reported this hold Held for this generation
	// (DecideReport); within one generation Held is final.
	HeldBefore bool
}

// DecidePhase returns f.st with the phase and message the sync reports: Complete once the last
// step is complete (its revision becomes the stable one), Held while our hold stands settled,
// RolledBack while the stable revision comes back, Progressing otherwise, with a message that
// says what it waits for.
func DecidePhase(f PhaseFacts) grayapi.Status {
	st := f.Status
	replicas := *f.Deployment.Spec.Replicas
	last := int(st.Step) >= f.Steps
	held := f.Deployment.Spec.Paused && st.HeldAt != nil
	switch {
	case last && f.Complete:
		st.Phase = grayapi.PhaseComplete
		st.Message = completeMessage(replicas, st.Revision)
		st.StableRevision = st.Revision
		st.HeldAt = nil
	case held && (HoldSettled(f.NewRS, f.OldRSs, st.Target, replicas) || f.HeldBefore):
		st.Phase = grayapi.PhaseHeld
		st.Message = fmt.Sprintf("held at %d of %d replicas (%d%%) on revision %d; run kubectl gray resume", st.Target, replicas, st.Percent, st.Revision)
	case last && rollingBackTo(f.NewRS, st.StableRevision):
		st.Phase = grayapi.PhaseRolledBack
		st.Message = fmt.Sprintf("rolling back to stable revision %d", st.StableRevision)
	default:
		// Upstream's Progressing condition never times out while our hold pauses the rollout,
		// hence the step's own deadline.
		st.Phase = grayapi.PhaseProgressing
		switch {
		case held && f.NewRS != nil && f.NewRS.Status.AvailableReplicas < st.Target:
			st.Message = fmt.Sprintf("holding revision %d at %d of %d replicas (%d%%); waiting for its replicas to become available: %d of %d are",
				st.Revision, st.Target, replicas, st.Percent, f.NewRS.Status.AvailableReplicas, st.Target)
		case held:
			st.Message = fmt.Sprintf("holding revision %d at %d of %d replicas (%d%%); waiting for the old replicas to settle at %d",
				st.Revision, st.Target, replicas, st.Percent, replicas-st.Target)
		case f.Deployment.Spec.Paused:
			st.Message = fmt.Sprintf("paused by the user while rolling revision %d to %d of %d replicas (%d%%)", st.Revision, st.Target, replicas, st.Percent)
		case last:
			st.Message = fmt.Sprintf("rolling revision %d to all %d replicas", st.Revision, replicas)
		default:
			st.Message = fmt.Sprintf("rolling revision %d to %d of %d replicas (%d%%)", st.Revision, st.Target, replicas, st.Percent)
		}
	}
	return st
}

// HoldInPlace reports whether the ReplicaSets are sized for a hold at target out of replicas
// (new = T, old = R − T in total) and the ReplicaSet controller has observed every one of those
// sizes. Availability is not asked: a canary whose pods are not ready is still where the hold
// put it.
func HoldInPlace(newRS *appsv1.ReplicaSet, oldRSs []*appsv1.ReplicaSet, target, replicas int32) bool {
	if newRS == nil || !deployutil.StatusObserved(newRS) || *newRS.Spec.Replicas != target {
		return false
	}
	var old int32
	for _, rs := range oldRSs {
		if !deployutil.StatusObserved(rs) {
			return false
		}
		old += *rs.Spec.Replicas
	}
	return old == replicas-target
}

// HoldSettled reports whether a held rollout has reached its hold point: the ReplicaSets stand
// there (HoldInPlace), T new replicas are available and R − T old pods are left. Every count
// comes from a ReplicaSet status that has observed its latest spec: right after a resize the
// status still describes the old size, and a hold reported from it would be taken back by the
// next sync.
func HoldSettled(newRS *appsv1.ReplicaSet, oldRSs []*appsv1.ReplicaSet, target, replicas int32) bool {
	if !HoldInPlace(newRS, oldRSs, target, replicas) {
		return false
	}
	var oldPods int32
	for _, rs := range oldRSs {
		oldPods += rs.Status.Replicas
	}
	return newRS.Status.AvailableReplicas == target && oldPods == replicas-target
}

// rollingBackTo reports whether newRS is the stable revision's ReplicaSet coming back under a
// new number (a rollback that has not completed; once complete, the stable revision is the new
// one). Asked of a rollout at its last step, which a rollback always is.
func rollingBackTo(newRS *appsv1.ReplicaSet, stableRevision int64) bool {
	if newRS == nil || stableRevision <= 0 {
		return false
	}
	rev, err := deployutil.Revision(newRS)
	return err == nil && rev != stableRevision && deployutil.RevisionHistoryContains(newRS, stableRevision)
}
