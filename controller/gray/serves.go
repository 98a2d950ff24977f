package gray

import (
	"context"
	"fmt"
	"maps"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// Unpause says what a plain unpause of the Deployment (spec.paused set to false) reaches.
type Unpause int

const (
	// UnpauseReachesHold: spec.paused is the Deployment's own (instead mode): an unpause ends the
	// user's pause, or leaves our hold as a resume to the next hold point does.
	UnpauseReachesHold Unpause = iota
	// UnpauseReachesUserPause: the Deployment is taken over (alongside modes) and stays paused
	// until its rollout ends: an unpause only ends the user's own pause (Facts.ModePaused), and
	// the takeover policy refuses it otherwise.
	UnpauseReachesUserPause
)

// Serves is what a sync would act on now, asked of the rollout f describes: each request is
// decided by Decide itself, on f with the request added, so the list is the controller's own
// answer and never a second copy of its rules. f is what the next sync would gather: the status
// just recorded (trusted), the Deployment and its ReplicaSets as this sync's writes left them.
//
//	revision 3 held at 20%, stable revision 1 left   → next, full, abort, undo
//	  (+ unpause in instead mode)
//	revision 3 aborted                               → undo, retry
//	revision 3 Progressing toward its hold           → abort, undo
//	revision 3 Invalid with a canary in flight       → abort
//	complete, or a first rollout with nothing behind → nothing
func Serves(ctx context.Context, f Facts, unpause Unpause) grayapi.Serves {
	now := Decide(ctx, f)
	rev := now.Identity.Status.Revision
	if now.Invalid != nil {
		rev = f.Prev.Revision
	}
	return grayapi.ServesOf(func(r grayapi.Request) bool {
		if r == grayapi.RequestUnpause {
			return servesUnpause(ctx, f, now, unpause)
		}
		if rev < 1 {
			return false
		}
		return acts(Decide(ctx, asking(f, requestFor(r, rev))), r)
	})
}

// requestFor is the kubegray.io/resume request r for revision rev.
func requestFor(r grayapi.Request, rev int64) grayapi.Resume {
	return grayapi.Resume{Revision: rev, Full: r == grayapi.RequestFull, Undo: r == grayapi.RequestUndo,
		Abort: r == grayapi.RequestAbort, Retry: r == grayapi.RequestRetry}
}

// asking is f with req written to kubegray.io/resume, on a copy of the Deployment's metadata.
func asking(f Facts, req grayapi.Resume) Facts {
	d := *f.Deployment
	d.Annotations = maps.Clone(d.Annotations)
	if d.Annotations == nil {
		d.Annotations = map[string]string{}
	}
	d.Annotations[grayapi.ResumeAnnotation] = grayapi.FormatResume(req)
	f.Deployment, f.Request = &d, req
	return f
}

// acts reports whether plan, decided with request r, carries r out: an undo puts the stable
// template back, an abort starts, a retry starts again, a resume moves on (or waits for a
// scaling event to settle and then moves on); an Invalid rollout serves only an abort.
func acts(plan Plan, r grayapi.Request) bool {
	if plan.Invalid != nil {
		abort := plan.Invalid.Abort
		return r == grayapi.RequestAbort && abort != nil && abort.Course == CourseAbort
	}
	course := plan.Sync.Course
	switch r {
	case grayapi.RequestUndo:
		return course.Course == CourseUndo
	case grayapi.RequestAbort:
		return course.Course == CourseAbort
	case grayapi.RequestRetry:
		return course.Course == CourseRetry
	}
	resume := plan.Sync.Move.Resume
	return course.Course == CourseMove && resume.Ignored == "" && (resume.Resumed != "" || resume.Waits)
}

// servesUnpause reports whether a plain unpause does anything: it ends the user's own pause, or,
// where it reaches our hold, moves the rollout on (decided by Decide on f unpaused).
func servesUnpause(ctx context.Context, f Facts, now Plan, unpause Unpause) bool {
	if unpause == UnpauseReachesUserPause {
		return f.ModePaused
	}
	if !f.Deployment.Spec.Paused {
		return false
	}
	if !now.PausedByUs {
		return true
	}
	d := *f.Deployment
	d.Spec.Paused = false
	f.Deployment = &d
	plan := Decide(ctx, f)
	return plan.Invalid == nil && plan.Sync.Course.Course == CourseMove && plan.Sync.Move.Resume.Resumed != ""
}

// ServesReleased is what a gray Deployment that no gray rollout holds serves (alongside mode:
// never taken over, or released when its rollout completed): every request names a rollout in
// flight, and there is none; a pause there is its user's own, which an unpause ends.
func ServesReleased(d *appsv1.Deployment) grayapi.Serves {
	return grayapi.ServesOf(func(r grayapi.Request) bool { return r == grayapi.RequestUnpause && d.Spec.Paused })
}

// ReleasedIgnores is the GrayResumeIgnored Warning for the kubegray.io/resume request on d, a
// Deployment that no gray rollout holds at revision rev, and "" when there is none: it serves no
// request (ServesReleased), and one left there would wait for a rollout it was not written for.
func ReleasedIgnores(d *appsv1.Deployment, rev int64) string {
	value, asked := d.Annotations[grayapi.ResumeAnnotation]
	if !asked {
		return ""
	}
	return fmt.Sprintf("Ignored %s=%s: no gray rollout is in flight (revision %d is rolled out by the built-in controller); a new template starts one",
		grayapi.ResumeAnnotation, grayapi.QuoteValue(value), rev)
}
