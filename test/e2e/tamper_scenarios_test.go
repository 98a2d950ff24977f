package e2e

import (
	"fmt"
	"time"

	"github.com/kubegray/kubectl-gray/pkg/deployutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// Sizes are written by hand from T = ceil(R·P/100), 1 ≤ T ≤ R−1: of 10, 20%
// is 2, 40% is 4, 50% is 5, 60% is 6, 80% is 8.

func tamperScenariosA() []tamperScenario {
	held, complete := grayapi.PhaseHeld, grayapi.PhaseComplete
	return []tamperScenario{
		{name: "1 rollout undo after a completed rollout is taken over with the current strategy", modes: "alongside", run: func(e *tamperEnv) {
			e.create(webManifest{replicas: 10, image: tpImg1, percent: "20"}, false)
			e.u.must("set", "image", "deploy/web", "app="+tpImg2)
			e.until("held")
			e.want("held at 20%", held, map[string]int32{tpImg1: 8, tpImg2: 2}, true)
			e.takenOver(alongsideSaved)
			e.u.must("gray", "resume", "web", "--full")
			e.until("complete")
			e.want("v2 complete", complete, map[string]int32{tpImg1: 0, tpImg2: 10}, false)
			e.strategyIs("25%", "25%")

			// Between rollouts the user changes the strategy.
			e.u.must("patch", "deploy/web", "-p", `{"spec":{"strategy":{"rollingUpdate":{"maxSurge":1,"maxUnavailable":0}}}}`)
			e.strategyIs("1", "0")
			undo := time.Now()
			e.u.must("rollout", "undo", "deploy/web")
			e.until("held")
			e.want("the undo held at 20%", held, map[string]int32{tpImg1: 2, tpImg2: 8}, true)
			e.takenOver("RollingUpdate;maxSurge=1;maxUnavailable=0")
			e.restartController("while the undo is held")
			if p := e.peak(tpImg1, undo, time.Time{}); p > 2 {
				e.t.Errorf("the undo's ReplicaSet (%s) reached %d, above the target 2: rolled by the built-in controller", tpImg1, p)
			}
			e.u.must("gray", "resume", "web", "--full")
			e.until("complete")
			e.final(map[string]int32{tpImg1: 10, tpImg2: 0}, true, "1", "0")
		}},

		{name: "2 rollout undo to the stable revision during an unpaused rollout", modes: "instead", run: func(e *tamperEnv) {
			e.create(webManifest{replicas: 10, image: tpImg1, percent: "20,60", minReady: 3}, false)
			e.u.must("set", "image", "deploy/web", "app="+tpImg2)
			e.until("held")
			e.want("held at 20%", held, map[string]int32{tpImg1: 8, tpImg2: 2}, true)
			e.u.must("gray", "resume", "web")
			e.want("held at 60%", held, map[string]int32{tpImg1: 4, tpImg2: 6}, true)
			e.until("held")
			e.restartController("while held at 60%")
			e.u.must("gray", "resume", "web", "--full")
			eventually(e.t, 30*time.Second, "v2 above 6 and web unpaused", func() (bool, string) {
				s, _, msg := e.look()
				return s.sizes[tpImg2] > 6 && s.sizes[tpImg1] > 0 && !s.paused, msg
			})
			e.u.must("rollout", "undo", "deploy/web", "--to-revision=1")
			e.until("complete")
			e.want("back on v1, holds skipped", complete, map[string]int32{tpImg1: 10, tpImg2: 0}, false)
			d := e.get("web")
			st := e.grayStatus(d)
			var v1Revision string
			for _, rs := range ownedReplicaSets(e.t, e.client, d) {
				if rsKey(&rs.Spec.Template) == tpImg1 {
					v1Revision = rs.Annotations[deployutil.RevisionAnnotation]
				}
			}
			if v1Revision != "3" || st.StableRevision != 3 || st.Revision != 3 {
				e.t.Errorf("after the undo: v1 ReplicaSet revision %s, status revision %d stableRevision %d; want 3, 3, 3",
					v1Revision, st.Revision, st.StableRevision)
			}
			// kubectl gray undo now has nothing to go back to: it may refuse
			// or do nothing, but it must not roll the canary out.
			undo := time.Now()
			r := e.u.kubectl("gray", "undo", "web")
			e.t.Logf("kubectl gray undo after the rollback exited %d", r.code)
			e.still("after kubectl gray undo", 5*time.Second)
			if p := e.peak(tpImg2, undo, time.Time{}); p > 0 {
				e.t.Errorf("kubectl gray undo after the rollback raised the canary %s to %d", tpImg2, p)
			}
			e.final(map[string]int32{tpImg1: 10, tpImg2: 0}, true, "25%", "25%")
		}},

		{name: "3 lowering the percent while held keeps availability", modes: "both", run: func(e *tamperEnv) {
			e.create(webManifest{replicas: 10, image: tpImg1, percent: "50", surge: "1", unavailable: "0"}, false)
			e.u.must("set", "image", "deploy/web", "app="+tpImg2)
			e.until("held")
			e.want("held at 50%", held, map[string]int32{tpImg1: 5, tpImg2: 5}, true)
			e.takenOver("RollingUpdate;maxSurge=1;maxUnavailable=0")
			e.u.must("gray", "set", "web", "20")
			e.want("held at 20%", held, map[string]int32{tpImg1: 8, tpImg2: 2}, true)
			e.until("held")
			if st := e.status(); st.Percent != 20 || st.Step != 0 || st.Target != 2 {
				e.t.Errorf("held after lowering: status step %d percent %d target %d, want 0, 20, 2", st.Step, st.Percent, st.Target)
			}
			e.restartController("while held at the lowered 20%")
			e.u.must("gray", "resume", "web", "--full")
			e.until("complete")
			e.final(map[string]int32{tpImg1: 0, tpImg2: 10}, true, "1", "0")
		}},

		{name: "4 status annotation deleted or garbage or dropped by a replace while held", modes: "both", run: func(e *tamperEnv) {
			e.create(webManifest{replicas: 10, image: tpImg1, percent: "20,40,60,80"}, false)
			e.u.must("set", "image", "deploy/web", "app="+tpImg2)
			e.until("held")
			e.want("held at 20%", held, map[string]int32{tpImg1: 8, tpImg2: 2}, true)
			stable := e.status().StableRevision

			// Instead mode has no guard: the controller re-derives the status each write
			// removed or garbled. In alongside mode the guard refuses every one of them.
			e.tamperStatus(grayapi.StatusAnnotation + "-")
			e.restartAfterTamper("right after the status annotation was deleted")
			e.want("held at 20% again after the status was deleted", held, map[string]int32{tpImg1: 8, tpImg2: 2}, true)
			e.until("held")
			e.u.must("gray", "resume", "web")
			e.want("held at 40%", held, map[string]int32{tpImg1: 6, tpImg2: 4}, true)
			e.until("held")

			e.tamperStatus(grayapi.StatusAnnotation + "={")
			e.stillAfterTamper("after the status became garbage", 3*time.Second)
			e.want("held at 40% again after the status became garbage", held, map[string]int32{tpImg1: 6, tpImg2: 4}, true)
			e.until("held")
			if e.alongside() {
				e.u.must("gray", "resume", "web")
			} else {
				// Instead mode: a plain kubectl rollout resume counts as next.
				e.u.must("rollout", "resume", "deploy/web")
			}
			e.want("held at 60%", held, map[string]int32{tpImg1: 4, tpImg2: 6}, true)
			e.until("held")

			// A tool that replaces the object with the annotations it knows: in alongside mode
			// the guard refuses the write, which would drop gray-controller's status.
			var refusal []string
			if e.alongside() {
				refusal = e.statusRefusal()
			}
			e.replaceEdited(func(obj map[string]any) {
				meta := obj["metadata"].(map[string]any)
				ann := meta["annotations"].(map[string]any)
				for k := range ann {
					switch k {
					case grayapi.PercentAnnotation, grayapi.StrategyAnnotation, deployutil.RevisionAnnotation:
					default:
						delete(ann, k)
					}
				}
			}, refusal...)
			e.stillAfterTamper("after the replace without the status", 3*time.Second)
			e.want("held at 60% again after the replace", held, map[string]int32{tpImg1: 4, tpImg2: 6}, true)
			e.until("held")
			if st := e.status(); st.StableRevision != stable || st.Step != 2 {
				e.t.Errorf("after the replace: stableRevision %d step %d, want %d and 2", st.StableRevision, st.Step, stable)
			}
			e.u.must("gray", "resume", "web")
			e.want("held at 80%", held, map[string]int32{tpImg1: 2, tpImg2: 8}, true)
			e.until("held")
			e.takenOver(alongsideSaved)
			e.u.must("gray", "resume", "web", "--full")
			e.until("complete")
			e.final(map[string]int32{tpImg1: 0, tpImg2: 10}, true, "25%", "25%")
		}},

		{name: "5 the user's own pause stands", modes: "alongside", run: func(e *tamperEnv) {
			e.create(webManifest{replicas: 10, image: tpImg1, percent: "20"}, false)
			e.u.must("rollout", "pause", "deploy/web")
			change := time.Now()
			e.u.must("set", "image", "deploy/web", "app="+tpImg2)
			time.Sleep(8 * time.Second)
			e.restartController("while the user's pause stands")
			time.Sleep(2 * time.Second)
			if p := e.peak(tpImg2, change, time.Time{}); p > 0 {
				e.t.Errorf("under the user's pause the new template %s got %d replicas", tpImg2, p)
			}
			_, _, msg := e.look()
			e.t.Logf("under the user's pause after kubectl set image: %s", msg)
			e.u.kubectl("gray", "status", "web")
			// Roll back; the release must hand the user's pause back.
			e.u.must("gray", "undo", "web")
			back := map[string]int32{tpImg1: 10, tpImg2: 0}
			eventually(e.t, 60*time.Second, "back on v1 (10), the new template at 0 or absent", func() (bool, string) {
				s, _, msg := e.look()
				if _, ok := s.sizes[tpImg2]; !ok {
					delete(back, tpImg2)
				}
				return s.sizes[tpImg1] == 10 && s.sizes[tpImg2] == 0 && len(s.sizes) == len(back) && s.phase == grayapi.PhaseComplete, msg
			})
			e.strategyIs("25%", "25%")
			if d := e.get("web"); !d.Spec.Paused {
				e.t.Errorf("the release dropped the user's pause: spec.paused=false")
			} else {
				e.u.must("rollout", "resume", "deploy/web")
			}
			e.final(back, true, "25%", "25%")
		}},

		{name: "6 rollout undo to a revision from before the Deployment became gray", modes: "both", run: func(e *tamperEnv) {
			e.create(webManifest{replicas: 10, image: tpImg1}, false)
			e.u.must("set", "image", "deploy/web", "app="+tpImg2)
			e.u.must("rollout", "status", "deploy/web", "--timeout="+tpWait)
			e.want("plain v2", tpAnyPhase, map[string]int32{tpImg1: 0, tpImg2: 10}, false)
			e.u.must("gray", "set", "web", "20,60", "--image", "app="+tpImg3)
			e.until("held")
			e.want("v3 held at 20%", held, map[string]int32{tpImg1: 0, tpImg2: 8, tpImg3: 2}, true)
			e.u.must("gray", "resume", "web")
			e.want("v3 held at 60%", held, map[string]int32{tpImg1: 0, tpImg2: 4, tpImg3: 6}, true)
			e.until("held")
			e.u.must("gray", "resume", "web", "--full")
			e.until("complete")
			e.want("v3 complete", complete, map[string]int32{tpImg1: 0, tpImg2: 0, tpImg3: 10}, false)

			e.u.must("rollout", "undo", "deploy/web", "--to-revision=1")
			eventually(e.t, 15*time.Second, "kubegray.io/percent kept across the undo", func() (bool, string) {
				d := e.get("web")
				return d.Annotations[grayapi.PercentAnnotation] == "20,60", fmt.Sprint(tpGrayAnnotations(d))
			})
			// Revision 1 is not the stable revision (3 is): it holds.
			e.until("held")
			e.want("the undo to revision 1 held at 20%", held, map[string]int32{tpImg1: 2, tpImg2: 0, tpImg3: 8}, true)
			e.restartController("while the undo to revision 1 is held")
			e.u.must("gray", "resume", "web", "--full")
			e.until("complete")
			e.want("v1 complete", complete, map[string]int32{tpImg1: 10, tpImg2: 0, tpImg3: 0}, false)
			if got := e.get("web").Annotations[grayapi.PercentAnnotation]; got != "20,60" {
				e.t.Errorf("kubegray.io/percent = %q after the undo completed, want \"20,60\"", got)
			}

			// The next image change holds at 20%.
			e.u.must("set", "image", "deploy/web", "app="+tpImg4)
			e.until("held")
			e.want("v4 held at 20%", held, map[string]int32{tpImg1: 8, tpImg2: 0, tpImg3: 0, tpImg4: 2}, true)
			e.u.must("gray", "undo", "web")
			e.until("complete")
			e.final(map[string]int32{tpImg1: 10, tpImg2: 0, tpImg3: 0, tpImg4: 0}, true, "25%", "25%")
		}},
	}
}
