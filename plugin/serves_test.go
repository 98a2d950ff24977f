package plugin

import (
	"cmp"
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"

	"github.com/kubegray/kubectl-gray/internal/testutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// servedCase is a status gray-controller wrote for generation 4 of "web" (revision 2, hold
// points 10,50), and what a verb does with it.
type servedCase struct {
	name string
	st   *grayapi.Status
	// generation is the Deployment's, 4 when unset; a newer one is a scale when template is
	// the status's revision, and a new template otherwise.
	generation int64
	// template is the revision of the ReplicaSet running the Deployment's template (0: none).
	template int64
	// want is the kubegray.io/resume written, with message the verb's answer; wantErr the
	// whole refusal, after which nothing is written.
	want, message, wantErr string
}

// servedStatus is a status of revision 2 (stable 1) at the first hold point, 10%, in phase,
// listing serves.
func servedStatus(phase grayapi.Phase, serves ...grayapi.Request) *grayapi.Status {
	st := &grayapi.Status{Serves: grayapi.Serves(serves), Mode: grayapi.ModeInstead, Revision: 2, StableRevision: 1,
		Percent: 10, Target: 1, Phase: phase, ObservedGeneration: 4}
	if st.Serves == nil {
		st.Serves = grayapi.Serves{}
	}
	if phase == grayapi.PhaseHeld {
		st.HeldAt, st.SettledAt = heldAt(time.Minute), heldAt(time.Minute)
	}
	return st
}

// testServed sends each case's request through sendRequest, the write the verbs and the
// dashboard's buttons share, and checks what was written or refused.
func testServed(t *testing.T, decide decideRequest, tests []servedCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gen := cmp.Or(tt.generation, 4)
			d := deployment("web", testutil.WithRevision(2), testutil.WithGeneration(gen, gen), withGray(t, "10,50", tt.st))
			objs := []runtime.Object{d}
			if tt.template > 0 {
				objs = append(objs, replicaSet(d, strconv.FormatInt(tt.template, 10), "7c9d5f8b6", "nginx:1.26", 1, 1, time.Minute))
			}
			cs := fake.NewClientset(objs...)
			message, _, err := sendRequest(context.Background(), cs, ns, "web", cmdutil.DryRunNone, decide)
			written := getDeployment(t, cs, "web").Annotations[grayapi.ResumeAnnotation]
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("err = %v\nwant %s", err, tt.wantErr)
				}
				if len(patches(cs)) != 0 || written != "" {
					t.Fatalf("refused, yet %q was written", written)
				}
				return
			}
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			if written != tt.want || message != tt.message {
				t.Fatalf("wrote %q, answered %q; want %q, %q", written, message, tt.want, tt.message)
			}
		})
	}
}

// A resume is written when the status serves it and refused when it does not, whatever the
// phase; the old rule's explanation is the message where it fits.
func TestServedResume(t *testing.T) {
	// The hold point was reached and recorded, then a canary pod failed: the old rule (neither
	// Held nor heldAt) refused a resume that gray-controller serves.
	degradedAtHold := servedStatus(grayapi.PhaseDegraded, grayapi.RequestNext, grayapi.RequestFull, grayapi.RequestAbort, grayapi.RequestUndo)
	degradedAtHold.SettledAt = heldAt(time.Minute)
	stableGone := servedStatus(grayapi.PhaseDegraded, grayapi.RequestFull, grayapi.RequestUndo)
	stableGone.Failure = &grayapi.Failure{Reason: grayapi.ReasonStableReplicaSetGone, Message: "no replica set of revision 1"}
	heldServes := servedStatus(grayapi.PhaseHeld, grayapi.RequestNext, grayapi.RequestFull, grayapi.RequestAbort, grayapi.RequestUndo)
	next, full := resumeDecision(false), resumeDecision(true)
	t.Run("next", func(t *testing.T) {
		testServed(t, next, []servedCase{
			{name: "held and served", st: heldServes,
				want: "2:next", message: "gray resumed to 50% (revision 2)"},
			{name: "degraded at its hold, served", st: degradedAtHold,
				want: "2:next", message: "gray resumed to 50% (revision 2)"},
			{name: "held, scaled since, served", st: heldServes, generation: 5, template: 2,
				want: "2:next", message: "gray resumed to 50% (revision 2)"},
			{name: "held but not served", st: servedStatus(grayapi.PhaseHeld, grayapi.RequestAbort, grayapi.RequestUndo),
				wantErr: `deployment default/web: gray-controller does not serve "next" now (it serves: abort, undo); see 'kubectl gray status web'`},
			{name: "held, serving nothing", st: servedStatus(grayapi.PhaseHeld),
				wantErr: `deployment default/web: gray-controller does not serve "next" now (it serves nothing); see 'kubectl gray status web'`},
			{name: "progressing, not served: the state says why", st: servedStatus(grayapi.PhaseProgressing, grayapi.RequestAbort, grayapi.RequestUndo),
				wantErr: `deployment default/web is not held (phase Progressing); only a rollout that has reached its hold point can be resumed, wait for the hold with 'kubectl gray status web --until held'`},
			{name: "served for a template since replaced", st: heldServes, generation: 5, template: 3,
				wantErr: `deployment default/web has a new template since gray-controller reported the hold of revision 2; its rollout holds at the first point first, wait for it with 'kubectl gray status web --until held'`},
		})
	})
	t.Run("full", func(t *testing.T) {
		testServed(t, full, []servedCase{
			{name: "held and served", st: heldServes,
				want: "2:full", message: "gray resumed to 100% (revision 2)"},
			{name: "stable ReplicaSet gone, served", st: stableGone,
				want: "2:full", message: "gray resumed to 100% (revision 2)"},
			{name: "held, next served but not full", st: servedStatus(grayapi.PhaseHeld, grayapi.RequestNext, grayapi.RequestAbort),
				wantErr: `deployment default/web: gray-controller does not serve "full" now (it serves: next, abort); see 'kubectl gray status web'`},
			{name: "aborted, not served: the state says why", st: servedStatus(grayapi.PhaseAborted, grayapi.RequestUndo, grayapi.RequestRetry),
				wantErr: `deployment default/web is Aborted (revision 2), so there is no hold to resume; 'kubectl gray retry web', or a new template, starts again; 'kubectl gray undo web' writes the stable template back`},
		})
	})
}

// An abort is written when the status serves it and refused when it does not.
func TestServedAbort(t *testing.T) {
	stableGone := servedStatus(grayapi.PhaseDegraded, grayapi.RequestFull, grayapi.RequestUndo)
	stableGone.Failure = &grayapi.Failure{Reason: grayapi.ReasonStableReplicaSetGone, Message: "no replica set of revision 1"}
	// A rollback on its way to the stable revision, which the old rule never let anyone abort.
	rollingBack := servedStatus(grayapi.PhaseRolledBack, grayapi.RequestAbort)
	testServed(t, decideAbort, []servedCase{
		{name: "held and served", st: servedStatus(grayapi.PhaseHeld, grayapi.RequestNext, grayapi.RequestAbort),
			want: "2:abort", message: "gray abort requested (revision 2 back to stable revision 1, template kept)"},
		{name: "rolled back, served", st: rollingBack,
			want: "2:abort", message: "gray abort requested (revision 2 back to stable revision 1, template kept)"},
		{name: "held but not served", st: servedStatus(grayapi.PhaseHeld, grayapi.RequestNext, grayapi.RequestFull, grayapi.RequestUndo),
			wantErr: `deployment default/web: gray-controller does not serve "abort" now (it serves: next, full, undo); see 'kubectl gray status web'`},
		{name: "progressing but not served", st: servedStatus(grayapi.PhaseProgressing, grayapi.RequestUndo),
			wantErr: `deployment default/web: gray-controller does not serve "abort" now (it serves: undo); see 'kubectl gray status web'`},
		{name: "stable ReplicaSet gone, not served: the state says why", st: stableGone,
			wantErr: `deployment default/web cannot be aborted: the replica set of its stable revision 1 is gone, so the canary is all there is; finish the rollout with 'kubectl gray resume web --full', or roll back to another revision with 'kubectl gray undo web --to-revision N'`},
		{name: "served for a template since replaced", st: servedStatus(grayapi.PhaseHeld, grayapi.RequestAbort), generation: 5,
			wantErr: `deployment default/web has a new template since gray-controller reported on revision 2 (phase Held); wait until it reports on the new rollout ('kubectl gray status web'), then abort it`},
	})
}

// A retry is written when the status serves it and refused when it does not.
func TestServedRetry(t *testing.T) {
	testServed(t, decideRetry, []servedCase{
		{name: "aborted and served", st: servedStatus(grayapi.PhaseAborted, grayapi.RequestUndo, grayapi.RequestRetry),
			want: "2:retry", message: "gray retry requested (revision 2 starts again at 10%)"},
		{name: "degraded, served", st: servedStatus(grayapi.PhaseDegraded, grayapi.RequestAbort, grayapi.RequestRetry),
			want: "2:retry", message: "gray retry requested (revision 2 starts again at 10%)"},
		{name: "aborted but not served", st: servedStatus(grayapi.PhaseAborted, grayapi.RequestUndo),
			wantErr: `deployment default/web: gray-controller does not serve "retry" now (it serves: undo); see 'kubectl gray status web'`},
		{name: "held, not served: the state says why", st: servedStatus(grayapi.PhaseHeld, grayapi.RequestNext),
			wantErr: `deployment default/web is not Aborted (phase Held, revision 2); only an aborted rollout can be retried, see 'kubectl gray status web'`},
		{name: "served for a template since replaced", st: servedStatus(grayapi.PhaseAborted, grayapi.RequestRetry), generation: 5, template: 3,
			wantErr: `deployment default/web has a new template since gray-controller reported on revision 2 (phase Aborted); its rollout starts by itself, follow it with 'kubectl gray status web'`},
	})
}

// The dashboard offers a request's button exactly when the status serves it: resume at a hold
// that turned Degraded, and no abort at a hold that does not serve one.
func TestOfferedActionsFollowServes(t *testing.T) {
	degradedAtHold := servedStatus(grayapi.PhaseDegraded, grayapi.RequestNext, grayapi.RequestUndo)
	degradedAtHold.SettledAt = heldAt(time.Minute)
	tests := []struct {
		name string
		st   *grayapi.Status
		want []string
	}{
		{name: "held, serving all", st: servedStatus(grayapi.PhaseHeld, grayapi.RequestNext, grayapi.RequestFull, grayapi.RequestAbort, grayapi.RequestUndo),
			want: []string{actionResume, actionResumeFull, actionAbort}},
		{name: "held, serving no abort", st: servedStatus(grayapi.PhaseHeld, grayapi.RequestNext, grayapi.RequestFull),
			want: []string{actionResume, actionResumeFull}},
		{name: "degraded at its hold", st: degradedAtHold, want: []string{actionResume}},
		{name: "aborted, serving no retry", st: servedStatus(grayapi.PhaseAborted, grayapi.RequestUndo), want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := deployment("web", testutil.WithRevision(2), testutil.WithGeneration(4, 4), withGray(t, "10,50", tt.st))
			// Revision 2 runs the template and no other revision is left, so undo offers nothing.
			rss := []*appsv1.ReplicaSet{replicaSet(d, "2", "7c9d5f8b6", "nginx:1.26", 1, 1, time.Minute)}
			if got := actionNames(offeredActions(d, rss)); !slices.Equal(got, tt.want) {
				t.Errorf("offered %v, want %v", got, tt.want)
			}
		})
	}
}
