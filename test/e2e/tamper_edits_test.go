package e2e

import (
	"fmt"
	"strings"
	"time"

	"github.com/kubegray/kubectl-gray/pkg/deployutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// tamperEditScenarios are the edits people and tools make to a gray Deployment while it is held
// or progressing: its annotations, an apply of the original manifest, a restart, the user's
// own pause.
func tamperEditScenarios() []tamperScenario {
	held := grayapi.PhaseHeld
	scenarios := []tamperScenario{
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

		{name: "8 rollout restart while held", modes: "both", run: func(e *tamperEnv) {
			e.create(webManifest{replicas: 10, image: tpImg1, percent: "20,60"}, false)
			e.u.must("set", "image", "deploy/web", "app="+tpImg2)
			e.until("held")
			e.u.must("gray", "resume", "web")
			e.want("held at 60%", held, map[string]int32{tpImg1: 4, tpImg2: 6}, true)
			e.until("held")
			r := e.u.kubectl("rollout", "restart", "deploy/web")
			if r.code != 0 {
				// kubectl refuses to restart a paused Deployment; do what it
				// would have written.
				if !strings.Contains(r.stderr, "can't restart paused deployment") {
					e.t.Fatalf("kubectl rollout restart: %s", r)
				}
				e.still("after the refused kubectl rollout restart", 2*time.Second)
				e.u.must("patch", "deploy/web", "-p", fmt.Sprintf(`{"spec":{"template":{"metadata":{"annotations":{%q:%q}}}}}`,
					tpRestartedAt, time.Now().Format(time.RFC3339)))
			}
			e.until("held")
			// The abandoned canary gives its replicas first, the stable keeps 4.
			e.want("the restart held at 20%", held, map[string]int32{tpImg1: 4, tpImg2: 4, tpImg2 + "+restart": 2}, true)
			e.restartController("while the restarted template is held")
			e.u.must("gray", "resume", "web", "--full")
			e.until("complete")
			e.final(map[string]int32{tpImg1: 0, tpImg2: 0, tpImg2 + "+restart": 10}, true, "25%", "25%")
		}},

		{name: "11 a stale status copied back while held is not trusted", modes: "both", run: func(e *tamperEnv) {
			e.create(webManifest{replicas: 10, image: tpImg1, percent: "20,60"}, false)
			e.u.must("set", "image", "deploy/web", "app="+tpImg2)
			e.until("held")
			e.want("v2 held at 20%", held, map[string]int32{tpImg1: 8, tpImg2: 2}, true)
			earlier := e.get("web").Annotations[grayapi.StatusAnnotation]
			e.u.must("gray", "resume", "web", "--full")
			e.until("complete")
			e.u.must("set", "image", "deploy/web", "app="+tpImg3)
			e.until("held")
			e.u.must("gray", "resume", "web")
			sizes := map[string]int32{tpImg1: 0, tpImg2: 4, tpImg3: 6}
			e.want("v3 held at 60%", held, sizes, true)
			e.until("held")
			d := e.get("web")
			current := d.Annotations[grayapi.StatusAnnotation]
			type stale struct{ from, value string }
			var copies []stale
			seen := map[string]bool{current: true}
			for _, rs := range ownedReplicaSets(e.t, e.client, d) {
				if v, ok := rs.Annotations[grayapi.StatusAnnotation]; ok && !seen[v] {
					seen[v] = true
					copies = append(copies, stale{"the copy on replicaset " + rs.Name, v})
				}
			}
			copies = append(copies, stale{"the first rollout's status", earlier})
			// Instead mode takes each copy, and the controller must distrust it. In alongside
			// mode the guard refuses them: a stale copy comes back there only with a template,
			// by kubectl rollout undo (scenarios 1, 6 and 7).
			for i, c := range copies {
				e.t.Logf("writing %s back onto web: %s", c.from, c.value)
				e.tamperStatus(grayapi.StatusAnnotation + "=" + c.value)
				if i == 0 {
					e.restartAfterTamper("right after " + c.from + " was written back")
				} else {
					e.stillAfterTamper("after "+c.from+" was written back", 3*time.Second)
				}
				eventually(e.t, 30*time.Second, "status of the hold at 60% back after "+c.from, func() (bool, string) {
					raw := e.get("web").Annotations[grayapi.StatusAnnotation]
					st, err := grayapi.ParseStatus(raw)
					return err == nil && st.Phase == held && st.Revision == 3 && st.Step == 1 && st.StableRevision == 2, raw
				})
				e.want("still held at 60% after "+c.from, held, sizes, true)
			}
			// The stable revision is still v2: kubectl gray undo goes back to it.
			e.u.must("gray", "undo", "web")
			e.until("complete")
			e.final(map[string]int32{tpImg1: 0, tpImg2: 10, tpImg3: 0}, true, "25%", "25%")
		}},
	}

	for _, ssa := range []bool{false, true} {
		for _, withPercent := range []bool{true, false} {
			how := "client-side"
			if ssa {
				how = "server-side"
			}
			with := "with"
			if !withPercent {
				with = "without"
			}
			scenarios = append(scenarios, tamperScenario{
				name: fmt.Sprintf("9 apply %s of the original manifest %s the percent while held", how, with), modes: "both",
				run: func(e *tamperEnv) { tamperApplyOriginal(e, ssa, withPercent) },
			})
		}
	}

	for _, progressing := range []bool{false, true} {
		for _, op := range []string{"percent deleted", "percent garbage", "resume garbage", "status deleted", "status garbage", "strategy deleted or garbage"} {
			if !progressing && strings.HasPrefix(op, "status") {
				continue // while held: scenario 4
			}
			modes := "both"
			if strings.HasPrefix(op, "strategy") {
				modes = "alongside"
			}
			phase := "held"
			if progressing {
				phase = "progressing"
			}
			scenarios = append(scenarios, tamperScenario{
				name: fmt.Sprintf("10 %s while %s", op, phase), modes: modes,
				run: func(e *tamperEnv) { tamperAnnotation(e, progressing, op) },
			})
		}
	}
	return scenarios
}

// tamperApplyOriginal is scenario 9: the manifest web was created from is
// applied again while a new image is held.
func tamperApplyOriginal(e *tamperEnv, ssa, withPercent bool) {
	original := webManifest{replicas: 10, image: tpImg1, percent: "20"}
	e.create(original, ssa)
	e.u.must("set", "image", "deploy/web", "app="+tpImg2)
	e.until("held")
	e.want("held at 20%", grayapi.PhaseHeld, map[string]int32{tpImg1: 8, tpImg2: 2}, true)
	e.restartController("while held, before the apply")
	m := original
	if !withPercent {
		m.percent = ""
	}
	if ssa {
		e.apply(m, "--server-side", "--force-conflicts")
	} else {
		e.apply(m)
	}
	if withPercent {
		// Back to the stable revision: the holds are skipped.
		e.until("complete")
		e.final(map[string]int32{tpImg1: 10, tpImg2: 0}, true, "25%", "25%")
		if got := e.get("web").Annotations[grayapi.PercentAnnotation]; got != "20" {
			e.t.Errorf("kubegray.io/percent = %q after the apply, want \"20\"", got)
		}
		return
	}
	// The apply removed kubegray.io/percent: no gray, it completes.
	eventually(e.t, 15*time.Second, "kubegray.io/percent removed by the apply", func() (bool, string) {
		d := e.get("web")
		_, ok := d.Annotations[grayapi.PercentAnnotation]
		return !ok, fmt.Sprint(tpGrayAnnotations(d))
	})
	e.final(map[string]int32{tpImg1: 10, tpImg2: 0}, false, "25%", "25%")
}

// tamperAnnotation is scenario 10: one kubegray.io/* annotation deleted or
// set to garbage while held at 20% or while progressing toward 50%
// (maxSurge 1, maxUnavailable 0, minReadySeconds 3: one new pod at a time).
func tamperAnnotation(e *tamperEnv, progressing bool, op string) {
	held := grayapi.PhaseHeld
	percent, surge, unavailable := "20", "25%", "25%"
	heldSizes := map[string]int32{tpImg1: 8, tpImg2: 2}
	saved := alongsideSaved
	if progressing {
		percent, surge, unavailable = "50", "1", "0"
		heldSizes = map[string]int32{tpImg1: 5, tpImg2: 5}
		saved = "RollingUpdate;maxSurge=1;maxUnavailable=0"
		e.create(webManifest{replicas: 10, image: tpImg1, percent: percent, surge: surge, unavailable: unavailable, minReady: 3}, false)
		e.u.must("set", "image", "deploy/web", "app="+tpImg2)
		e.waitProgressing(3)
	} else {
		e.create(webManifest{replicas: 10, image: tpImg1, percent: percent}, false)
		e.u.must("set", "image", "deploy/web", "app="+tpImg2)
		e.until("held")
		e.want("held at 20%", held, heldSizes, true)
	}
	atHold := func(what string) {
		e.t.Helper()
		e.want(what, held, heldSizes, true)
		e.until("held")
		e.takenOver(saved)
	}
	finish := func() {
		e.t.Helper()
		e.u.must("gray", "resume", "web", "--full")
		e.until("complete")
		e.final(map[string]int32{tpImg1: 0, tpImg2: 10}, true, surge, unavailable)
	}

	switch op {
	case "percent deleted":
		e.annotate(grayapi.PercentAnnotation + "-")
		e.want("no gray: rolled out", tpAnyPhase, map[string]int32{tpImg1: 0, tpImg2: 10}, false)
		e.restartController("after the rollout completed without gray")
		e.final(map[string]int32{tpImg1: 0, tpImg2: 10}, false, surge, unavailable)

	case "percent garbage":
		e.tc.steady(func() {
			e.annotate(grayapi.PercentAnnotation + "=abc")
			var frozen int32
			eventually(e.t, 30*time.Second, "phase Invalid", func() (bool, string) {
				s, _, msg := e.observed("web")
				frozen = s.newSpec
				return s.phase == grayapi.PhaseInvalid, msg
			})
			invalidAt := time.Now()
			if progressing {
				time.Sleep(5 * time.Second) // pods already created become available
			} else {
				e.still("while Invalid", 5*time.Second)
			}
			if p := e.peak(tpImg2, invalidAt, time.Time{}); p > frozen {
				e.t.Errorf("while Invalid the new ReplicaSet grew from %d to %d", frozen, p)
			}
			if ok, msg := e.hasEvent("Warning", grayapi.ReasonGrayInvalid); !ok {
				e.t.Errorf("no Warning %s event: %s", grayapi.ReasonGrayInvalid, msg)
			}
		})
		e.restartController("while Invalid")
		if s, _, msg := e.look(); s.phase != grayapi.PhaseInvalid {
			e.t.Errorf("after the restart web is no longer Invalid: %s", msg)
		}
		e.u.must("gray", "set", "web", percent)
		atHold("held after the percent was fixed")
		finish()

	case "resume garbage":
		e.tc.steady(func() {
			e.annotate(grayapi.ResumeAnnotation + "=garbage")
			eventually(e.t, 30*time.Second, "Warning "+grayapi.ReasonGrayResumeIgnored, func() (bool, string) {
				return e.hasEvent("Warning", grayapi.ReasonGrayResumeIgnored)
			})
		})
		atHold("held after the ignored resume")
		eventually(e.t, 15*time.Second, "the garbage resume request removed", func() (bool, string) {
			d := e.get("web")
			_, ok := d.Annotations[grayapi.ResumeAnnotation]
			return !ok, fmt.Sprint(tpGrayAnnotations(d))
		})
		e.restartController("held after the ignored resume")
		finish()

	case "status deleted", "status garbage":
		if op == "status deleted" {
			e.tamperStatus(grayapi.StatusAnnotation + "-")
		} else {
			e.tamperStatus(grayapi.StatusAnnotation + "={")
		}
		atHold("held at 50% after the " + op)
		if st := e.status(); st.Step != 0 || st.Percent != 50 || st.StableRevision != 1 || st.Revision != 2 {
			e.t.Errorf("after the %s: status revision %d stableRevision %d step %d percent %d, want 2, 1, 0, 50",
				op, st.Revision, st.StableRevision, st.Step, st.Percent)
		}
		e.restartController("held after the " + op)
		finish()

	case "strategy deleted or garbage":
		for _, args := range [][]string{
			{"annotate", "deploy/web", grayapi.StrategyAnnotation + "-"},
			{"annotate", "deploy/web", "--overwrite", grayapi.StrategyAnnotation + "=garbage"},
		} {
			e.u.fails(1, []string{"kubegray-guard", "kubectl gray"}, args...)
		}
		atHold("held after the refused strategy edits")
		e.restartController("held after the refused strategy edits")
		finish()
	}
}
