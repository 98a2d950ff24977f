package gray

import (
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// resumeFacts is what decideResume decides from.
type resumeFacts struct {
	Deployment *appsv1.Deployment
	// st is the rollout in flight, points its hold points.
	Status grayapi.Status
	Points []int32
	// heldByUs: our hold, heldAt recorded for this revision (rolloutIdentity.heldByUs).
	HeldByUs bool
	// holdFor is kubegray.io/hold-for, and timedHoldDue whether it ran out (timedHoldDue).
	// HoldFor is how long the hold lasts by itself (HeldFor), HoldForKey the annotation that says
	// so, for the GrayResumed event.
	HoldFor      time.Duration
	HoldForKey   string
	TimedHoldDue bool
	// HoldInPlace: the ReplicaSets stand at the hold; stableGone: there is no going back.
	HoldInPlace, StableGone bool
	// GatesPending names the gates that have not passed (GateDecision.Pending): a person's resume
	// still moves on, and its event says which.
	GatesPending []string
}

// ResumeDecision is what decideResume decided.
type ResumeDecision struct {
	// step is the step the rollout moves on to; resumed the GrayResumed event's message, empty
	// when the rollout does not move.
	Step    int32
	Resumed string
	// consume: kubegray.io/resume goes with the next write; ignored is the GrayResumeIgnored
	// Warning's message when the request is dropped unserved.
	Consume bool
	Ignored string
	// waits: the request stays until the hold stands again.
	Waits bool
}

// decideResume decides whether the rollout leaves its hold. A plain unpause of our hold and a
// hold-for that ran out move it one step; a kubegray.io/resume request for the revision in
// flight moves it one step (next) or to the end (full) once the hold stands, is kept while a
// scaling event is absorbed, and is dropped with the reason when it names another revision, a
// rollout that is not held, or is unreadable. Undo, abort and retry requests are decideCourse's.
func decideResume(f resumeFacts) ResumeDecision {
	st := f.Status
	value, requested := f.Deployment.Annotations[grayapi.ResumeAnnotation]
	if !requested {
		switch {
		case !f.Deployment.Spec.Paused && f.HeldByUs:
			return ResumeDecision{Step: st.Step + 1, Resumed: fmt.Sprintf("Revision %d unpaused at %d%%: moving on to %s%s",
				st.Revision, st.Percent, nextShare(f.Points, st.Step+1), notPassed(f.GatesPending))}
		case f.HeldByUs && f.TimedHoldDue:
			return ResumeDecision{Step: st.Step + 1, Resumed: fmt.Sprintf("Revision %d held at %d%% for %s (%s): moving on to %s",
				st.Revision, st.Percent, f.HoldFor, f.HoldForKey, nextShare(f.Points, st.Step+1))}
		}
		return ResumeDecision{}
	}
	ignore := func(format string, args ...any) ResumeDecision {
		why := fmt.Sprintf(format, args...)
		return ResumeDecision{Consume: true, Ignored: fmt.Sprintf("Ignored %s=%s: %s", grayapi.ResumeAnnotation, grayapi.QuoteValue(value), why)}
	}
	req, err := grayapi.ParseResume(value)
	switch {
	case err != nil:
		// The parse error quotes the value already; quoting it twice would double the event.
		return ResumeDecision{Consume: true, Ignored: fmt.Sprintf("Ignored %s: %v", grayapi.ResumeAnnotation, err)}
	case req.Undo || req.Abort || req.Retry:
		// decideCourse's, which has served it or said why not.
		return ResumeDecision{Consume: true}
	case req.Revision != st.Revision:
		return ignore("revision %d is not the rollout in flight (revision %d)", req.Revision, st.Revision)
	case !f.HeldByUs:
		return ignore("revision %d is not held (phase %s)", req.Revision, st.Phase)
	case !f.HoldInPlace && !f.StableGone:
		// The hold point was reached, but a scaling event (or a restore after someone else
		// resized a ReplicaSet) is still being absorbed: the next step starts from the settled
		// share.
		return ResumeDecision{Waits: true}
	}
	step := st.Step + 1
	if req.Full {
		step = int32(len(f.Points))
	}
	return ResumeDecision{Step: step, Consume: true,
		Resumed: fmt.Sprintf("Revision %d resumed at %d%%: moving on to %s%s", st.Revision, st.Percent, nextShare(f.Points, step), notPassed(f.GatesPending))}
}

// notPassed is what a person's resume adds to its event when gates had not passed.
func notPassed(pending []string) string {
	if len(pending) == 0 {
		return ""
	}
	return " (by hand: gates not passed: " + strings.Join(pending, ", ") + ")"
}

// nextShare names where a rollout at step goes.
func nextShare(points []int32, step int32) string {
	if int(step) >= len(points) {
		return "all replicas"
	}
	return fmt.Sprintf("%d%%", points[step])
}
