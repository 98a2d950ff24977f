package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegray/kubectl-gray/internal/testutil"
	"github.com/kubegray/kubectl-gray/pkg/deployutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
	"github.com/kubegray/kubectl-gray/plugin"
	"github.com/kubegray/kubectl-gray/test/cluster"
)

// The failing canary, in both modes: a step whose new pods do not
// become available within progressDeadlineSeconds is Degraded, says why, and
// changes nothing unless kubegray.io/on-failure asks for an abort; timed
// holds resume settled holds by themselves, never Degraded ones; a settled
// hold never times out. Numbers are written by hand: 20% of 10 is 2, 50% of
// 10 is 5.

const (
	canaryDeadlineSeconds = 10
	canaryDeadline        = canaryDeadlineSeconds * time.Second
	stableImage           = "nginx:1.25"
	goodImage             = "nginx:1.26"
	// crashImage crash-loops: every canary Deployment names it in
	// cluster.CrashLoopAnnotation from the start.
	crashImage = "nginx:1.26-crashloop"
	// holdFor is the kubegray.io/hold-for of the timed-hold scenarios.
	holdFor = 5 * time.Second
)

var (
	degradedAt20 = grayState{phase: grayapi.PhaseDegraded, newSpec: 2, oldTotal: 8, paused: true}
	heldAt20     = grayState{phase: grayapi.PhaseHeld, newSpec: 2, oldTotal: 8, paused: true}
	completeAt10 = grayState{phase: grayapi.PhaseComplete, newSpec: 10}
)

// canaryWeb is web, not gray yet: 10 replicas of stableImage with a
// progress deadline of 10s, and crashImage marked as crash-looping.
func canaryWeb(opts ...testutil.DeploymentOption) *appsv1.Deployment {
	base := testutil.Options(testutil.WithImage(stableImage), testutil.WithReplicas(10),
		testutil.WithProgressDeadline(canaryDeadlineSeconds), testutil.WithTemplateAnnotation(cluster.CrashLoopAnnotation, crashImage))
	return testutil.Deployment("web", append([]testutil.DeploymentOption{base}, opts...)...)
}

// canary is one scenario: its namespace, and a kubectl user in it.
type canary struct {
	*grayEnv
	u *pluginUser
	m canaryMode
}

func newCanary(t *testing.T, c *cluster.Cluster, m canaryMode, name string) *canary {
	e := m.env(t, c, name)
	return &canary{grayEnv: e, u: newPluginUser(t, c, e.ns), m: m}
}

// startStable creates web gray at percent and waits for revision 1 to be Complete.
func (c *canary) startStable(percent string) {
	c.t.Helper()
	c.grayEnv.startStable(canaryWeb(testutil.WithAnnotation(grayapi.PercentAnnotation, percent)))
	c.released()
}

// released waits, in alongside mode, until web is handed back to the
// built-in controller, which every scenario must end with.
func (c *canary) released() {
	c.t.Helper()
	if c.m.alongside {
		alongsideReleased(c.t, c.grayEnv, "web")
	}
}

// undo rolls a failed canary back by hand and waits for the stable revision
// (back as revision 3) to be Complete.
func (c *canary) undo() {
	c.t.Helper()
	c.u.must("gray", "undo", "web")
	c.expect("web", completeAt10)
	c.wantSizes("web", map[string]int32{"2": 0, "3": 10}, map[string]string{"2": c.image(2), "3": stableImage})
	c.released()
}

func (c *canary) image(revision int64) string {
	c.t.Helper()
	return imageOf(&c.replicaSetOf("web", revision).Spec.Template)
}

// TestCanaryFailure runs the failing-canary scenarios in instead mode, then
// in alongside mode, one control plane at a time, the scenarios of a mode in
// parallel on it.
func TestCanaryFailure(t *testing.T) { inCanaryModes(t, runCanaryFailure) }

func runCanaryFailure(t *testing.T, c *cluster.Cluster, m canaryMode) {
	t.Run("crash-looping canary is Degraded", func(t *testing.T) {
		t.Parallel()
		k := newCanary(t, c, m, "crash")
		// The issue's own repro: a plain Deployment made gray and given a
		// broken image by one command.
		k.do(createDeployment(canaryWeb()))
		waitRolledOut(t, k.client, k.ns, "web", 60*time.Second)
		k.u.must("gray", "set", "web", "20", "--image", "app="+crashImage)
		st := k.degraded(crashImage, "CrashLoopBackOff")
		v := k.u.statusJSON("web")
		crash := jsonObjects(v, "reason", "CrashLoopBackOff")
		if !anyObject(crash, func(o map[string]any) bool { return number(o, "pods") == 2 && number(o, "restarts") >= 2 }) {
			t.Errorf("kubectl gray status -o json: CrashLoopBackOff entries %v, want one counting 2 pods with restarts (at least one each)", crash)
		}
		k.wantFailureJSON(v, st)
		out := k.u.must("gray", "status", "web")
		for _, want := range []string{"Degraded", "CrashLoopBackOff", k.replicaSetOf("web", 2).Name} {
			if !strings.Contains(out, want) {
				t.Errorf("kubectl gray status web lacks %q:\n%s", want, out)
			}
		}
		k.settledNow("web", degradedAt20)
		k.undo()
	})

	t.Run("unschedulable canary is Degraded", func(t *testing.T) {
		t.Parallel()
		k := newCanary(t, c, m, "unsched")
		k.startStable("20")
		// A new template by hand, as `kubectl apply` of a new manifest would
		// bring it: pods that need a node nobody has.
		patch := fmt.Sprintf(`{"spec":{"template":{"spec":{"nodeSelector":{%q:"true"}}}}}`, cluster.UnschedulableLabel)
		k.u.must("patch", "deployment", "web", "-p", patch)
		st := k.degraded(stableImage, "Unschedulable")
		if !strings.Contains(st.Failure.Message, "0/2 nodes are available") {
			t.Errorf("failure message %q lacks the scheduler's %q", st.Failure.Message, "0/2 nodes are available")
		}
		v := k.u.statusJSON("web")
		unsched := jsonObjects(v, "reason", "Unschedulable")
		if !anyObject(unsched, func(o map[string]any) bool {
			return number(o, "pods") == 2 && strings.Contains(fmt.Sprint(o["message"]), "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector")
		}) {
			t.Errorf("kubectl gray status -o json: Unschedulable entries %v, want one counting 2 pods with the scheduler's message", unsched)
		}
		k.wantFailureJSON(v, st)
		k.settledNow("web", degradedAt20)
		k.undo()
	})

	t.Run("on-failure abort goes back to the stable revision and keeps the template", func(t *testing.T) {
		t.Parallel()
		k := newCanary(t, c, m, "abort")
		k.startStable("20")
		k.u.must("gray", "set", "web", "20", "--on-failure", "abort", "--image", "app="+crashImage)
		if got := k.get("web").Annotations[grayapi.OnFailureAnnotation]; got != "abort" {
			t.Fatalf("%s = %q after kubectl gray set --on-failure abort", grayapi.OnFailureAnnotation, got)
		}
		// Whoever waits for the rollout learns that it failed.
		if r := k.u.kubectl("gray", "status", "web", "--until", "complete", "--timeout", "90s"); r.code != plugin.ExitFailure {
			t.Errorf("want exit %d, got %s", plugin.ExitFailure, r)
		}
		st := k.abortedToStable("web", 10, crashImage, stableImage, grayapi.ReasonProgressDeadlineExceeded, m.alongside)
		h := k.history("web")
		start := first(h, 0, withImage(crashImage))
		aborted := first(h, start, inPhase(grayapi.PhaseAborted))
		if start < 0 || aborted < 0 {
			t.Fatalf("phases since the new template: %v, want Degraded then Aborted", phases(h, start))
		}
		elapsed := h[aborted].at.Sub(h[start].at)
		t.Logf("CANARY-ABORT mode=%s abortedAfterStart=%v", m.name, elapsed.Round(time.Millisecond))
		if elapsed < canaryDeadline || elapsed > 2*canaryDeadline {
			t.Errorf("aborted %v after the new template, want within %v–%v", elapsed, canaryDeadline, 2*canaryDeadline)
		}
		bad := k.replicaSetOf("web", 2)
		eventually(t, 30*time.Second, "no pod of revision 2 left", func() (bool, string) {
			pods, err := k.podsOf(bad)
			if err != nil {
				return false, err.Error()
			}
			return len(pods) == 0, fmt.Sprintf("pods of %s: %v", bad.Name, pods)
		})
		if ev := k.waitEvent("web", grayapi.ReasonGrayAborted); !strings.Contains(strings.ToLower(ev.Message), "progressdeadlineexceeded") {
			t.Errorf("GrayAborted event %q does not name the reason (the progress deadline)", ev.Message)
		}
		if !strings.Contains(st.Message, "kubectl gray retry web") {
			t.Errorf("status message %q does not say how to start again", st.Message)
		}

		// What Git holds, applied every 5 s as a self-heal does, starts nothing. Five applies
		// span 20 s, twice the progress deadline, so a sync its timer wakes falls inside them.
		git := canaryWeb(testutil.WithTypeMeta(), testutil.WithImage(crashImage),
			testutil.WithAnnotation(grayapi.PercentAnnotation, "20"), testutil.WithAnnotation(grayapi.OnFailureAnnotation, "abort"))
		git.Namespace = k.ns
		k.selfHeals("web", manifestFile(t, git), 5, 5*time.Second)

		// kubectl gray retry starts the same revision at its first hold point again; it fails
		// again the same way.
		k.u.must("gray", "retry", "web")
		k.waitEvent("web", grayapi.ReasonGrayRetried)
		eventually(t, 30*time.Second, "the retried canary back at 2", func() (bool, string) {
			rs := k.replicaSetOf("web", 2)
			return replicasOf(rs.Spec.Replicas) == 2, fmt.Sprintf("%s at %d", rs.Name, replicasOf(rs.Spec.Replicas))
		})
		k.abortedToStable("web", 10, crashImage, stableImage, grayapi.ReasonProgressDeadlineExceeded, m.alongside)

		// A new template (a new commit) is a new rollout, held at its first point.
		k.u.must("gray", "set", "web", "20", "--image", "app="+goodImage)
		k.expect("web", heldAt20)
		k.u.must("gray", "resume", "web", "--full")
		k.expect("web", completeAt10)
		k.released()
	})

	t.Run("an aborted canary's replica set deleted by hand: still aborted, retried from nothing", func(t *testing.T) {
		t.Parallel()
		k := newCanary(t, c, m, "gone")
		k.startStable("20")
		k.u.must("gray", "set", "web", "20", "--image", "app="+goodImage)
		k.expect("web", heldAt20)
		k.u.must("gray", "abort", "web")
		k.abortedToStable("web", 10, goodImage, stableImage, grayapi.ReasonAborted, m.alongside)
		// The sync that the deletion starts finds no canary beside a status saying its revision is
		// aborted. It used to crash gray-controller (a nil ReplicaSet's name read), every restart.
		k.u.must("delete", "replicaset", k.replicaSetOf("web", 2).Name)
		consistently(10*time.Second, 500*time.Millisecond, func() {
			if !c.ComponentAlive(grayControllerName) {
				t.Fatalf("gray-controller exited after the aborted canary's replica set was deleted:\n%s", c.LogTails(40))
			}
			if st := k.grayStatus(k.get("web")); st.Phase != grayapi.PhaseAborted || st.Revision != 2 {
				t.Fatalf("status %+v after the canary's replica set was deleted, want revision 2 still Aborted", st)
			}
		})
		k.wantSizes("web", map[string]int32{"1": 10}, map[string]string{"1": stableImage})
		// kubectl gray retry starts revision 2 from its first hold point, its ReplicaSet made anew.
		k.u.must("gray", "retry", "web")
		k.expect("web", heldAt20)
		k.u.must("gray", "resume", "web", "--full")
		k.expect("web", completeAt10)
		k.released()
	})

	t.Run("invalid annotations stop the rollout, never scaling", func(t *testing.T) {
		t.Parallel()
		k := newCanary(t, c, m, "invalid")
		k.startStable("20")
		sizes := func(newSpec, oldTotal int32) {
			t.Helper()
			eventually(t, 60*time.Second, fmt.Sprintf("web at %d new and %d old replicas, all available", newSpec, oldTotal), func() (bool, string) {
				got, d, msg := k.observed("web")
				return got.newSpec == newSpec && got.oldTotal == oldTotal && d.Status.AvailableReplicas == newSpec+oldTotal, msg
			})
		}
		// Complete: every replica stays on the one ReplicaSet, as upstream scales it.
		for _, bad := range []struct{ key, value, fixed string }{
			{grayapi.PercentAnnotation, "abc", grayapi.PercentAnnotation + "=20"},
			{grayapi.HoldForAnnotation, "10", grayapi.HoldForAnnotation + "-"},
			{grayapi.OnFailureAnnotation, "yes", grayapi.OnFailureAnnotation + "-"},
		} {
			k.u.must("annotate", "deployment/web", "--overwrite", bad.key+"="+bad.value)
			for _, replicas := range []int32{15, 4, 10} {
				k.u.must("scale", "deployment/web", fmt.Sprintf("--replicas=%d", replicas))
				sizes(replicas, 0)
			}
			k.u.must("annotate", "deployment/web", "--overwrite", bad.fixed)
		}
		// Held at 20%: the share is kept, 20% of 15 is 3 and of 4 is 1.
		k.u.must("gray", "set", "web", "20", "--image", "app="+goodImage)
		k.expect("web", heldAt20)
		k.u.must("annotate", "deployment/web", "--overwrite", grayapi.PercentAnnotation+"=20%%")
		k.expect("web", grayState{phase: grayapi.PhaseInvalid, newSpec: 2, oldTotal: 8, paused: true})
		k.u.must("scale", "deployment/web", "--replicas=15")
		k.expect("web", grayState{phase: grayapi.PhaseInvalid, newSpec: 3, oldTotal: 12, paused: true})
		k.u.must("scale", "deployment/web", "--replicas=4")
		k.expect("web", grayState{phase: grayapi.PhaseInvalid, newSpec: 1, oldTotal: 3, paused: true})
		// An undo asked of an Invalid rollout is refused at once, not kept for later.
		k.do(mutateDeployment("web", func(d *appsv1.Deployment) {
			d.Annotations[grayapi.ResumeAnnotation] = "2:undo"
		}))
		k.waitEvent("web", grayapi.ReasonGrayResumeIgnored)
		k.u.must("annotate", "deployment/web", "--overwrite", grayapi.PercentAnnotation+"=20")
		k.expect("web", grayState{phase: grayapi.PhaseHeld, newSpec: 1, oldTotal: 3, paused: true})
		k.u.must("gray", "resume", "web", "--full")
		k.expect("web", grayState{phase: grayapi.PhaseComplete, newSpec: 4})
		k.released()
	})

	t.Run("a status written by someone else is not trusted", func(t *testing.T) {
		t.Parallel()
		k := newCanary(t, c, m, "forged")
		k.startStable("10,30,60")
		k.u.must("gray", "set", "web", "10,30,60", "--image", "app="+goodImage)
		held := grayState{phase: grayapi.PhaseHeld, newSpec: 1, oldTotal: 9, paused: true}
		k.expect("web", held)
		// Held at 10%, forged to the third hold point: 6 of 10, two holds nobody resumed.
		forged := k.grayStatus(k.get("web"))
		forged.Step, forged.Percent, forged.Target = 2, 60, 6
		value, err := grayapi.FormatStatus(forged)
		if err != nil {
			t.Fatal(err)
		}
		r := k.u.kubectl("annotate", "deployment/web", "--overwrite", grayapi.StatusAnnotation+"="+value)
		if m.alongside {
			// The guard refuses it at admission.
			if r.code == 0 || !strings.Contains(r.stderr, grayapi.StatusAnnotation) {
				t.Errorf("the forged status was not refused with a message naming %s: %s", grayapi.StatusAnnotation, r)
			}
		} else {
			if r.code != 0 {
				t.Fatalf("kubectl annotate: %s", r)
			}
			if ev := k.waitEvent("web", grayapi.ReasonGrayStatusDistrusted); !strings.Contains(ev.Message, "kubectl-annotate") {
				t.Errorf("%s event %q does not name the writer kubectl-annotate", grayapi.ReasonGrayStatusDistrusted, ev.Message)
			}
		}
		k.stays("web", held, 5*time.Second)
		if st := k.grayStatus(k.get("web")); st.Step != 0 || st.Percent != 10 {
			t.Errorf("status after the forgery: step %d at %d%%, want step 0 at 10%%", st.Step, st.Percent)
		}
		k.u.must("gray", "resume", "web", "--full")
		k.expect("web", completeAt10)
		k.released()
	})

	t.Run("a status written by someone else does not time the hold", func(t *testing.T) {
		t.Parallel()
		k := newCanary(t, c, m, "forged-clock")
		k.startStable("10,30")
		k.u.must("gray", "set", "web", "10,30", "--hold-for", "1h", "--image", "app="+goodImage)
		held := grayState{phase: grayapi.PhaseHeld, newSpec: 1, oldTotal: 9, paused: true}
		k.expect("web", held)
		// The same hold, said to have settled two hours ago with a hold of one second: it once
		// moved the canary on at once, by the clocks of a status the controller had set aside.
		forged := k.grayStatus(k.get("web"))
		forged.SettledAt = new(metav1.NewTime(time.Now().Add(-2 * time.Hour)))
		forged.HoldFor = &metav1.Duration{Duration: time.Second}
		value, err := grayapi.FormatStatus(forged)
		if err != nil {
			t.Fatal(err)
		}
		r := k.u.kubectl("annotate", "deployment/web", "--overwrite", grayapi.StatusAnnotation+"="+value)
		if m.alongside {
			if r.code == 0 || !strings.Contains(r.stderr, grayapi.StatusAnnotation) {
				t.Errorf("the forged status was not refused with a message naming %s: %s", grayapi.StatusAnnotation, r)
			}
		} else {
			if r.code != 0 {
				t.Fatalf("kubectl annotate: %s", r)
			}
			k.waitEvent("web", grayapi.ReasonGrayStatusDistrusted)
		}
		k.stays("web", held, 5*time.Second)
		if st := k.grayStatus(k.get("web")); st.Step != 0 || st.HoldFor == nil || st.HoldFor.Duration != time.Hour {
			t.Errorf("status after the forgery: step %d, holdFor %v; want step 0 and the hour of kubegray.io/hold-for recorded", st.Step, st.HoldFor)
		}
		k.u.must("gray", "resume", "web", "--full")
		k.expect("web", completeAt10)
		k.released()
	})

	t.Run("hold-for resumes settled holds by itself", func(t *testing.T) {
		t.Parallel()
		k := newCanary(t, c, m, "holdfor")
		k.startStable("20,50")
		k.u.must("gray", "set", "web", "20,50", "--hold-for", "5s", "--image", "app="+goodImage)
		if got := k.get("web").Annotations[grayapi.HoldForAnnotation]; got != "5s" {
			t.Fatalf("%s = %q after kubectl gray set --hold-for 5s", grayapi.HoldForAnnotation, got)
		}
		k.u.must("gray", "status", "web", "--until", "complete", "--timeout", "90s")
		k.settledNow("web", completeAt10)
		k.wantSizes("web", map[string]int32{"1": 0, "2": 10}, map[string]string{"1": stableImage, "2": goodImage})

		h := k.history("web")
		start := first(h, 0, withImage(goodImage))
		for _, s := range h[max(start, 0):] {
			if r, ok := s.d.Annotations[grayapi.ResumeAnnotation]; ok {
				t.Errorf("a resume was requested (%s=%s): the holds must end by themselves", grayapi.ResumeAnnotation, r)
			}
		}
		from := start
		for step, target := range []int32{2, 5} {
			held := first(h, from, func(s seenStatus) bool {
				return s.ok && s.st.Phase == grayapi.PhaseHeld && s.st.Revision == 2 && s.st.Step == int32(step) && s.st.Target == target
			})
			next := first(h, held, func(s seenStatus) bool { return s.ok && s.st.Revision == 2 && s.st.Step > int32(step) })
			if start < 0 || held < 0 || next < 0 {
				t.Fatalf("phases since the new template: %v, want Held at step %d then step %d", phases(h, start), step, step+1)
			}
			settled := h[held].st.SettledAt
			waited := h[next].at.Sub(h[held].at)
			t.Logf("CANARY-HOLDFOR mode=%s step=%d heldFor=%v settledAt=%v", m.name, step, waited.Round(time.Millisecond), settled)
			// settledAt has whole seconds, so the hold may end up to a second
			// short of 5s after it was first seen, never before settledAt+5s.
			if settled == nil || h[next].at.Before(settled.Add(holdFor)) || waited < holdFor-time.Second || waited > holdFor+5*time.Second {
				t.Errorf("step %d held %v (settledAt %v, resumed at %v), want %v counted from settledAt", step, waited, settled,
					h[next].at.Format(timeLayout), holdFor)
			}
			from = next
		}
		k.released()
	})

	t.Run("hold-for never resumes a Degraded step", func(t *testing.T) {
		t.Parallel()
		k := newCanary(t, c, m, "holdfor-degraded")
		k.startStable("20,50")
		k.u.must("gray", "set", "web", "20,50", "--hold-for", "5s", "--image", "app="+crashImage)
		k.u.fails(plugin.ExitFailure, []string{"is Degraded"}, "gray", "status", "web", "--until", "held", "--timeout", "60s")
		k.settledNow("web", degradedAt20)
		k.stays("web", degradedAt20, holdFor+3*time.Second)
		h := k.history("web")
		start := first(h, 0, withImage(crashImage))
		if i := first(h, start, func(s seenStatus) bool {
			return s.ok && s.st.Revision == 2 && (s.st.Phase == grayapi.PhaseHeld || s.st.Step > 0)
		}); i >= 0 {
			t.Errorf("the Degraded step was held or advanced: phases %v", phases(h, start))
		}
		k.undo()
	})

	t.Run("a settled hold outlasting the deadline stays Held", func(t *testing.T) {
		t.Parallel()
		k := newCanary(t, c, m, "longhold")
		k.startStable("20")
		k.u.must("gray", "set", "web", "20", "--image", "app="+goodImage)
		k.u.must("gray", "status", "web", "--until", "held", "--timeout", "60s")
		k.settledNow("web", heldAt20)
		k.stays("web", heldAt20, canaryDeadline+5*time.Second)
		k.wantHeldCondition("web", corev1.ConditionTrue, grayapi.ReasonHoldPointReached)
		h := k.history("web")
		if i := first(h, 0, inPhase(grayapi.PhaseDegraded)); i >= 0 {
			t.Errorf("a settled hold became Degraded: phases %v", phases(h, 0))
		}
		if evs := k.events("web", grayapi.ReasonGrayDegraded); len(evs) > 0 {
			t.Errorf("GrayDegraded events on a settled hold: %+v", evs)
		}
		k.u.must("gray", "status", "web", "--until", "held", "--timeout", "5s")
		k.u.must("gray", "resume", "web", "--full")
		k.expect("web", completeAt10)
		k.released()
	})
}

// degraded waits with `kubectl gray status --until held` for the step that
// began with the template change (to image) to be Degraded, which must exit 1,
// and checks what the controller reported: the phase right then, the
// sizes, the status, the GrayHeld condition, the GrayDegraded event and how
// long after the progress deadline all this came. reason is the pods' reason
// the failure must quote. It returns the status.
func (c *canary) degraded(image, reason string) grayapi.Status {
	t := c.t
	t.Helper()
	c.u.fails(plugin.ExitFailure, []string{"is Degraded", reason}, "gray", "status", "web", "--until", "held", "--timeout", "60s")
	returned := time.Now()
	c.settledNow("web", degradedAt20)
	c.wantSizes("web", map[string]int32{"1": 8, "2": 2}, map[string]string{"1": stableImage, "2": image})
	rs := c.replicaSetOf("web", 2)

	d := c.get("web")
	st := c.grayStatus(d)
	if st.Revision != 2 || st.StableRevision != 1 || st.Step != 0 || st.Percent != 20 || st.Target != 2 {
		t.Errorf("Degraded status: revision %d stable %d step %d percent %d target %d, want 2, 1, 0, 20, 2",
			st.Revision, st.StableRevision, st.Step, st.Percent, st.Target)
	}
	if f := st.Failure; f == nil || f.Reason != grayapi.ReasonProgressDeadlineExceeded || f.RolledBackFrom != 0 ||
		!strings.Contains(f.Message, rs.Name) || !strings.Contains(f.Message, "0 of 2") || !strings.Contains(f.Message, reason) {
		t.Fatalf("failure %+v, want %s naming replicaset %s, 0 of 2 available and %s", f, grayapi.ReasonProgressDeadlineExceeded, rs.Name, reason)
	}
	c.wantHeldCondition("web", corev1.ConditionFalse, grayapi.ReasonProgressDeadlineExceeded)
	ev := c.waitEvent("web", grayapi.ReasonGrayDegraded)
	if ev.Type != corev1.EventTypeWarning || !strings.Contains(ev.Message, rs.Name) {
		t.Errorf("GrayDegraded event %s %q, want a Warning naming replicaset %s", ev.Type, ev.Message, rs.Name)
	}

	// When: the step began with the template write, its deadline ran out
	// 10s after its last progress (none came: no pod ever became available).
	h := c.history("web")
	stable := c.replicaSetOf("web", 1).Spec.Template
	start := first(h, 0, func(s seenStatus) bool { return !deployutil.EqualIgnoreHash(&s.d.Spec.Template, &stable) })
	deg := first(h, start, inPhase(grayapi.PhaseDegraded))
	if start < 0 || deg < 0 {
		t.Fatalf("phases since the new template: %v, want Degraded", phases(h, start))
	}
	elapsed := h[deg].at.Sub(h[start].at)
	if elapsed < canaryDeadline || elapsed > 2*canaryDeadline {
		t.Errorf("Degraded %v after the new template, want within %v–%v", elapsed, canaryDeadline, 2*canaryDeadline)
	}
	if lag := returned.Sub(h[deg].at); lag > 5*time.Second {
		t.Errorf("kubectl gray status --until held returned %v after the Degraded status was written", lag)
	}
	p := h[deg].st.Progress
	if p == nil || p.Available != 0 {
		t.Fatalf("Degraded status has progress %+v, want the step's start with 0 available", p)
	}
	expiry := p.At.Add(canaryDeadline)
	t.Logf("CANARY-DEGRADED mode=%s reason=%s afterStart=%v afterDeadline=%v eventAfterDeadline=%v progressAt=%s",
		c.m.name, reason, elapsed.Round(time.Millisecond), h[deg].at.Sub(expiry).Round(time.Millisecond),
		ev.FirstTimestamp.Sub(expiry), p.At.UTC().Format(time.RFC3339))
	if h[deg].at.Before(expiry) {
		t.Errorf("Degraded at %s, before the deadline %s (progress at %s + %v)", h[deg].at.Format(timeLayout),
			expiry.Format(timeLayout), p.At.Format(timeLayout), canaryDeadline)
	}
	return st
}

// wantFailureJSON checks that `kubectl gray status -o json` carries the
// controller's failure.
func (c *canary) wantFailureJSON(v any, st grayapi.Status) {
	c.t.Helper()
	f := jsonObjects(v, "message", st.Failure.Message)
	if !anyObject(f, func(o map[string]any) bool { return o["reason"] == grayapi.ReasonProgressDeadlineExceeded }) {
		c.t.Errorf("kubectl gray status -o json lacks the failure %s: %q (found %v)", grayapi.ReasonProgressDeadlineExceeded, st.Failure.Message, f)
	}
}
