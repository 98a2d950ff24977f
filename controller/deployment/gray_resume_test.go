package deployment

// Leaving a hold: kubegray.io/resume next and full, a plain unpause, resume requests that are
// ignored, and a pause of the user's own. Scenarios and sizes as described in gray_test.go.

import (
	"reflect"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kubegray/kubectl-gray/internal/testutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

func TestGrayResumeFull(t *testing.T) {
	w := startGray(t, grayDeployment(10, "10,30,60"))
	w.cap = 1
	w.setImage("v2")
	w.step()
	w.step()
	w.wantState(grayapi.PhaseHeld, true)
	w.wantSizes(sz("v1", 9, "v2", 1))

	w.cap = 10
	w.setAnnotation(grayapi.ResumeAnnotation, "2:full")
	w.step()
	// Full: v2 1 → 1+min(13−10, 9) = 4, never held again.
	w.wantSizes(sz("v1", 9, "v2", 4))
	w.wantState(grayapi.PhaseProgressing, false)
	w.wantEvents("GrayResumed", "resumed at 10%: moving on to all replicas")
	w.settle()
	w.wantSizes(sz("v1", 0, "v2", 10))
	w.wantState(grayapi.PhaseComplete, false)
	for _, e := range w.takeEvents() {
		if strings.Contains(e, "GrayHeld") {
			t.Fatalf("held again after resume full: %q", e)
		}
	}
	w.noFlapping()
}

func TestGrayPlainUnpauseIsNext(t *testing.T) {
	w := startGray(t, grayDeployment(10, "10,30,60"))
	w.cap = 1
	w.setImage("v2")
	w.step()
	w.step()
	w.wantState(grayapi.PhaseHeld, true)

	// kubectl rollout resume.
	w.cap = 3
	w.edit(func(d *appsv1.Deployment) { d.Spec.Paused = false })
	actions := w.sync()
	if got, want := verbsOf(actions), []string{
		"update deployments/status", // step 1, target 3 recorded before v2 grows
		"update replicasets",        // v2 1 → 3
		"update deployments",        // held again at 30%
		"update deployments/status",
	}; !reflect.DeepEqual(got, want) {
		t.Fatalf("actions = %v, want %v", got, want)
	}
	w.wantSizes(sz("v1", 9, "v2", 3))
	w.wantState(grayapi.PhaseProgressing, true)
	if st := w.status(); st.Step != 1 || st.Target != 3 || st.HeldAt == nil {
		t.Fatalf("status = %+v, want held at step 1 with target 3", st)
	}
	w.wantEvents("GrayResumed", "unpaused at 10%: moving on to 30%", "GrayHolding", "reached 3/10 (30%)")
	w.ready()
	w.settle()
	w.wantSizes(sz("v1", 7, "v2", 3))
	w.wantState(grayapi.PhaseHeld, true)
}

func TestGrayResumeWithUnpauseInOneWrite(t *testing.T) {
	w := startGray(t, grayDeployment(10, "10,30,60"))
	w.cap = 1
	w.setImage("v2")
	w.settle()
	w.wantState(grayapi.PhaseHeld, true)

	// A client that unpauses and asks for "full" in one write gets one resume, to the end.
	w.cap = 10
	w.edit(func(d *appsv1.Deployment) {
		d.Spec.Paused = false
		d.Annotations[grayapi.ResumeAnnotation] = "2:full"
	})
	w.step()
	w.wantState(grayapi.PhaseProgressing, false)
	if st := w.status(); st.Step != 3 {
		t.Fatalf("step %d, want 3 (full)", st.Step)
	}
	if _, ok := w.deployment().Annotations[grayapi.ResumeAnnotation]; ok {
		t.Fatal("the resume request was not consumed")
	}
	w.settle()
	w.wantState(grayapi.PhaseComplete, false)
}

func TestGrayResumeIgnored(t *testing.T) {
	tests := []struct {
		name  string
		value string
		held  bool
		want  string
	}{
		{name: "stale revision", value: "1:next", held: true, want: "revision 1 is not the rollout in flight (revision 2)"},
		{name: "unparsable", value: "next", held: true, want: `the ":" is missing`},
		{name: "not held", value: "2:next", held: false, want: "revision 2 is not held"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := startGray(t, grayDeployment(10, "20", testutil.WithRollingUpdate(intstr.FromInt32(0), intstr.FromInt32(1))))
			w.cap = 2
			w.setImage("v2")
			if tc.held {
				w.settle()
				w.wantState(grayapi.PhaseHeld, true)
			} else {
				w.step() // v1 9, v2 0: progressing
			}
			before := w.status()
			w.takeEvents()
			w.setAnnotation(grayapi.ResumeAnnotation, tc.value)
			w.sync()
			if _, ok := w.deployment().Annotations[grayapi.ResumeAnnotation]; ok {
				t.Fatal("the ignored request was left in place")
			}
			w.wantEvents("Warning GrayResumeIgnored", tc.want)
			if st := w.status(); st.Step != before.Step {
				t.Fatalf("step moved %d → %d on an ignored request", before.Step, st.Step)
			}
			if tc.held && !w.deployment().Spec.Paused {
				t.Fatal("an ignored request unpaused the hold")
			}
		})
	}
}

func TestGrayUserPauseRespected(t *testing.T) {
	w := startGray(t, grayDeployment(10, "20", testutil.WithRollingUpdate(intstr.FromInt32(0), intstr.FromInt32(1))))
	w.cap = 2
	w.setImage("v2")
	w.step()
	w.wantSizes(sz("v1", 9, "v2", 0))

	w.edit(func(d *appsv1.Deployment) { d.Spec.Paused = true })
	for range 2 {
		actions := w.step()
		if n := len(updatedReplicaSets(actions)); n != 0 {
			t.Fatalf("the user's pause was not respected: %d ReplicaSet writes", n)
		}
	}
	w.wantSizes(sz("v1", 9, "v2", 0)) // no top-up to R+surge either
	w.wantState(grayapi.PhaseProgressing, true)
	if st := w.status(); st.HeldAt != nil || !strings.Contains(st.Message, "paused by the user") {
		t.Fatalf("status = %+v, want a user pause without heldAt", st)
	}

	// The user's unpause is just an unpause: no step is skipped.
	w.edit(func(d *appsv1.Deployment) { d.Spec.Paused = false })
	w.settle()
	w.wantSizes(sz("v1", 8, "v2", 2))
	w.wantState(grayapi.PhaseHeld, true)
	if st := w.status(); st.Step != 0 {
		t.Fatalf("step %d, want 0", st.Step)
	}
}

// TestDecideResume pins every answer to a resume request, a plain unpause and a timed hold for
// web held by us at 20% (step 1 of 20,50) on revision 2; the messages are the events people read.
func TestDecideResume(t *testing.T) {
	facts := func(paused bool, request string) resumeFacts {
		d := grayDeployment(10, "20,50")
		d.Spec.Paused = paused
		if request != "" {
			d.Annotations[grayapi.ResumeAnnotation] = request
		}
		return resumeFacts{d: d, points: []int32{20, 50}, heldByUs: true, holdInPlace: true,
			st: grayapi.Status{Revision: 2, StableRevision: 1, Step: 0, Percent: 20, Target: 2, Phase: grayapi.PhaseHeld}}
	}
	with := func(f resumeFacts, edit func(*resumeFacts)) resumeFacts {
		edit(&f)
		return f
	}
	tests := []struct {
		name string
		f    resumeFacts
		want resumeDecision
		// ignoredPrefix is checked instead of want.ignored when set (the parse error is grayapi's).
		ignoredPrefix string
		// maxIgnored, when set, bounds the length of ignored.
		maxIgnored int
	}{{
		name: "our hold unpaused by the user",
		f:    facts(false, ""),
		want: resumeDecision{step: 1, resumed: "Revision 2 unpaused at 20%: moving on to 50%"},
	}, {
		name: "hold-for ran out",
		f:    with(facts(true, ""), func(f *resumeFacts) { f.holdFor, f.timedHoldDue = 30*time.Second, true }),
		want: resumeDecision{step: 1, resumed: "Revision 2 held at 20% for 30s (kubegray.io/hold-for): moving on to 50%"},
	}, {
		name: "held, nothing asked",
		f:    facts(true, ""),
		want: resumeDecision{},
	}, {
		name: "next",
		f:    facts(true, "2:next"),
		want: resumeDecision{step: 1, consume: true, resumed: "Revision 2 resumed at 20%: moving on to 50%"},
	}, {
		name: "full",
		f:    facts(true, "2:full"),
		want: resumeDecision{step: 2, consume: true, resumed: "Revision 2 resumed at 20%: moving on to all replicas"},
	}, {
		name: "another revision",
		f:    facts(true, "3:next"),
		want: resumeDecision{consume: true, ignored: `Ignored kubegray.io/resume="3:next": revision 3 is not the rollout in flight (revision 2)`},
	}, {
		name: "a rollout that is not held",
		f: with(facts(false, "2:next"), func(f *resumeFacts) {
			f.heldByUs, f.st.Phase = false, grayapi.PhaseProgressing
		}),
		want: resumeDecision{consume: true, ignored: `Ignored kubegray.io/resume="2:next": revision 2 is not held (phase Progressing)`},
	}, {
		name:          "unreadable",
		f:             facts(true, "next"),
		want:          resumeDecision{consume: true},
		ignoredPrefix: `Ignored kubegray.io/resume: invalid kubegray.io/resume "next": `,
	}, {
		// The event quotes the request capped, however much was pasted into it.
		name:          "unreadable and huge",
		f:             facts(true, strings.Repeat("9", 250000)+":next"),
		want:          resumeDecision{consume: true},
		ignoredPrefix: `Ignored kubegray.io/resume: invalid kubegray.io/resume "999`,
		maxIgnored:    512,
	}, {
		name: "undo is takeUndo's: only consumed here",
		f:    facts(true, "2:undo"),
		want: resumeDecision{consume: true},
	}, {
		name: "a scaling event still absorbed: the request waits",
		f:    with(facts(true, "2:next"), func(f *resumeFacts) { f.holdInPlace = false }),
		want: resumeDecision{waits: true},
	}, {
		name: "with the stable ReplicaSet gone nothing is absorbed: it moves on",
		f:    with(facts(true, "2:full"), func(f *resumeFacts) { f.holdInPlace, f.stableGone = false, true }),
		want: resumeDecision{step: 2, consume: true, resumed: "Revision 2 resumed at 20%: moving on to all replicas"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := decideResume(tc.f)
			if tc.maxIgnored > 0 && len(got.ignored) > tc.maxIgnored {
				t.Errorf("ignored is %d bytes, want at most %d: %s", len(got.ignored), tc.maxIgnored, got.ignored)
			}
			if tc.ignoredPrefix != "" {
				if !strings.HasPrefix(got.ignored, tc.ignoredPrefix) || len(got.ignored) == len(tc.ignoredPrefix) {
					t.Errorf("ignored = %q, want %q and the reason", got.ignored, tc.ignoredPrefix)
				}
				got.ignored = ""
			}
			if got != tc.want {
				t.Errorf("decideResume = %+v, want %+v", got, tc.want)
			}
		})
	}
}
