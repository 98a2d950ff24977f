package gray

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"

	"github.com/kubegray/kubectl-gray/internal/testutil"
	"github.com/kubegray/kubectl-gray/pkg/gates"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// TestDecideSync pins one sync's decision, facts to decision, for web at 20% of 10 (target 2,
// maxSurge 3, maxUnavailable 2): revision 2 held at 2 over stable revision 1's 8, settled two
// minutes ago, with a pods gate that needs 3 passes and a hold-for of a minute. The course ends
// the sync or goes on; the gates and the move are decided only when it goes on, on the rollout
// as the course leaves it. Sizes are worked by hand from the rules of pkg/rollout.
func TestDecideSync(t *testing.T) {
	pods, err := gates.Parse("pods", "test", "provider: pods\nsuccess: canary.restartsPerPod <= stable.restartsPerPod\ninterval: 2s\ncount: 3\n")
	if err != nil {
		t.Fatal(err)
	}
	held := heldAt20()
	aborted := grayapi.Status{Revision: 2, StableRevision: 1, Step: 0, Percent: 20, Phase: grayapi.PhaseAborted,
		Failure: &grayapi.Failure{Reason: grayapi.ReasonAborted, Message: "aborted by hand"}}
	stable := planRS(1, 8, 8, 10)
	facts := func(st grayapi.Status, request string, edit func(*syncFacts)) syncFacts {
		d := testutil.GrayWeb(10, "20")
		d.Spec.Paused = st.HeldAt != nil
		f := syncFacts{Status: st, Prev: st, HasPrev: true, Points: []int32{20}, Policy: grayapi.Policy{HoldFor: time.Minute},
			Deployment: d, NewRS: planRS(2, 2, 2, 10), OldRSs: []*appsv1.ReplicaSet{stable}, HeldByUs: st.HeldAt != nil,
			PausedByUs: d.Spec.Paused, Gates: GateFacts{Gates: []*gates.Definition{pods}}, Now: testNow}
		if request != "" {
			d.Annotations[grayapi.ResumeAnnotation] = request
			req, err := grayapi.ParseResume(request)
			if err != nil {
				t.Fatal(err)
			}
			f.Request = req
		}
		if edit != nil {
			edit(&f)
		}
		return f
	}
	type move struct {
		Status     grayapi.Status
		Hold       HoldChange
		Paused     bool
		Kind       SizeKind
		NewSize    int32
		OldSizes   []int32
		PauseAfter bool
	}
	tests := []struct {
		name    string
		f       syncFacts
		course  Course
		undoTo  string
		pending []string
		move    move
	}{{
		name:    "hold-for run out, the pods gate not passed yet: on to the move, the hold kept for the gate",
		f:       facts(held, "", nil),
		course:  CourseMove,
		pending: []string{"pods 0/3"},
		move:    move{Status: held, Paused: true, Kind: SizesRolled, NewSize: 2, OldSizes: []int32{8}},
	}, {
		name:   "2:undo: the stable ReplicaSet's template goes back, nothing else is decided",
		f:      facts(held, "2:undo", nil),
		course: CourseUndo,
		undoTo: stable.Name,
	}, {
		name:   "2:abort: the aborted sync, no gate judged, no move",
		f:      facts(held, "2:abort", nil),
		course: CourseAbort,
	}, {
		name: "2:retry of an aborted canary at 0: step 0 again, a step to 2 and our hold after it",
		f: facts(aborted, "2:retry", func(f *syncFacts) {
			f.NewRS = planRS(2, 0, 0, 10)
			f.NewRS.Labels = map[string]string{grayapi.AbortedLabel: "2"}
			f.OldRSs = []*appsv1.ReplicaSet{planRS(1, 10, 10, 10)}
		}),
		course:  CourseRetry,
		pending: []string{"pods 0/3"},
		move: move{Status: grayapi.Status{Revision: 2, StableRevision: 1, Step: 0, Percent: 20, Target: 2, Phase: grayapi.PhaseProgressing},
			Kind: SizesRolled, NewSize: 2, OldSizes: []int32{10}, PauseAfter: true},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dec := decideSync(context.Background(), tt.f)
			m := dec.Move
			got := move{Status: m.Status, Hold: m.Hold, Paused: m.Paused, Kind: m.Sizes.Kind, NewSize: m.Sizes.NewSize,
				OldSizes: m.Sizes.OldSizes, PauseAfter: m.PauseAfter}
			undoTo := ""
			if dec.Course.UndoTo != nil {
				undoTo = dec.Course.UndoTo.Name
			}
			if dec.Course.Course != tt.course || undoTo != tt.undoTo || !slices.Equal(dec.Gates.Pending, tt.pending) {
				t.Errorf("course %d (undo to %q), gates pending %q; want course %d (undo to %q), pending %q", dec.Course.Course, undoTo,
					dec.Gates.Pending, tt.course, tt.undoTo, tt.pending)
			}
			if !apiequality.Semantic.DeepEqual(got, tt.move) {
				t.Errorf("move\n%+v\nwant\n%+v", got, tt.move)
			}
		})
	}
}

// TestDecideSyncSettles decides random syncs (TestDecideMoveSettles's rollouts, a fifth of them
// aborted at step 0 with their canary at 0, and requests of every kind: next, full, undo, abort,
// retry, another revision's, unreadable) and decides again on the state each decision produced.
// A course that ends the sync (undo, abort, the aborted sync) decides no gate and no move; a
// course that goes on never grows the canary past its target, serves at most one resume or
// retry, and leaves nothing to do by the fourth decision. Every course must be reached.
func TestDecideSyncSettles(t *testing.T) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(20261205, 33))
	courses := map[Course]int{}
	for i := range 5000 {
		next := randomSyncFacts(r)
		served, quiet := 0, false
		for decision := range 4 {
			dec := decideSync(ctx, next)
			if decision == 0 {
				courses[dec.Course.Course]++
			}
			m := dec.Move
			if dec.Course.Course != CourseMove && dec.Course.Course != CourseRetry {
				if !apiequality.Semantic.DeepEqual(dec.Move, Move{}) || !apiequality.Semantic.DeepEqual(dec.Gates, GateDecision{}) {
					t.Fatalf("case %d: course %d ends the sync but decided a move %+v or gates %+v", i, dec.Course.Course, dec.Move, dec.Gates)
				}
				quiet = true
				break
			}
			if next.NewRS != nil && m.Sizes.resizes() && m.Sizes.NewSize > *next.NewRS.Spec.Replicas && m.Sizes.NewSize > m.Status.Target {
				t.Fatalf("case %d, decision %d: the canary grows %d → %d, past its target %d", i, decision,
					*next.NewRS.Spec.Replicas, m.Sizes.NewSize, m.Status.Target)
			}
			if m.Resume.Resumed != "" || dec.Course.Course == CourseRetry {
				served++
			}
			requestGoes := dec.Course.Consume || dec.Course.Ignored != ""
			if !requestGoes && m.Resume.Resumed == "" && !m.Resume.Consume && m.Resume.Ignored == "" && m.Hold == HoldUnchanged && !m.PauseAfter {
				quiet = true
				break
			}
			next = afterSync(next, dec)
		}
		if !quiet || served > 1 {
			t.Fatalf("case %d: %d resumes or retries served, quiet by the fourth decision %t", i, served, quiet)
		}
	}
	t.Logf("first courses: %v", courses)
	for _, c := range []Course{CourseMove, CourseUndo, CourseAbort, CourseAborted, CourseRetry} {
		if courses[c] < 20 {
			t.Errorf("only %d of 5000 random syncs took course %d: %v", courses[c], c, courses)
		}
	}
}

// randomSyncFacts is randomMoveFacts as a sync's facts, with a request of any kind, a fifth of
// them aborted at step 0.
func randomSyncFacts(r *rand.Rand) syncFacts {
	m := randomMoveFacts(r)
	f := syncFacts{Status: m.Status, Prev: m.Prev, HasPrev: m.HasPrev, Points: m.Points, Policy: m.Policy, Deployment: m.Deployment,
		NewRS: m.NewRS, OldRSs: m.OldRSs, HeldByUs: m.HeldByUs, PausedByUs: m.PausedByUs, Scaling: m.Scaling, ModePaused: m.ModePaused, Now: m.Now}
	if r.IntN(5) == 0 {
		replicas := *f.Deployment.Spec.Replicas
		f.Status = Aborted(grayapi.Status{Revision: 2, StableRevision: 1, Step: 0}, "web-2")
		f.Prev = f.Status
		f.Deployment.Spec.Paused, f.HeldByUs, f.PausedByUs = false, false, false
		f.NewRS = planRS(2, 0, 0, replicas)
		f.NewRS.Labels = map[string]string{grayapi.AbortedLabel: "2"}
		f.OldRSs = []*appsv1.ReplicaSet{planRS(1, replicas, replicas, replicas)}
	}
	delete(f.Deployment.Annotations, grayapi.ResumeAnnotation)
	if request := []string{"", "", "2:next", "2:full", "2:undo", "2:abort", "2:retry", "3:next", "two"}[r.IntN(9)]; request != "" {
		f.Deployment.Annotations[grayapi.ResumeAnnotation] = request
		f.Request, _ = grayapi.ParseResume(request)
	}
	return f
}

// afterSync is f after the sync that decided dec went on to its move: a request the course or the
// move consumed or dropped gone, a retried canary's abort record gone, and afterMove's writes.
func afterSync(f syncFacts, dec SyncDecision) syncFacts {
	m := afterMove(f.forMove(f.Status, GateDecision{}), dec.Move)
	next := f
	next.Status, next.Prev, next.Deployment, next.NewRS, next.OldRSs = m.Status, m.Prev, m.Deployment, m.NewRS, m.OldRSs
	next.HeldByUs, next.PausedByUs, next.Scaling = m.HeldByUs, m.PausedByUs, m.Scaling
	if dec.Course.Consume || dec.Course.Ignored != "" || dec.Move.Resume.Consume || dec.Move.Resume.Ignored != "" {
		delete(next.Deployment.Annotations, grayapi.ResumeAnnotation)
		next.Request = grayapi.Resume{}
	}
	if dec.Course.Course == CourseRetry && next.NewRS != nil {
		next.NewRS = next.NewRS.DeepCopy()
		delete(next.NewRS.Labels, grayapi.AbortedLabel)
	}
	return next
}
