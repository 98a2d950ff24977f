package e2e

import (
	"fmt"
	"time"

	"github.com/kubegray/kubectl-gray/pkg/deployutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// Sizes are written by hand from T = ceil(R·P/100), 1 ≤ T ≤ R−1: of 10, 20%
// is 2, 40% is 4, 50% is 5, 60% is 6, 80% is 8.

// tamperUndoScenarios are `kubectl rollout undo` in every phase of a gray rollout, and to
// revisions from before it.
func tamperUndoScenarios() []tamperScenario {
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
			// minReadySeconds 10 keeps v2 from completing before the undo lands: with 3, a loaded
			// machine (make test's two lanes) once took longer to run kubectl rollout undo than
			// v2 took to finish, and the undo became a new rollout of v1, rightly held at 20%.
			e.create(webManifest{replicas: 10, image: tpImg1, percent: "20,60", minReady: 10}, false)
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
		{name: "7a rollout undo while progressing", modes: "both", run: func(e *tamperEnv) {
			e.create(webManifest{replicas: 10, image: tpImg1, percent: "50", surge: "1", unavailable: "0"}, false)
			// Pods of the new template never become ready: the rollout stays
			// at one new replica, short of the 50% hold.
			e.u.must("patch", "deploy/web", "-p", fmt.Sprintf(`{"spec":{"template":{"metadata":{"annotations":{%q:"true"}},"spec":{"containers":[{"name":"app","image":%q}]}}}}`,
				"kubegray.test/never-ready", tpImg2))
			e.want("progressing with an unready new replica", grayapi.PhaseProgressing, map[string]int32{tpImg1: 10, tpImg2 + "+broken": 1}, e.alongside())
			e.restartController("while progressing")
			if e.alongside() {
				// Taken over, hence paused: kubectl refuses, kubectl gray undo works.
				e.u.fails(1, []string{refusedPaused}, "rollout", "undo", "deploy/web")
				e.still("after the refused kubectl rollout undo", 2*time.Second)
				e.u.must("gray", "undo", "web")
			} else {
				e.u.must("rollout", "undo", "deploy/web")
			}
			e.until("complete")
			e.final(map[string]int32{tpImg1: 10, tpImg2 + "+broken": 0}, true, "1", "0")
		}},

		{name: "7b rollout undo while held is refused by kubectl", modes: "both", run: func(e *tamperEnv) {
			e.create(webManifest{replicas: 10, image: tpImg1, percent: "20"}, false)
			e.u.must("set", "image", "deploy/web", "app="+tpImg2)
			e.until("held")
			e.want("held at 20%", held, map[string]int32{tpImg1: 8, tpImg2: 2}, true)
			e.u.fails(1, []string{refusedPaused}, "rollout", "undo", "deploy/web")
			e.still("after the refused kubectl rollout undo", 2*time.Second)
			e.restartController("while held after the refused undo")
			e.u.must("gray", "undo", "web")
			e.until("complete")
			e.final(map[string]int32{tpImg1: 10, tpImg2: 0}, true, "25%", "25%")
		}},

		{name: "7c rollout undo after complete holds at the first point", modes: "both", run: func(e *tamperEnv) {
			e.create(webManifest{replicas: 10, image: tpImg1, percent: "20"}, false)
			e.u.must("set", "image", "deploy/web", "app="+tpImg2)
			e.until("held")
			e.want("held at 20%", held, map[string]int32{tpImg1: 8, tpImg2: 2}, true)
			e.u.must("gray", "resume", "web", "--full")
			e.until("complete")
			e.want("v2 complete", complete, map[string]int32{tpImg1: 0, tpImg2: 10}, false)
			e.restartController("after the rollout completed")
			e.u.must("rollout", "undo", "deploy/web")
			e.until("held")
			e.want("the undo held at 20%", held, map[string]int32{tpImg1: 2, tpImg2: 8}, true)
			if st := e.status(); st.StableRevision != 2 || st.Revision != 3 {
				e.t.Errorf("the undo held with status revision %d stableRevision %d, want 3 and 2", st.Revision, st.StableRevision)
			}
			e.u.must("gray", "resume", "web", "--full")
			e.until("complete")
			e.final(map[string]int32{tpImg1: 10, tpImg2: 0}, true, "25%", "25%")
		}},

		{name: "7d rollout undo after kubectl gray undo holds the canary again", modes: "both", run: func(e *tamperEnv) {
			e.create(webManifest{replicas: 10, image: tpImg1, percent: "20"}, false)
			e.u.must("set", "image", "deploy/web", "app="+tpImg2)
			e.until("held")
			e.want("held at 20%", held, map[string]int32{tpImg1: 8, tpImg2: 2}, true)
			e.u.must("gray", "undo", "web")
			e.until("complete")
			e.want("rolled back to v1", complete, map[string]int32{tpImg1: 10, tpImg2: 0}, false)
			e.restartController("after kubectl gray undo")
			// Back to revision 2, the canary: not the stable revision.
			e.u.must("rollout", "undo", "deploy/web")
			e.until("held")
			e.want("the canary held at 20% again", held, map[string]int32{tpImg1: 8, tpImg2: 2}, true)
			if st := e.status(); st.StableRevision != 3 {
				e.t.Errorf("stableRevision %d, want 3 (v1 as renumbered by kubectl gray undo)", st.StableRevision)
			}
			e.u.must("gray", "undo", "web")
			e.until("complete")
			e.final(map[string]int32{tpImg1: 10, tpImg2: 0}, true, "25%", "25%")
		}},
	}
}
