package gray

import (
	appsv1 "k8s.io/api/apps/v1"
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

// HoldFacts is what DecideHold decides from.
type HoldFacts struct {
	// pausedByUs: spec.paused is our hold's; newRollout: of another rollout than this one.
	PausedByUs, NewRollout bool
	// resumed: the rollout moved on in this sync; scaling: spec.replicas changed.
	Resumed, Scaling bool
	NewRS            *appsv1.ReplicaSet
	Step             int32
	Steps            int
	Target           int32
}

// DecideHold decides whether our pause stays: it goes for a new rollout, after the last hold
// point, or when the target moved above the new ReplicaSet (resume, edited hold points) other
// than by a scaling event, which keeps the hold and its share; a resume that lands on a target
// the new ReplicaSet already has is a new hold right away.
func DecideHold(f HoldFacts) HoldChange {
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

// HoldReached reports whether a rollout that is not paused holds now: the new ReplicaSet
// reached the target of a hold point (or is found there).
func HoldReached(paused bool, newRS *appsv1.ReplicaSet, step int32, steps int, target int32) bool {
	return !paused && newRS != nil && int(step) < steps && *newRS.Spec.Replicas >= target
}
