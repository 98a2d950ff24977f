package gray

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/kubegray/kubectl-gray/internal/testutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// TestDecideCourse pins which way a sync goes when requests and an abort meet, and that an abort's
// sync is decided with it. Revision 3 is held at 20% over stable revision 1's ReplicaSet;
// decideUndo's, decideAbort's and decideAborted's own tables pin each alone.
func TestDecideCourse(t *testing.T) {
	held := grayapi.Status{Revision: 3, StableRevision: 1, Step: 0, Percent: 20, Target: 2, Phase: grayapi.PhaseHeld}
	failure := &grayapi.Failure{Reason: grayapi.ReasonProgressDeadlineExceeded, Message: "0 of 2 available"}
	degraded := held
	degraded.Phase, degraded.Failure = grayapi.PhaseDegraded, failure
	aborted := held
	aborted.Phase, aborted.Failure = grayapi.PhaseAborted, failure
	canary, stable := planRS(3, 2, 2, 10), planRS(1, 8, 8, 10)
	recorded := planRS(3, 0, 0, 10)
	recorded.Labels = map[string]string{grayapi.AbortedLabel: "3"}
	onFailureAbort := grayapi.Policy{OnFailure: grayapi.OnFailureAbort}
	old := []*appsv1.ReplicaSet{stable}
	tests := []struct {
		name string
		// resume is kubegray.io/resume on the Deployment, when the row needs it there.
		resume string
		f      courseFacts
		want   CourseDecision
	}{
		{name: "nothing asked, nothing failed: on to the move",
			f: courseFacts{Status: held, Prev: held, HasPrev: true, NewRS: canary, OldRSs: old}},
		{name: "3:undo puts stable revision 1 back",
			f:    courseFacts{Status: held, Prev: held, HasPrev: true, Request: grayapi.Resume{Revision: 3, Undo: true}, NewRS: canary, OldRSs: old},
			want: CourseDecision{Course: CourseUndo, UndoTo: stable}},
		{name: "3:undo of an aborted rollout is still an undo",
			f: courseFacts{Status: aborted, Prev: aborted, HasPrev: true, Request: grayapi.Resume{Revision: 3, Undo: true}, NewRS: recorded,
				OldRSs: old},
			want: CourseDecision{Course: CourseUndo, UndoTo: stable}},
		{name: "2:undo is ignored, and on-failure abort still acts on the Degraded status read",
			f: courseFacts{Status: degraded, Prev: degraded, HasPrev: true, Request: grayapi.Resume{Revision: 2, Undo: true}, Policy: onFailureAbort,
				NewRS: canary, OldRSs: old},
			want: CourseDecision{Course: CourseAbort, Failure: failure, Ignored: "revision 2 is not the rollout in flight (revision 3)"}},
		{name: "3:abort of a held canary",
			f:    courseFacts{Status: held, Prev: held, HasPrev: true, Request: grayapi.Resume{Revision: 3, Abort: true}, NewRS: canary, OldRSs: old},
			want: CourseDecision{Course: CourseAbort, Consume: true, Failure: &grayapi.Failure{Reason: grayapi.ReasonAborted, Message: "revision 3 was aborted at 20% on request"}}},
		{name: "the abort label of revision 3 keeps the rollout aborted, whatever the status says",
			f:    courseFacts{Status: held, NewRS: recorded, OldRSs: old},
			want: CourseDecision{Course: CourseAborted}},
		{name: "an Aborted status read of revision 3, the label not yet written",
			f:    courseFacts{Status: aborted, Prev: aborted, HasPrev: true, NewRS: canary, OldRSs: old},
			want: CourseDecision{Course: CourseAborted}},
		{name: "an Aborted status of revision 2 names another rollout",
			f: courseFacts{Status: aborted, Prev: grayapi.Status{Revision: 2, StableRevision: 1, Phase: grayapi.PhaseAborted}, HasPrev: true,
				NewRS: canary, OldRSs: old}},
		{name: "3:abort of an aborted rollout is dropped, saying so, and it stays aborted",
			f:    courseFacts{Status: aborted, Prev: aborted, HasPrev: true, Request: grayapi.Resume{Revision: 3, Abort: true}, NewRS: recorded, OldRSs: old},
			want: CourseDecision{Course: CourseAborted, Consume: true, Ignored: "revision 3 is already aborted; kubectl gray retry, or a new template, starts it again"}},
		{name: "3:next of an aborted rollout is dropped, saying so: no retry may find it waiting at the first hold",
			resume: "3:next", f: courseFacts{Status: aborted, Prev: aborted, HasPrev: true, Request: grayapi.Resume{Revision: 3}, NewRS: recorded, OldRSs: old},
			want: CourseDecision{Course: CourseAborted, Consume: true, Ignored: "revision 3 is aborted, so there is no hold to resume; kubectl gray retry, or a new template, starts it again"}},
		{name: "a value that does not read, on an aborted rollout, is dropped with the reason",
			resume: "next", f: courseFacts{Status: aborted, Prev: aborted, HasPrev: true, NewRS: recorded, OldRSs: old},
			want: CourseDecision{Course: CourseAborted, Consume: true,
				Ignored: `invalid kubegray.io/resume "next": must be "<revision>:next", "<revision>:full", "<revision>:undo", "<revision>:abort" or "<revision>:retry" with a revision of 1 or more, e.g. "3:next"; the ":" is missing`}},
		{name: "3:retry of an aborted rollout moves again",
			f:    courseFacts{Status: aborted, Prev: aborted, HasPrev: true, Request: grayapi.Resume{Revision: 3, Retry: true}, NewRS: recorded, OldRSs: old},
			want: CourseDecision{Course: CourseRetry, Consume: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.f.Deployment, tt.f.Now = testutil.GrayWeb(10, "20"), testNow
			if tt.resume != "" {
				tt.f.Deployment.Annotations[grayapi.ResumeAnnotation] = tt.resume
			}
			got := decideCourse(tt.f)
			// The aborted sync is decided with the course that leads to it, and only then.
			aborting := got.Course == CourseAbort || got.Course == CourseAborted
			if aborting != (got.Aborted.Status.Phase == grayapi.PhaseAborted) ||
				(aborting && (got.Aborted.Status.Failure == nil || got.Aborted.Status.Revision != 3)) {
				t.Fatalf("decideCourse = %+v with the aborted sync %+v", got.Course, got.Aborted)
			}
			if got.Course != tt.want.Course || got.UndoTo != tt.want.UndoTo || got.Ignored != tt.want.Ignored || got.Consume != tt.want.Consume ||
				(got.Failure == nil) != (tt.want.Failure == nil) || (got.Failure != nil && *got.Failure != *tt.want.Failure) {
				t.Fatalf("decideCourse = %+v (failure %+v), want %+v (failure %+v)", got, got.Failure, tt.want, tt.want.Failure)
			}
		})
	}
}
