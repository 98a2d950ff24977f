package gray

import (
	appsv1 "k8s.io/api/apps/v1"

	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// HoldChange is what becomes of our pause before any ReplicaSet is written.
type HoldChange int

const (
	HoldUnchanged HoldChange = iota
	// HoldLeft: our pause goes.
	HoldLeft
	// HoldAgain: a resume landed on a target the new ReplicaSet already has, a new hold at once.
	HoldAgain
)

// holdFacts is what decideHold decides from.
type holdFacts struct {
	// pausedByUs: spec.paused is our hold's; newRollout: of another rollout than this one.
	PausedByUs, NewRollout bool
	// resumed: the rollout moved on in this sync; scaling: spec.replicas changed.
	Resumed, Scaling bool
	NewRS            *appsv1.ReplicaSet
	Step             int32
	Steps            int
	Target           int32
}

// decideHold decides whether our pause stays: it goes for a new rollout, after the last hold
// point, or when the target moved above the new ReplicaSet (resume, edited hold points) other
// than by a scaling event, which keeps the hold and its share; a resume that lands on a target
// the new ReplicaSet already has is a new hold right away.
func decideHold(f holdFacts) HoldChange {
	if !f.PausedByUs {
		return HoldUnchanged
	}
	keep := !f.NewRollout && f.NewRS != nil && int(f.Step) < f.Steps &&
		(*f.NewRS.Spec.Replicas >= f.Target || (!f.Resumed && f.Scaling))
	switch {
	case !keep:
		return HoldLeft
	case f.Resumed:
		return HoldAgain
	}
	return HoldUnchanged
}

// pauseAfter reports whether our hold follows m's ReplicaSet writes in the same sync: nothing
// pauses the rollout and the canary as m leaves it (canary as read, or created or resized by
// m.Sizes) is at the target of a hold point. Web at 20% of 10 stepping its canary from 1 to 2 pauses after
// that write; at 2 already, with no hold, it pauses with no write before.
func pauseAfter(m Move, canary *appsv1.ReplicaSet, steps int) bool {
	if m.Paused || int(m.Status.Step) >= steps {
		return false
	}
	switch {
	case m.Sizes.resizes():
		return m.Sizes.NewSize >= m.Status.Target
	case canary != nil:
		return *canary.Spec.Replicas >= m.Status.Target
	}
	return false
}

// pausedByItsUser reports a pause the Deployment's user made, not our hold: spec.paused on a
// rollout we have not held (st.HeldAt nil), or the mode's own sign of it (modePaused: alongside
// mode's kubegray.io/paused). It stops the step's deadline clock and a timed hold, as upstream's
// pause stops the progress deadline.
func pausedByItsUser(d *appsv1.Deployment, st grayapi.Status, modePaused bool) bool {
	return (d.Spec.Paused && st.HeldAt == nil) || modePaused
}
