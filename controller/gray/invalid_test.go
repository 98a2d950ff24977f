package gray

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegray/kubectl-gray/internal/testutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// TestDecideInvalid pins what a rollout with an unreadable annotation still does. web has 10
// replicas; revision 2 was held at 20% (2 of 10) over stable revision 1 when its hold points
// became unreadable.
func TestDecideInvalid(t *testing.T) {
	const problem = `kubegray.io/percent="2O": not a percent`
	const stopped = problem + "; the rollout is stopped until it is fixed or removed"
	held := grayapi.Status{Revision: 2, StableRevision: 1, Step: 0, Percent: 20, Target: 2, Phase: grayapi.PhaseHeld}
	invalid := held
	invalid.Phase, invalid.Message = grayapi.PhaseInvalid, problem
	web := func(replicas int32, request string) *appsv1.Deployment {
		d := testutil.GrayWeb(replicas, "2O")
		if request != "" {
			d.Annotations[grayapi.ResumeAnnotation] = request
		}
		return d
	}
	facts := func(d *appsv1.Deployment) invalidFacts {
		return invalidFacts{Problem: problem, Prev: held, HasPrev: true, Deployment: d, NewRS: planRS(2, 2, 2, 10),
			OldRSs: []*appsv1.ReplicaSet{planRS(1, 8, 8, 10)}}
	}
	said := []Event{{corev1.EventTypeWarning, grayapi.ReasonGrayInvalid, stopped}}
	tests := []struct {
		name  string
		f     invalidFacts
		want  InvalidDecision
		sizes *SizePlan
		// abort is the course of the abort served (nil: none)
		abort *Course
	}{{
		name: "first seen: Invalid, the rest of the status kept, said once",
		f:    facts(web(10, "")),
		want: InvalidDecision{Status: invalid, Events: said},
	}, {
		name: "the same value reported before: nothing said again",
		f:    func() invalidFacts { f := facts(web(10, "")); f.Prev = invalid; return f }(),
		want: InvalidDecision{Status: invalid},
	}, {
		name: "2:next is dropped with the reason",
		f:    facts(web(10, "2:next")),
		want: InvalidDecision{Status: invalid, Events: said,
			Ignored: `Ignored kubegray.io/resume="2:next": the rollout is Invalid (` + problem + `); fix the annotation first (kubectl gray abort works while Invalid)`},
	}, {
		name:  "2:abort is served",
		f:     facts(web(10, "2:abort")),
		want:  InvalidDecision{Status: invalid, Events: said},
		abort: new(CourseAbort),
	}, {
		name: "an abort standing is kept up",
		f: func() invalidFacts {
			f := facts(web(10, ""))
			f.NewRS.Labels = map[string]string{grayapi.AbortedLabel: "2"}
			f.Aborted = true
			return f
		}(),
		want:  InvalidDecision{Status: invalid, Events: said},
		abort: new(CourseAborted),
	}, {
		name: "an abort standing with 2:next asked: the request dropped, nothing served",
		f:    func() invalidFacts { f := facts(web(10, "2:next")); f.Aborted = true; return f }(),
		want: InvalidDecision{Status: invalid, Events: said,
			Ignored: `Ignored kubegray.io/resume="2:next": the rollout is Invalid (` + problem + `); fix the annotation first (kubectl gray abort works while Invalid)`},
	}, {
		name: "no status ever written: an abort has no rollout to act on and is left alone",
		f: func() invalidFacts {
			f := facts(web(10, "2:abort"))
			f.Prev, f.HasPrev = grayapi.Status{}, false
			return f
		}(),
		want: InvalidDecision{Status: grayapi.Status{Phase: grayapi.PhaseInvalid, Message: problem}, Events: said},
	}, {
		name: "our hold unpaused while Invalid (instead mode: kubectl rollout resume): paused again, the unpause dropped with the reason",
		f: func() invalidFacts {
			f := facts(web(10, ""))
			heldAt := metav1.NewTime(testNow)
			f.Prev.HeldAt = &heldAt
			return f
		}(),
		want: func() InvalidDecision {
			st := invalid
			heldAt := metav1.NewTime(testNow)
			st.HeldAt = &heldAt
			return InvalidDecision{Status: st, Events: said, KeepHold: "Ignored the unpause of revision 2's hold at 20%: the rollout is Invalid (" + problem +
				"); fix the annotation first, then resume it (kubectl gray abort works while Invalid)"}
		}(),
	}, {
		name: "scaled to 20 while held at 20%: the share kept, 4 and 16",
		f:    func() invalidFacts { f := facts(web(20, "")); f.Scaling = true; return f }(),
		want: func() InvalidDecision {
			st := invalid
			st.Target = 4
			return InvalidDecision{Status: st, Events: said}
		}(),
		sizes: &SizePlan{Kind: SizesScaled, NewSize: 4, OldSizes: []int32{16}, Force: true},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := decideInvalid(context.Background(), tt.f)
			gotSizes, gotAbort := got.Sizes, got.Abort
			got.Sizes, got.Abort = nil, nil
			switch {
			case (gotAbort == nil) != (tt.abort == nil):
				t.Errorf("abort served %+v, want course %v", gotAbort, tt.abort)
			case gotAbort != nil && gotAbort.Course != *tt.abort:
				t.Errorf("abort served with course %d, want %d", gotAbort.Course, *tt.abort)
			}
			if !apiequality.Semantic.DeepEqual(got, tt.want) {
				t.Errorf("decideInvalid =\n%+v\nwant\n%+v", got, tt.want)
			}
			switch {
			case (gotSizes == nil) != (tt.sizes == nil):
				t.Errorf("sizes %+v, want %+v", gotSizes, tt.sizes)
			case gotSizes != nil && (gotSizes.Kind != tt.sizes.Kind || gotSizes.NewSize != tt.sizes.NewSize ||
				!apiequality.Semantic.DeepEqual(gotSizes.OldSizes, tt.sizes.OldSizes) || gotSizes.Force != tt.sizes.Force):
				t.Errorf("sizes %+v, want %+v", gotSizes, tt.sizes)
			}
		})
	}
}
