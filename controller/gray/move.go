package gray

// The rollout's move in one sync, between identifying it and reporting it: the target for the
// step and the replica count, a resume (decideResume), what becomes of our hold (decideHold), the
// sizes to write from the hold as it will stand (planSizes) and the hold those sizes reach.

import (
	"context"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegray/kubectl-gray/pkg/grayapi"
	"github.com/kubegray/kubectl-gray/pkg/rollout"
)

// moveFacts is what decideMove decides from.
type moveFacts struct {
	// Status is the rollout as identified (identify, then an abort retried); Prev is the status
	// read (whatever its trust), HasPrev whether it names a rollout and is trusted.
	Status, Prev grayapi.Status
	HasPrev      bool
	Points       []int32
	Policy       grayapi.Policy
	// Deployment, NewRS and OldRSs are as the sync read them (through the mode's view).
	Deployment *appsv1.Deployment
	NewRS      *appsv1.ReplicaSet
	OldRSs     []*appsv1.ReplicaSet
	// HeldByUs: the rollout in flight is held by us (Identity.HeldByUs); PausedByUs: spec.paused
	// is a hold's (one recorded, even by a status since distrusted, or one identify re-derived).
	HeldByUs, PausedByUs bool
	// NewRollout: the revision in flight changed in this sync (Identity.NewRollout).
	NewRollout bool
	// Scaling: spec.replicas changed (a scaling event, read once per sync).
	Scaling bool
	// ModePaused: the user paused the rollout in a way spec.paused does not show.
	ModePaused bool
	// Gates is the hold's gates as decideGates judged them: hold-for waits for them to pass.
	Gates GateDecision
	Now   time.Time
}

// Move is what decideMove decided.
type Move struct {
	// Status is the rollout retargeted, moved on and held as decided.
	Status grayapi.Status
	// Resume is what became of a resume (the request consumed, ignored or kept; the GrayResumed
	// event's message when the rollout moved on).
	Resume ResumeDecision
	// Hold is what becomes of our pause, and Paused is our hold as the hold write puts it (in
	// alongside mode the user's own pause stays on top of it).
	Hold   HoldChange
	Paused bool
	// Sizes are the ReplicaSet writes, planned from the Deployment as the hold leaves it.
	Sizes SizePlan
	// PauseAfter: the sizes bring the canary to the target of a hold point (or find it there)
	// while nothing pauses the rollout, so our hold is written right after them, in this sync.
	PauseAfter bool
}

// decideMove decides the rollout's move: web at 20% of 10 held at 2 with "2:next" and hold
// points 20,50 moves to step 1 (target 5), leaves the hold (the canary is below 5), plans one
// roll toward 5 and, that roll reaching 5, pauses after it. A move that creates the canary
// plans the roll after the create and the pause it reaches in the same decision (planCreate).
func decideMove(ctx context.Context, f moveFacts) Move {
	d := f.Deployment
	replicas, steps := *d.Spec.Replicas, len(f.Points)
	st := retarget(f.Status, replicas, f.Points)
	inPlace := HoldInPlace(f.NewRS, f.OldRSs, st.Target, replicas)
	m := Move{Resume: decideResume(resumeFacts{Deployment: d, Status: st, Points: f.Points, HeldByUs: f.HeldByUs,
		HoldFor: f.Policy.HeldFor(f.Prev), HoldForKey: f.Policy.HoldForKey(f.Prev.Step),
		TimedHoldDue: timedHoldDue(f, st, inPlace) && f.Gates.Passed(), HoldInPlace: inPlace, StableGone: StableGone(st, steps, f.NewRS, f.OldRSs),
		GatesPending: f.Gates.Pending})}
	resumed := m.Resume.Resumed != ""
	if resumed {
		st = Resumed(st, m.Resume.Step)
	}
	st = retarget(st, replicas, f.Points)

	m.Hold = decideHold(holdFacts{PausedByUs: f.PausedByUs, NewRollout: f.NewRollout, Resumed: resumed, Scaling: f.Scaling,
		NewRS: f.NewRS, Step: st.Step, Steps: steps, Target: st.Target})
	switch m.Hold {
	case HoldLeft:
		st = HoldGone(st)
	case HoldAgain:
		st = HoldTaken(st, metav1.NewTime(f.Now))
	}
	m.Paused = d.Spec.Paused && m.Hold != HoldLeft
	// The sizes see the Deployment paused by our hold as decided, or by its user's own pause,
	// which no hold change lifts.
	held := *d
	held.Spec.Paused = m.Paused || f.ModePaused
	m.Sizes = planSizes(ctx, SizeFacts{Deployment: &held, NewRS: f.NewRS, OldRSs: f.OldRSs, Target: st.Target,
		StableRevision: st.StableRevision, Held: m.Paused && st.HeldAt != nil, Scaling: f.Scaling,
		StableGone: StableGone(st, steps, f.NewRS, f.OldRSs)})
	m.Status = st
	m.PauseAfter = pauseAfter(m, f.NewRS, steps)
	return m
}

// retarget is st with percent and target for its step (capped at the last) and replicas.
func retarget(st grayapi.Status, replicas int32, points []int32) grayapi.Status {
	st.Step = min(st.Step, int32(len(points)))
	st.Percent, st.Target = rollout.GrayStepTarget(replicas, points, st.Step)
	return st
}

// timedHoldDue reports whether kubegray.io/hold-for has run out on a hold that was reported Held
// (settled) by a status the sync trusts and still stands: our hold (spec.paused with st.HeldAt; a
// pause without it is the user's), of the step reported, with the ReplicaSets in place. When it runs out is the status
// read's TimedResumeAt, the very question the report asked when it recorded that status.
func timedHoldDue(f moveFacts, st grayapi.Status, inPlace bool) bool {
	p := f.Prev
	// Only a status this controller recorded times a hold: one written by someone else, or copied
	// in, could say it settled long ago.
	if !f.HasPrev || !f.Deployment.Spec.Paused || st.HeldAt == nil || !sameStep(p, st) || int(st.Step) >= len(f.Points) || !inPlace {
		return false
	}
	at, timed := grayapi.TimedResumeAt(p, f.Policy.HoldForAt(p.Step), f.ModePaused)
	return timed && !f.Now.Before(at)
}
