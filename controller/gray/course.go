package gray

import (
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// Course is the way a sync goes once the rollout in flight is known: on to the move, or one of
// the ways a request or an abort ends it.
type Course int

const (
	// CourseMove: the rollout moves (decideMove): a resume, a hold kept or left, the sizes.
	CourseMove Course = iota
	// CourseUndo: the stable ReplicaSet's template goes back on the Deployment, and the sync
	// ends; the next one rolls back like after any undo.
	CourseUndo
	// CourseAbort: the abort is recorded on the canary's ReplicaSet, then the aborted sync.
	CourseAbort
	// CourseAborted: the aborted sync of a rollout aborted before (decideAborted).
	CourseAborted
	// CourseRetry: the abort record goes, and the rollout moves again from its first hold point.
	CourseRetry
)

// courseFacts is what decideCourse decides from.
type courseFacts struct {
	// Status is the rollout in flight (identify); Prev the status read, HasPrev whether it
	// names a rollout this sync trusts.
	Status, Prev grayapi.Status
	HasPrev      bool
	// Request is kubegray.io/resume parsed (zero when absent or unreadable).
	Request grayapi.Resume
	Policy  grayapi.Policy
	// Deployment and Now are what the aborted sync's sizes and conditions are decided from.
	Deployment *appsv1.Deployment
	NewRS      *appsv1.ReplicaSet
	OldRSs     []*appsv1.ReplicaSet
	Now        time.Time
}

// CourseDecision is what decideCourse decided.
type CourseDecision struct {
	Course Course
	// UndoTo is the ReplicaSet whose template an undo puts back.
	UndoTo *appsv1.ReplicaSet
	// Failure is what an abort records: the step's own, or ReasonAborted for a person's abort of
	// a rollout that had not failed.
	Failure *grayapi.Failure
	// Ignored is the GrayResumeIgnored Warning's reason for a request that cannot be served (the
	// request goes with the next write); Consume: a served request goes with the next write.
	Ignored string
	Consume bool
	// Aborted is the aborted sync (CourseAbort, once the abort is recorded, and CourseAborted),
	// decided with the course.
	Aborted AbortedSync
}

// decideCourse decides which way this sync goes, from the resume request and the abort record.
// An undo asked of the rollout in flight ends the sync with its write; an undo that cannot be
// served is ignored and the abort is judged as if it had not been asked.
//
//	"3:undo" on revision 3 held over stable 1's ReplicaSet  → CourseUndo to that ReplicaSet
//	"3:abort" on revision 3 held, or on-failure abort read   → CourseAbort (decideAbort's table)
//	revision 3's ReplicaSet labelled kubegray.io/aborted=3    → CourseAborted
//	"3:retry" on revision 3 aborted                          → CourseRetry
//	none of these                                            → CourseMove
func decideCourse(f courseFacts) CourseDecision {
	undo := decideUndo(undoFacts{Status: f.Status, Request: f.Request, NewRS: f.NewRS, OldRSs: f.OldRSs})
	if undo.To != nil {
		return CourseDecision{Course: CourseUndo, UndoTo: undo.To}
	}
	aborted := AbortRecorded(f.NewRS) || (f.Status.Phase == grayapi.PhaseAborted && f.HasPrev && f.Prev.Revision == f.Status.Revision)
	abort := decideAbort(abortFacts{Status: f.Status, Prev: f.Prev, HasPrev: f.HasPrev, Request: f.Request, Aborted: aborted,
		Policy: f.Policy, HasNewRS: f.NewRS != nil, StableRS: StableToGoBackTo(f.OldRSs, f.Status.StableRevision) != nil})
	// A request is one kind, so at most one of the two ignores it.
	ignored := undo.Ignored
	if ignored == "" {
		ignored = abort.Ignored
	}
	dec := CourseDecision{Ignored: ignored, Consume: abort.Consume, Failure: abort.Failure}
	switch {
	case abort.What == abortRetry:
		dec.Course = CourseRetry
	case abort.What == abortStart:
		dec.Course = CourseAbort
		st := f.Status
		st.Failure = abort.Failure
		dec.Aborted = decideAborted(f.aborted(st))
	case aborted:
		dec.Course = CourseAborted
		dec.Aborted = decideAborted(f.aborted(f.Status))
		if why := resumeOfAborted(f); why != "" {
			dec.Ignored, dec.Consume = why, true
		}
	}
	return dec
}

// resumeOfAborted is why a request the aborted sync cannot serve is dropped: a resume (next or
// full), or a value that does not read. The aborted sync decides no move, where a resume would
// otherwise be dropped, so without this it stayed on the Deployment with no word of why. Undo,
// abort and retry are the course's own.
func resumeOfAborted(f courseFacts) string {
	value, asked := f.Deployment.Annotations[grayapi.ResumeAnnotation]
	if !asked {
		return ""
	}
	req, err := grayapi.ParseResume(value)
	switch {
	case err != nil:
		return err.Error()
	case req.Undo || req.Abort || req.Retry:
		return ""
	}
	return fmt.Sprintf("revision %d is aborted, so there is no hold to resume; kubectl gray retry, or a new template, starts it again", f.Status.Revision)
}

// aborted is f as decideAborted's facts, for the aborted rollout st.
func (f courseFacts) aborted(st grayapi.Status) abortedFacts {
	return abortedFacts{Status: st, Prev: f.Prev, HasPrev: f.HasPrev, Deployment: f.Deployment, NewRS: f.NewRS, OldRSs: f.OldRSs, Now: f.Now}
}
