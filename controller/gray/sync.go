package gray

import (
	"context"
	"time"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// syncFacts is what one gray sync decides from, all read before it writes its course or its
// move: the rollout in flight as identified, the status read, the request and the policy, the
// objects (through the mode's view), the gates' evidence and the clock.
type syncFacts struct {
	// Status is the rollout in flight (identify); Prev the status read, HasPrev whether it names
	// a rollout this sync trusts.
	Status, Prev grayapi.Status
	HasPrev      bool
	// Request is kubegray.io/resume parsed (zero when absent or unreadable: the move drops an
	// unreadable one with the reason, from the Deployment's annotation).
	Request    grayapi.Resume
	Points     []int32
	Policy     grayapi.Policy
	Deployment *appsv1.Deployment
	NewRS      *appsv1.ReplicaSet
	OldRSs     []*appsv1.ReplicaSet
	// HeldByUs, PausedByUs, NewRollout, Scaling and ModePaused are moveFacts'.
	HeldByUs, PausedByUs, NewRollout, Scaling, ModePaused bool
	// Gates is the hold's gates and their evidence: GateFacts but for the status and the clock,
	// which decideSync fills in.
	Gates GateFacts
	// LeaderInStable: this process is a pod of one of the Deployment's old ReplicaSets (its own
	// Deployment, in instead mode: handover.go).
	LeaderInStable bool
	Now            time.Time
}

// SyncDecision is one gray sync's decision, from its facts to the writes before its report.
type SyncDecision struct {
	Course CourseDecision
	// Gates and Move are decided when the course goes on to the move (CourseMove, and
	// CourseRetry from the first hold point again); zero when the course ends the sync.
	Gates GateDecision
	Move  Move
	// HandOver, when not empty, says why this leader hands the lease to the canary once the
	// sync's writes have landed (handover.go).
	HandOver string
}

// decideSync decides a gray sync: its course (decideCourse), then, when the course goes on, the
// hold's gates (decideGates) and the move they feed (decideMove), both judged on the rollout as
// the course leaves it, and whether this leader then hands its lease to the canary
// (decideHandOver). Revision 3 aborted at 20% and asked "3:retry" is retried: its gates and its
// move are those of step 0 with no hold, no clocks and no failure (Retried).
func decideSync(ctx context.Context, f syncFacts) SyncDecision {
	dec := SyncDecision{Course: decideCourse(courseFacts{Status: f.Status, Prev: f.Prev, HasPrev: f.HasPrev, Request: f.Request,
		Policy: f.Policy, Deployment: f.Deployment, NewRS: f.NewRS, OldRSs: f.OldRSs, Now: f.Now})}
	st := f.Status
	switch dec.Course.Course {
	case CourseMove:
	case CourseRetry:
		st = Retried(st)
	default:
		return dec
	}
	g := f.Gates
	g.Status, g.Prev, g.HasPrev, g.Now = st, f.Prev, f.HasPrev, f.Now
	dec.Gates = decideGates(g)
	dec.Move = decideMove(ctx, f.forMove(st, dec.Gates))
	dec.HandOver = decideHandOver(handOverFacts{LeaderInStable: f.LeaderInStable, Gates: dec.Gates, Move: dec.Move, Canary: f.Gates.Canary})
	return dec
}

// forMove is f as decideMove's facts, for the rollout st and the gates as decided.
func (f syncFacts) forMove(st grayapi.Status, gates GateDecision) moveFacts {
	return moveFacts{Status: st, Prev: f.Prev, HasPrev: f.HasPrev, Points: f.Points, Policy: f.Policy, Deployment: f.Deployment,
		NewRS: f.NewRS, OldRSs: f.OldRSs, HeldByUs: f.HeldByUs, PausedByUs: f.PausedByUs, NewRollout: f.NewRollout,
		Scaling: f.Scaling, ModePaused: f.ModePaused, Gates: gates, Now: f.Now}
}
