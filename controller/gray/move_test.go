package gray

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegray/kubectl-gray/pkg/grayapi"
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
		d := grayDeployment(replicas, "20,50")
		d.Spec.Paused = true
		for i := 0; i+1 < len(annotations); i += 2 {
			d.Annotations[annotations[i]] = annotations[i+1]
		}
		return d
	}
	facts := func(d *appsv1.Deployment) MoveFacts {
		return MoveFacts{Status: held, Prev: held, HasPrev: true, Points: []int32{20, 50}, Deployment: d, NewRS: planRS(2, 2, 2, 10),
			OldRSs: []*appsv1.ReplicaSet{planRS(1, 8, 8, 10)}, HeldByUs: true, PausedByUs: true, Now: testNow}
	}
	// moved is held resumed to step 1 (50%: 5 of 10), our hold gone.
	moved := grayapi.Status{Revision: 2, StableRevision: 1, Step: 1, Percent: 50, Target: 5, Phase: grayapi.PhaseProgressing, SettledAt: &settledAt}
	type sizes struct {
		Kind     SizeKind
		NewSize  int32
		OldSizes []int32
	}
	tests := []struct {
		name   string
		f      MoveFacts
		status grayapi.Status
		resume ResumeDecision
		hold   HoldChange
		paused bool
		sizes  sizes
	}{{
		name:   "2:next leaves the hold and steps toward 5",
		f:      facts(web(10, grayapi.ResumeAnnotation, "2:next")),
		status: moved,
		resume: ResumeDecision{Step: 1, Consume: true, Resumed: "Revision 2 resumed at 20%: moving on to 50%"},
		hold:   HoldLeft,
		sizes:  sizes{Kind: SizesStepped, NewSize: 5, OldSizes: []int32{8}},
	}, {
		name: "the same under its user's own pause: the step moves on, the sizes wait for the user",
		f: func() MoveFacts {
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
		f: func() MoveFacts {
			f := facts(web(10))
			f.Policy.HoldFor = time.Minute
			return f
		}(),
		status: moved,
		resume: ResumeDecision{Step: 1, Resumed: "Revision 2 held at 20% for 1m0s (kubegray.io/hold-for): moving on to 50%"},
		hold:   HoldLeft,
		sizes:  sizes{Kind: SizesStepped, NewSize: 5, OldSizes: []int32{8}},
	}, {
		name:   "hold-for not yet run out: the hold stays and the sizes with it",
		f:      func() MoveFacts { f := facts(web(10)); f.Policy.HoldFor = 5 * time.Minute; return f }(),
		status: held,
		paused: true,
		sizes:  sizes{Kind: SizesStepped, NewSize: 2, OldSizes: []int32{8}},
	}, {
		name: "a new template while our hold pauses the former rollout: the hold goes, the canary is created first",
		f: func() MoveFacts {
			f := facts(web(10))
			f.NewRollout, f.NewRS, f.Status = true, nil, grayapi.Status{Revision: 3, StableRevision: 2}
			return f
		}(),
		status: grayapi.Status{Revision: 3, StableRevision: 2, Step: 0, Percent: 20, Target: 2, Phase: grayapi.PhaseProgressing},
		hold:   HoldLeft,
		sizes:  sizes{Kind: SizesCreateFirst},
	}, {
		name:   "3:next names another revision: ignored, the hold stays",
		f:      facts(web(10, grayapi.ResumeAnnotation, "3:next")),
		status: held,
		resume: ResumeDecision{Consume: true, Ignored: `Ignored kubegray.io/resume="3:next": revision 3 is not the rollout in flight (revision 2)`},
		paused: true,
		sizes:  sizes{Kind: SizesStepped, NewSize: 2, OldSizes: []int32{8}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := DecideMove(context.Background(), tt.f)
			got := sizes{Kind: m.Sizes.Kind, NewSize: m.Sizes.NewSize, OldSizes: m.Sizes.OldSizes}
			if !apiequality.Semantic.DeepEqual(m.Status, tt.status) || m.Resume != tt.resume || m.Hold != tt.hold || m.Paused != tt.paused ||
				!apiequality.Semantic.DeepEqual(got, tt.sizes) {
				t.Errorf("DecideMove =\nstatus %+v\nresume %+v hold %d paused %t sizes %+v\nwant\nstatus %+v\nresume %+v hold %d paused %t sizes %+v",
					m.Status, m.Resume, m.Hold, m.Paused, got, tt.status, tt.resume, tt.hold, tt.paused, tt.sizes)
			}
		})
	}
}
