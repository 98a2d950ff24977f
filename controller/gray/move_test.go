package gray

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegray/kubectl-gray/internal/testutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
	"github.com/kubegray/kubectl-gray/pkg/rollout"
)

// TestDecideMove pins the move of one sync, from the facts alone. web has 10 replicas, maxSurge
// 3 and maxUnavailable 2 (25%), hold points 20 and 50 (targets 2 and 5), and revision 2 is held
// at 2 over stable revision 1's 8, settled. Sizes are worked by hand: a step from 2 toward 5
// grows the canary by the surge, 13 − 10 = 3, to 5, and leaves the old ReplicaSet for the next
// step.
func TestDecideMove(t *testing.T) {
	heldAt := metav1.NewTime(testNow.Add(-3 * time.Minute))
	settledAt := metav1.NewTime(testNow.Add(-2 * time.Minute))
	held := grayapi.Status{Revision: 2, StableRevision: 1, Step: 0, Percent: 20, Target: 2, Phase: grayapi.PhaseHeld, HeldAt: &heldAt, SettledAt: &settledAt}
	web := func(replicas int32, annotations ...string) *appsv1.Deployment {
		d := testutil.GrayWeb(replicas, "20,50")
		d.Spec.Paused = true
		for i := 0; i+1 < len(annotations); i += 2 {
			d.Annotations[annotations[i]] = annotations[i+1]
		}
		return d
	}
	facts := func(d *appsv1.Deployment) moveFacts {
		return moveFacts{Status: held, Prev: held, HasPrev: true, Points: []int32{20, 50}, Deployment: d, NewRS: planRS(2, 2, 2, 10),
			OldRSs: []*appsv1.ReplicaSet{planRS(1, 8, 8, 10)}, HeldByUs: true, PausedByUs: true, Now: testNow}
	}
	// moved is held resumed to step 1 (50%: 5 of 10), our hold gone and its settledAt with it.
	moved := grayapi.Status{Revision: 2, StableRevision: 1, Step: 1, Percent: 50, Target: 5, Phase: grayapi.PhaseProgressing}
	type sizes struct {
		Kind     SizeKind
		NewSize  int32
		OldSizes []int32
	}
	tests := []struct {
		name   string
		f      moveFacts
		status grayapi.Status
		resume ResumeDecision
		hold   HoldChange
		paused bool
		sizes  sizes
		// pause: our hold follows the sizes (PauseAfter)
		pause bool
	}{{
		name:   "2:next leaves the hold and steps toward 5",
		f:      facts(web(10, grayapi.ResumeAnnotation, "2:next")),
		status: moved,
		resume: ResumeDecision{Step: 1, Consume: true, Resumed: "Revision 2 resumed at 20%: moving on to 50%"},
		hold:   HoldLeft,
		sizes:  sizes{Kind: SizesRolled, NewSize: 5, OldSizes: []int32{8}},
		pause:  true,
	}, {
		name: "the same under its user's own pause: the step moves on, the sizes wait for the user",
		f: func() moveFacts {
			f := facts(web(10, grayapi.ResumeAnnotation, "2:next"))
			f.ModePaused = true
			return f
		}(),
		status: moved,
		resume: ResumeDecision{Step: 1, Consume: true, Resumed: "Revision 2 resumed at 20%: moving on to 50%"},
		hold:   HoldLeft,
		sizes:  sizes{Kind: SizesKept},
	}, {
		name: "hold-for run out two minutes after the hold settled: moved on, nothing to consume",
		f: func() moveFacts {
			f := facts(web(10))
			f.Policy.HoldFor = time.Minute
			return f
		}(),
		status: moved,
		resume: ResumeDecision{Step: 1, Resumed: "Revision 2 held at 20% for 1m0s (kubegray.io/hold-for): moving on to 50%"},
		hold:   HoldLeft,
		sizes:  sizes{Kind: SizesRolled, NewSize: 5, OldSizes: []int32{8}},
		pause:  true,
	}, {
		name: "hold-for run out, a gate 2 passes short: the hold stays",
		f: func() moveFacts {
			f := facts(web(10))
			f.Policy.HoldFor = time.Minute
			f.Gates = GateDecision{Pending: []string{"pods 1/3"}}
			return f
		}(),
		status: held,
		paused: true,
		sizes:  sizes{Kind: SizesRolled, NewSize: 2, OldSizes: []int32{8}},
	}, {
		name: "2:next with a gate 2 passes short: a person's resume wins and says so",
		f: func() moveFacts {
			f := facts(web(10, grayapi.ResumeAnnotation, "2:next"))
			f.Gates = GateDecision{Pending: []string{"pods 1/3"}}
			return f
		}(),
		status: moved,
		resume: ResumeDecision{Step: 1, Consume: true, Resumed: "Revision 2 resumed at 20%: moving on to 50% (by hand: gates not passed: pods 1/3)"},
		hold:   HoldLeft,
		sizes:  sizes{Kind: SizesRolled, NewSize: 5, OldSizes: []int32{8}},
		pause:  true,
	}, {
		name:   "hold-for not yet run out: the hold stays and the sizes with it",
		f:      func() moveFacts { f := facts(web(10)); f.Policy.HoldFor = 5 * time.Minute; return f }(),
		status: held,
		paused: true,
		sizes:  sizes{Kind: SizesRolled, NewSize: 2, OldSizes: []int32{8}},
	}, {
		// Created at min(10+3−8, 2) = 2, at its target: our hold follows in the same sync.
		name: "a new template while our hold pauses the former rollout: the hold goes, the canary is created at its target and held",
		f: func() moveFacts {
			f := facts(web(10))
			f.NewRollout, f.NewRS, f.Status = true, nil, grayapi.Status{Revision: 3, StableRevision: 2}
			return f
		}(),
		status: grayapi.Status{Revision: 3, StableRevision: 2, Step: 0, Percent: 20, Target: 2, Phase: grayapi.PhaseProgressing},
		hold:   HoldLeft,
		sizes:  sizes{Kind: SizesCreateFirst, NewSize: 2, OldSizes: []int32{8}},
		pause:  true,
	}, {
		name: "no hold, the canary at 1 of its target 2: a step to 2 and our hold after it",
		f: func() moveFacts {
			f := facts(web(10))
			f.Deployment.Spec.Paused = false
			f.Status = grayapi.Status{Revision: 2, StableRevision: 1, Step: 0, Percent: 20, Target: 2, Phase: grayapi.PhaseProgressing}
			f.Prev, f.HeldByUs, f.PausedByUs = f.Status, false, false
			f.NewRS, f.OldRSs = planRS(2, 1, 1, 10), []*appsv1.ReplicaSet{planRS(1, 9, 9, 10)}
			return f
		}(),
		status: grayapi.Status{Revision: 2, StableRevision: 1, Step: 0, Percent: 20, Target: 2, Phase: grayapi.PhaseProgressing},
		sizes:  sizes{Kind: SizesRolled, NewSize: 2, OldSizes: []int32{9}},
		pause:  true,
	}, {
		name:   "3:next names another revision: ignored, the hold stays",
		f:      facts(web(10, grayapi.ResumeAnnotation, "3:next")),
		status: held,
		resume: ResumeDecision{Consume: true, Ignored: `Ignored kubegray.io/resume="3:next": revision 3 is not the rollout in flight (revision 2)`},
		paused: true,
		sizes:  sizes{Kind: SizesRolled, NewSize: 2, OldSizes: []int32{8}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := decideMove(context.Background(), tt.f)
			got := sizes{Kind: m.Sizes.Kind, NewSize: m.Sizes.NewSize, OldSizes: m.Sizes.OldSizes}
			if !apiequality.Semantic.DeepEqual(m.Status, tt.status) || m.Resume != tt.resume || m.Hold != tt.hold || m.Paused != tt.paused ||
				!apiequality.Semantic.DeepEqual(got, tt.sizes) || m.PauseAfter != tt.pause {
				t.Errorf("decideMove =\nstatus %+v\nresume %+v hold %d paused %t sizes %+v pause after %t\nwant\nstatus %+v\nresume %+v hold %d paused %t sizes %+v pause after %t",
					m.Status, m.Resume, m.Hold, m.Paused, got, m.PauseAfter, tt.status, tt.resume, tt.hold, tt.paused, tt.sizes, tt.pause)
			}
		})
	}
}

// TestDecideMoveSettles decides the move of random rollouts (R 1–20, one to three hold points,
// any step, held by us, by the user or not at all, a resume request of every kind or none, a
// hold-for that may have run out, a canary and old ReplicaSets of any size, a scaling event or
// not), then decides again on the state each decision produced, as the sync its writes trigger
// would: the hold written, the request consumed, the sizes written, the pause after them. No move
// grows the canary past its target; the rollout moves on at most once; and by the fourth
// decision nothing is left to do but wait (a sync serves one request: an unpause that came with
// a request it dropped is served by the next; a request kept while a scaling event is absorbed
// waits for the sizes; a hold left below its target is taken again when a later step reaches
// it). The cases must reach every kind of move, or the test looked at too little.
func TestDecideMoveSettles(t *testing.T) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(20261204, 33))
	seen := map[string]int{}
	needed := map[int]int{}
	for i := range 5000 {
		f := randomMoveFacts(r)
		next, resumes, quiet := f, 0, false
		for decision := range 4 {
			m := decideMove(ctx, next)
			if decision == 0 {
				seen[firstMoveKind(m)]++
			}
			if next.NewRS != nil && (m.Sizes.Kind == SizesRolled || m.Sizes.Kind == SizesScaled || m.Sizes.Kind == SizesRestored) &&
				m.Sizes.NewSize > *next.NewRS.Spec.Replicas && m.Sizes.NewSize > m.Status.Target {
				t.Fatalf("case %d, decision %d: the canary grows %d → %d, past its target %d\nfacts %+v\nmove %+v", i, decision,
					*next.NewRS.Spec.Replicas, m.Sizes.NewSize, m.Status.Target, next, m)
			}
			if m.Resume.Resumed != "" {
				resumes++
			}
			// A request kept while the sizes converge (Waits) is nothing done yet.
			if m.Resume.Resumed == "" && !m.Resume.Consume && m.Resume.Ignored == "" && m.Hold == HoldUnchanged && !m.PauseAfter {
				quiet = true
				needed[decision]++
				break
			}
			next = afterMove(next, m)
		}
		if !quiet || resumes > 1 {
			t.Fatalf("case %d: %d resumes, quiet by the fourth decision %t\nfacts %+v", i, resumes, quiet, f)
		}
	}
	t.Logf("first moves: %v, quiet at decision: %v", seen, needed)
	for _, kind := range []string{"resumed", "ignored", "waits", "hold left", "held again", "nothing"} {
		if seen[kind] < 20 {
			t.Errorf("only %d of 5000 random first moves were %q: %v", seen[kind], kind, seen)
		}
	}
}

// firstMoveKind names what m does, for TestDecideMoveSettles's count.
func firstMoveKind(m Move) string {
	switch {
	case m.Hold == HoldAgain:
		return "held again"
	case m.Resume.Resumed != "":
		return "resumed"
	case m.Resume.Ignored != "":
		return "ignored"
	case m.Resume.Waits:
		return "waits"
	case m.Hold == HoldLeft:
		return "hold left"
	}
	return "nothing"
}

// randomMoveFacts is revision 2 over stable revision 1 at a random step.
func randomMoveFacts(r *rand.Rand) moveFacts {
	replicas := 1 + r.Int32N(20)
	var points []int32
	for p := int32(0); len(points) < 3; {
		p += 1 + r.Int32N(60)
		if p >= 100 {
			break
		}
		points = append(points, p)
	}
	d := testutil.GrayWeb(replicas, "")
	step := r.Int32N(int32(len(points)) + 1)
	percent, target := rollout.GrayStepTarget(replicas, points, step)
	st := grayapi.Status{Revision: 2, StableRevision: 1, Step: step, Percent: percent, Target: target, Phase: grayapi.PhaseProgressing}
	f := moveFacts{Points: points, Deployment: d, Now: testNow, ModePaused: r.IntN(10) == 0}
	if r.IntN(2) == 0 {
		// Our hold, settled a while ago (or just now).
		st.HeldAt = new(metav1.NewTime(testNow.Add(-time.Duration(r.IntN(300)) * time.Second)))
		st.Phase = grayapi.PhaseHeld
		st.SettledAt = new(metav1.NewTime(testNow.Add(-time.Duration(r.IntN(120)) * time.Second)))
		d.Spec.Paused = r.IntN(5) > 0 // else: unpaused by hand
		f.HeldByUs, f.PausedByUs = true, d.Spec.Paused
	} else {
		d.Spec.Paused = r.IntN(4) == 0 // the user's own pause
	}
	switch r.IntN(6) {
	case 0:
		d.Annotations[grayapi.ResumeAnnotation] = "2:next"
	case 1:
		d.Annotations[grayapi.ResumeAnnotation] = "2:full"
	case 2:
		d.Annotations[grayapi.ResumeAnnotation] = []string{"3:next", "two", "2:undo"}[r.IntN(3)]
	}
	if r.IntN(3) == 0 {
		f.Policy.HoldFor = time.Duration(r.IntN(120)) * time.Second
	}
	size := target
	if r.IntN(3) == 0 {
		size = r.Int32N(replicas + 1)
	}
	f.NewRS = planRS(2, size, r.Int32N(size+1), replicas)
	if r.IntN(4) > 0 {
		f.OldRSs = []*appsv1.ReplicaSet{planRS(1, replicas-min(size, replicas), replicas-min(size, replicas), replicas)}
	}
	f.Scaling = r.IntN(6) == 0
	f.Status, f.Prev, f.HasPrev = st, st, true
	return f
}

// afterMove is f after the sync that decided m: the hold and the status written, a request it
// consumed gone, the sizes written and observed with the availability they had, our hold written
// after them when they reached a hold point, and no scaling event left to absorb.
func afterMove(f moveFacts, m Move) moveFacts {
	next := f
	d := f.Deployment.DeepCopy()
	d.Spec.Paused = m.Paused || f.ModePaused || m.PauseAfter
	if m.Resume.Consume || m.Resume.Ignored != "" {
		delete(d.Annotations, grayapi.ResumeAnnotation)
	}
	next.Deployment = d
	next.Status, next.Prev = m.Status, m.Status
	if m.PauseAfter {
		next.Status = HoldTaken(m.Status, metav1.NewTime(f.Now))
		next.Prev = next.Status
	}
	next.HeldByUs = m.Status.HeldAt != nil
	next.PausedByUs = d.Spec.Paused && m.Status.HeldAt != nil
	next.Scaling = false
	resize := func(rs *appsv1.ReplicaSet, size int32) *appsv1.ReplicaSet {
		rs = rs.DeepCopy()
		rs.Spec.Replicas = &size
		rs.Status.Replicas = size
		rs.Status.AvailableReplicas = min(rs.Status.AvailableReplicas, size)
		return rs
	}
	if m.Sizes.Kind == SizesRolled || m.Sizes.Kind == SizesScaled || m.Sizes.Kind == SizesRestored {
		next.NewRS = resize(f.NewRS, m.Sizes.NewSize)
		next.OldRSs = nil
		for i, rs := range m.Sizes.Old {
			next.OldRSs = append(next.OldRSs, resize(rs, m.Sizes.OldSizes[i]))
		}
	}
	return next
}
