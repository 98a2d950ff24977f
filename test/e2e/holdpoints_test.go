package e2e

// Each hold point its own pause (kubegray.io/percent "20@3s,50@8s,80@5s"), on the real control
// plane with two gray-controller replicas: every hold lasts its own duration counted from when it
// settled (none shorter, none more than a few seconds longer), a point's own duration wins over
// kubegray.io/hold-for, the leader is SIGKILLed during the second hold and the next leader ends
// it on time, and an edit of the annotation during that hold does not shorten it.

import (
	"fmt"
	"testing"
	"time"

	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

func TestHoldPointDurationsAcrossALeaderKill(t *testing.T) {
	for _, m := range canaryModes {
		t.Run(m.name, func(t *testing.T) {
			c, pool := startLeaderPair(t, m)
			k := newCanary(t, c, m, "points")
			const plan = "20@3s,50@8s,80@5s"
			k.startStable(plan)
			// An hour of hold-for beside the points' own durations: if it won, nothing would move.
			k.u.must("annotate", "deployment", "web", grayapi.HoldForAnnotation+"=1h")
			k.u.must("set", "image", "deployment/web", "app="+goodImage)
			eventually(t, 60*time.Second, "the hold at 50% settled", func() (bool, string) {
				st := k.grayStatus(k.get("web"))
				return st.Revision == 2 && st.Step == 1 && st.Phase == grayapi.PhaseHeld, fmt.Sprintf("status %+v", st)
			})
			pool.killLeader(t)
			// Shortening the point's duration during its hold applies from the next hold point.
			k.u.must("annotate", "--overwrite", "deployment", "web", grayapi.PercentAnnotation+"=20@3s,50@1s,80@5s")
			k.u.must("gray", "status", "web", "--until", "complete", "--timeout", "120s")
			k.wantSizes("web", map[string]int32{"1": 0, "2": 10}, map[string]string{"1": stableImage, "2": goodImage})

			h := k.history("web")
			from := first(h, 0, withImage(goodImage))
			if from < 0 {
				t.Fatalf("the new template was never seen:\n%s", statusLines(h))
			}
			for step, own := range []time.Duration{3 * time.Second, 8 * time.Second, 5 * time.Second} {
				held := first(h, from, func(s seenStatus) bool {
					return s.ok && s.st.Revision == 2 && s.st.Step == int32(step) && s.st.Phase == grayapi.PhaseHeld
				})
				next := first(h, max(held, 0), func(s seenStatus) bool { return s.ok && s.st.Revision == 2 && s.st.Step > int32(step) })
				if held < 0 || next < 0 {
					t.Fatalf("step %d: want Held then the next step:\n%s", step, statusLines(h[from:]))
				}
				settled, recorded := h[held].st.SettledAt, h[held].st.HoldFor
				// The leader killed during the second hold costs up to a lease (3s) and a start.
				most := own + 5*time.Second
				if step == 1 {
					most += 5 * time.Second
				}
				waited := h[next].at.Sub(h[held].at)
				t.Logf("HOLD-POINT mode=%s step=%d own=%v held=%v recorded=%v", m.name, step, own, waited.Round(time.Millisecond), recorded)
				// settledAt has whole seconds: the hold may end up to a second short of its duration
				// after it was first seen Held, never before settledAt plus the duration.
				if settled == nil || recorded == nil || recorded.Duration != own || h[next].at.Before(settled.Add(own)) ||
					waited < own-time.Second || waited > most {
					t.Errorf("step %d held %v (settledAt %v, recorded %v, left at %s), want its own %v, at most %v", step, waited, settled,
						recorded, h[next].at.Format(timeLayout), own, most)
				}
				from = next
			}
			k.released()
		})
	}
}
