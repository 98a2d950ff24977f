package e2e

// A rollback always lands on the stable revision: the shapes that went wrong (maxSurge 0, high
// percents, two replicas, an undo after Degraded, an undo after a scale), each on a Deployment
// created plain, rolled out by the built-in controller (or gray-controller in instead mode) and
// opted in afterwards with its new image in the same command, as most are.

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kubegray/kubectl-gray/internal/testutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
	"github.com/kubegray/kubectl-gray/plugin"
	"github.com/kubegray/kubectl-gray/test/cluster"
)

// brokenImage crash-loops in every rollback scenario (cluster.CrashLoopAnnotation).
const brokenImage = "nginx:broken"

// rollbackCase is one Deployment's shape and what is done to it.
type rollbackCase struct {
	replicas             int32
	maxSurge, maxUnavail intstr.IntOrString
	percent              string
	deadline             int32
	onFailure            string
	image                string
}

// TestRollback runs the cases in instead and alongside mode, each on a control plane of its own.
func TestRollback(t *testing.T) {
	for _, m := range canaryModes {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			c := m.start(t)
			t.Run("cases", func(t *testing.T) { runRollbackCases(t, c, m) })
		})
	}
}

// start creates web plain on stableImage, waits for it, and opts it in with the case's image in
// one `kubectl gray set`.
func (rc rollbackCase) start(k *canary) {
	k.t.Helper()
	d := testutil.Deployment("web", testutil.WithImage(stableImage), testutil.WithReplicas(rc.replicas),
		testutil.WithRollingUpdate(rc.maxSurge, rc.maxUnavail), testutil.WithProgressDeadline(rc.deadline),
		testutil.WithTemplateAnnotation(cluster.CrashLoopAnnotation, brokenImage))
	k.do(createDeployment(d))
	waitRolledOut(k.t, k.client, k.ns, "web", 60*time.Second)
	args := []string{"gray", "set", "web", rc.percent, "--image", "app=" + rc.image}
	if rc.onFailure != "" {
		args = append(args, "--on-failure", rc.onFailure)
	}
	k.u.must(args...)
}

// landsOnStable waits for the rollback to complete and checks where it landed: every replica on
// the stable image (revision 1's ReplicaSet, renumbered 3), the canary at 0, failure.rolledBackFrom
// 2, the way back never held, and the Deployment released in alongside mode.
func (c *canary) landsOnStable(rc rollbackCase, wantReason string, bound time.Duration, since time.Time) {
	c.t.Helper()
	replicas := replicasOf(c.get("web").Spec.Replicas)
	c.expect("web", grayState{phase: grayapi.PhaseComplete, newSpec: replicas})
	took := time.Since(since)
	c.wantSizes("web", map[string]int32{"2": 0, "3": replicas}, map[string]string{"2": rc.image, "3": stableImage})
	st := c.grayStatus(c.get("web"))
	if st.Revision != 3 || st.StableRevision != 3 || st.Failure == nil || st.Failure.RolledBackFrom != 2 || st.Failure.Reason != wantReason {
		c.t.Fatalf("status after the rollback: %+v, want revision 3 stable 3 and revision 2 rolled back (%s); statuses:\n%s",
			st, wantReason, statusLines(c.history("web")))
	}
	h := c.history("web")
	back := first(h, 0, func(s seenStatus) bool { return s.ok && s.st.Revision == 3 })
	if back < 0 {
		c.t.Fatalf("no status of revision 3: %v", phases(h, 0))
	}
	if i := first(h, back, inPhase(grayapi.PhaseHeld)); i >= 0 {
		c.t.Fatalf("the rollback held on its way back: %v", phases(h, back))
	}
	// An undo of an aborted rollout finds the stable revision at every replica already, and
	// may be Complete in its first status.
	if p := h[back].st.Phase; p != grayapi.PhaseRolledBack && p != grayapi.PhaseComplete {
		c.t.Errorf("the rollback started as %s, want RolledBack (or Complete at once): %v", p, phases(h, back))
	}
	c.t.Logf("ROLLBACK mode=%s replicas=%d completedAfter=%v", c.m.name, replicas, took.Round(time.Millisecond))
	if took > bound {
		c.t.Errorf("the rollback took %v, more than %v", took, bound)
	}
	rc.released(c)
}

// abortsToStable waits for the failed canary to be aborted (the stable revision back at every
// replica, the template kept), within bound of since, and then undoes it with kubectl gray undo,
// which lands on the stable revision like any undo.
func (c *canary) abortsToStable(rc rollbackCase, bound time.Duration, since time.Time) {
	c.t.Helper()
	c.abortedToStable("web", rc.replicas, rc.image, stableImage, grayapi.ReasonProgressDeadlineExceeded, c.m.alongside)
	took := time.Since(since)
	c.t.Logf("ABORT mode=%s replicas=%d abortedAfter=%v", c.m.name, rc.replicas, took.Round(time.Millisecond))
	if took > bound {
		c.t.Errorf("the abort took %v, more than %v", took, bound)
	}
	began := time.Now()
	c.u.must("gray", "undo", "web")
	c.landsOnStable(rc, grayapi.ReasonProgressDeadlineExceeded, 60*time.Second, began)
}

// released waits, in alongside mode, until web is handed back with the case's own strategy.
func (rc rollbackCase) released(k *canary) {
	k.t.Helper()
	if !k.m.alongside {
		return
	}
	eventually(k.t, 60*time.Second, "web released", func() (bool, string) {
		d := k.get("web")
		_, taken := d.Annotations[grayapi.StrategyAnnotation]
		ru := d.Spec.Strategy.RollingUpdate
		ok := !taken && !d.Spec.Paused && ru != nil && ru.MaxSurge.String() == rc.maxSurge.String() && ru.MaxUnavailable.String() == rc.maxUnavail.String()
		return ok, fmt.Sprintf("paused %t strategy %+v %s=%q", d.Spec.Paused, d.Spec.Strategy, grayapi.StrategyAnnotation, d.Annotations[grayapi.StrategyAnnotation])
	})
}

func runRollbackCases(t *testing.T, c *cluster.Cluster, m canaryMode) {
	zero, one := intstr.FromInt32(0), intstr.FromInt32(1)
	run := func(name string, body func(k *canary)) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			body(newCanary(t, c, m, strings.Trim(strings.Fields(name)[0], ",")))
		})
	}

	run("r2 maxSurge 0 at 34%, Degraded, then kubectl gray undo", func(k *canary) {
		rc := rollbackCase{replicas: 2, maxSurge: zero, maxUnavail: one, percent: "34", deadline: 8, image: brokenImage}
		rc.start(k)
		k.u.fails(plugin.ExitFailure, []string{"is Degraded"}, "gray", "status", "web", "--until", "held", "--timeout", "60s")
		k.settledNow("web", grayState{phase: grayapi.PhaseDegraded, newSpec: 1, oldTotal: 1, paused: true})
		began := time.Now()
		k.u.must("gray", "undo", "web")
		k.landsOnStable(rc, grayapi.ReasonProgressDeadlineExceeded, 60*time.Second, began)
	})

	run("r10 maxSurge 0 at 75%, on-failure abort", func(k *canary) {
		rc := rollbackCase{replicas: 10, maxSurge: zero, maxUnavail: intstr.FromString("25%"), percent: "75", deadline: 8, onFailure: "abort", image: brokenImage}
		began := time.Now()
		rc.start(k)
		k.abortsToStable(rc, 8*time.Second+90*time.Second, began)
	})

	// "rollback" is the earlier name of on-failure abort, and still means it.
	run("r8 maxSurge 0 at 92%, on-failure rollback", func(k *canary) {
		rc := rollbackCase{replicas: 8, maxSurge: zero, maxUnavail: one, percent: "92", deadline: 8, onFailure: "rollback", image: brokenImage}
		began := time.Now()
		rc.start(k)
		k.abortsToStable(rc, 8*time.Second+90*time.Second, began)
	})

	run("r4 maxSurge 100% at 40%, held, then kubectl gray undo", func(k *canary) {
		rc := rollbackCase{replicas: 4, maxSurge: intstr.FromString("100%"), maxUnavail: zero, percent: "40", deadline: 600, image: goodImage}
		rc.start(k)
		k.u.must("gray", "status", "web", "--until", "held", "--timeout", "60s")
		k.settledNow("web", grayState{phase: grayapi.PhaseHeld, newSpec: 2, oldTotal: 2, paused: true})
		began := time.Now()
		k.u.must("gray", "undo", "web")
		// Undone by hand before it failed: waiting for completion is not a failure.
		k.u.must("gray", "status", "web", "--until", "complete", "--timeout", "60s")
		k.landsOnStable(rc, grayapi.ReasonRolledBack, 60*time.Second, began)
	})

	run("r5 at 81%, scaled to 15 while held, then kubectl gray undo", func(k *canary) {
		rc := rollbackCase{replicas: 5, maxSurge: intstr.FromString("25%"), maxUnavail: intstr.FromString("25%"), percent: "81", deadline: 600, image: goodImage}
		rc.start(k)
		k.u.must("gray", "status", "web", "--until", "held", "--timeout", "60s")
		k.settledNow("web", grayState{phase: grayapi.PhaseHeld, newSpec: 4, oldTotal: 1, paused: true})
		k.u.must("scale", "deployment/web", "--replicas=15")
		k.expect("web", grayState{phase: grayapi.PhaseHeld, newSpec: 13, oldTotal: 2, paused: true})
		began := time.Now()
		k.u.must("gray", "undo", "web")
		k.landsOnStable(rc, grayapi.ReasonRolledBack, 90*time.Second, began)
	})

	run("complete, then kubectl rollout undo through the holds of the way back", func(k *canary) {
		rc := rollbackCase{replicas: 5, maxSurge: zero, maxUnavail: intstr.FromString("25%"), percent: "7,45,64", deadline: 600, image: goodImage}
		rc.start(k)
		k.u.must("gray", "status", "web", "--until", "held", "--timeout", "60s")
		k.u.must("gray", "resume", "web", "--full")
		k.u.must("gray", "status", "web", "--until", "complete", "--timeout", "90s")
		rc.released(k)
		// Revision 1 is not the stable one any more: going back to it is a new rollout, held
		// at every point, and released once it completes.
		k.u.must("rollout", "undo", "deployment/web")
		k.u.must("gray", "status", "web", "--until", "held", "--timeout", "60s")
		k.u.must("gray", "resume", "web", "--full")
		k.u.must("gray", "status", "web", "--until", "complete", "--timeout", "90s")
		k.expect("web", grayState{phase: grayapi.PhaseComplete, newSpec: 5})
		if got := imageOf(&k.get("web").Spec.Template); got != stableImage {
			k.t.Fatalf("web runs %s after kubectl rollout undo, want %s", got, stableImage)
		}
		rc.released(k)
		if st := k.grayStatus(k.get("web")); st.StableRevision != st.Revision {
			k.t.Fatalf("status %+v: the completed revision is not the stable one", st)
		}
		k.t.Logf("statuses:\n%s", statusLines(k.history("web")))
	})
}
