package e2e

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kubegray/kubectl-gray/internal/testutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
	"github.com/kubegray/kubectl-gray/plugin"
	"github.com/kubegray/kubectl-gray/test/cluster"
)

// The pods gate, in both modes (docs/gates.md): a hold-for waits for the gate's passes, a canary
// whose containers restart while Ready fails it and on-failure aborts it, a dry run shows a
// failure without acting on it, and a stable revision restarting as often as the canary keeps
// the canary from failing. Each scenario defines the gate in a labelled ConfigMap of its
// namespace, measured every 2s (5s where kwok's pace under load matters).

// restartImage is the image whose containers restart every 2s while Ready
// (cluster.RestartWhileReadyAnnotation).
const restartImage = "nginx:1.26-restarts"

// gateInterval is the interval of every gate defined here.
const gateInterval = 2 * time.Second

// flapImage is the image whose containers fall out of readiness for a second every three
// (cluster.FlapReadinessAnnotation).
const flapImage = "nginx:1.26-flaps"

// defineGate creates ConfigMap gates in c's namespace, labelled as gate definitions, with key
// pods holding def.
func (c *canary) defineGate(def string) {
	c.t.Helper()
	c.defineGatesIn(c.ns, "gates", map[string]string{grayapi.PodsGate: def})
}

// defineGatesIn creates ConfigMap cm in namespace ns, labelled as gate definitions, with defs.
func (c *canary) defineGatesIn(ns, cm string, defs map[string]string) {
	c.t.Helper()
	obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: cm, Labels: map[string]string{grayapi.GatesLabel: grayapi.GatesLabelValue}}, Data: defs}
	if _, err := c.client.CoreV1().ConfigMaps(ns).Create(context.Background(), obj, metav1.CreateOptions{}); err != nil {
		c.t.Fatal(err)
	}
}

// startGated starts web at 20% on stableImage with defs defined in ConfigMap gates of its
// namespace and the gates names in kubegray.io/gates, with more annotations (key=value).
func (c *canary) startGated(defs map[string]string, names string, more ...string) {
	c.t.Helper()
	c.startStable("20")
	c.defineGatesIn(c.ns, "gates", defs)
	c.u.must(append([]string{"annotate", "deployment", "web", grayapi.GatesAnnotation + "=" + names}, more...)...)
}

// startRestartable starts web at 20% on stableImage, whose pods restart while Ready once they
// run restartImage, and names the pods gate in key (gates or gates-dry-run), defined to compare
// restarts per pod, every 2s, with more fields.
func (c *canary) startRestartable(key, more string) {
	c.t.Helper()
	c.grayEnv.startStable(canaryWeb(testutil.WithAnnotation(grayapi.PercentAnnotation, "20"),
		testutil.WithTemplateAnnotation(cluster.RestartWhileReadyAnnotation, restartImage)))
	c.released()
	c.defineGate("provider: pods\nsuccess: canary.restartsPerPod <= stable.restartsPerPod\ninterval: 2s\n" + more)
	c.u.must("annotate", "deployment", "web", key+"=pods")
}

// gated reports whether a seen status is revision 2 at step with a pods gate record matching.
func gated(step int32, match func(grayapi.GateStatus) bool) func(seenStatus) bool {
	return func(s seenStatus) bool {
		return s.ok && s.st.Revision == 2 && s.st.Step == step && len(s.st.Gates) == 1 && s.st.Gates[0].Name == grayapi.PodsGate && match(s.st.Gates[0])
	}
}

func TestGates(t *testing.T) { inCanaryModes(t, runGates) }

func runGates(t *testing.T, c *cluster.Cluster, m canaryMode) {
	t.Run("hold-for waits for the pods gate's passes", func(t *testing.T) {
		t.Parallel()
		k := newCanary(t, c, m, "gate-pass")
		k.startStable("20,50")
		k.defineGate("provider: pods\nsuccess: canary.restartsPerPod <= stable.restartsPerPod\ninterval: 2s\ncount: 3\n")
		k.u.must("annotate", "deployment", "web", grayapi.GatesAnnotation+"=pods")
		k.u.must("gray", "set", "web", "20,50", "--hold-for", "5s", "--image", "app="+goodImage)
		k.u.must("gray", "status", "web", "--until", "complete", "--timeout", "120s")
		k.settledNow("web", completeAt10)

		h := k.history("web")
		start := first(h, 0, withImage(goodImage))
		from := start
		for step := range int32(2) {
			held := first(h, from, func(s seenStatus) bool {
				return s.ok && s.st.Phase == grayapi.PhaseHeld && s.st.Revision == 2 && s.st.Step == step
			})
			two := first(h, held, gated(step, func(g grayapi.GateStatus) bool { return g.Passes == 2 && g.Last == grayapi.GatePass }))
			next := first(h, held, func(s seenStatus) bool { return s.ok && s.st.Revision == 2 && s.st.Step > step })
			if start < 0 || held < 0 || next < 0 {
				t.Fatalf("phases since the new template: %v, want Held at step %d then step %d", phases(h, start), step, step+1)
			}
			if two < 0 || two > next {
				t.Errorf("step %d was left without being seen with 2 passes of the pods gate first:\n%s", step, statusLines(h[held:next+1]))
			}
			// The window opens when the hold settles; the passes come 2s, 4s and 6s later, so the
			// 5s hold-for ends no sooner than 6s after settledAt (whole seconds, never late).
			settled := h[held].st.SettledAt
			waited := h[next].at.Sub(settled.Time)
			t.Logf("GATE-PASS mode=%s step=%d resumedAfterSettled=%v", m.name, step, waited.Round(time.Millisecond))
			if waited < 3*gateInterval {
				t.Errorf("step %d left %v after it settled, before the gate's third pass (%v)", step, waited, 3*gateInterval)
			}
			from = next
		}
		checkGateRecords(t, h, gateInterval)
		if got := k.events("web", grayapi.ReasonGrayGatePassed); len(got) != 2 {
			t.Errorf("%s events %v, want 2 (one per hold); statuses:\n%s", grayapi.ReasonGrayGatePassed, got, statusLines(h[max(start, 0):]))
		}
		k.released()
	})

	t.Run("a canary restarting while Ready fails its gate and is aborted", func(t *testing.T) {
		t.Parallel()
		k := newCanary(t, c, m, "gate-fail")
		k.startRestartable(grayapi.GatesAnnotation, "count: 5\n")
		k.u.must("gray", "set", "web", "20", "--on-failure", "abort", "--image", "app="+restartImage)
		st := k.abortedToStable("web", 10, restartImage, stableImage, grayapi.ReasonGateFailed, m.alongside)
		if !strings.Contains(st.Failure.Message, "gate pods failed") || !strings.Contains(st.Failure.Message, "restarts") {
			t.Errorf("failure message %q does not name the gate and what it measured", st.Failure.Message)
		}
		if ev := k.waitEvent("web", grayapi.ReasonGrayGateFailed); ev.Type != corev1.EventTypeWarning {
			t.Errorf("%s event is a %s, want a Warning", grayapi.ReasonGrayGateFailed, ev.Type)
		}
		h := k.history("web")
		if first(h, 0, func(s seenStatus) bool { return s.ok && s.st.Revision == 2 && s.st.Step > 0 }) >= 0 {
			t.Errorf("the failing canary moved on: phases %v", phases(h, 0))
		}
		// A new template is a new hold; a person's resume wins over its gates and says so.
		k.u.must("gray", "set", "web", "20", "--image", "app="+goodImage)
		k.expect("web", heldAt20)
		k.u.must("gray", "resume", "web", "--full")
		k.expect("web", completeAt10)
		resumed := k.events("web", grayapi.ReasonGrayResumed)
		if len(resumed) == 0 || !strings.Contains(resumed[len(resumed)-1].Message, "gates not passed: pods") {
			t.Errorf("%s events %v: the last does not say which gates had not passed", grayapi.ReasonGrayResumed, resumed)
		}
		k.released()
	})

	t.Run("a good canary's abort keeps maxUnavailable with maxSurge 0", func(t *testing.T) {
		t.Parallel()
		k := newCanary(t, c, m, "gate-abort-nosurge")
		// The randomized suite's failing-13 (seed 20261260): 8 replicas, maxSurge 0,
		// maxUnavailable 2, held at 77% (7 canary pods, all ready), its gate fails and on-failure
		// aborts it. The recorder fails the scenario if fewer than 6 pods are ever available.
		k.grayEnv.startStable(canaryWeb(testutil.WithReplicas(8), testutil.WithRollingUpdate(intstr.FromInt32(0), intstr.FromInt32(2)),
			testutil.WithAnnotation(grayapi.PercentAnnotation, "77"), testutil.WithTemplateAnnotation(cluster.RestartWhileReadyAnnotation, restartImage)))
		released := func() {
			if m.alongside {
				alongsideReleasedTo(t, k.grayEnv, "web", "0", "2")
			}
		}
		released()
		k.defineGate("provider: pods\nsuccess: canary.restartsPerPod <= stable.restartsPerPod\ninterval: 2s\n")
		k.u.must("annotate", "deployment", "web", grayapi.GatesAnnotation+"=pods")
		k.u.must("gray", "set", "web", "77", "--on-failure", "abort", "--image", "app="+restartImage)
		k.abortedToStable("web", 8, restartImage, stableImage, grayapi.ReasonGateFailed, m.alongside)
		k.u.must("gray", "undo", "web")
		k.expect("web", grayState{phase: grayapi.PhaseComplete, newSpec: 8})
		released()
	})

	t.Run("an OOMKilled canary fails a gate on OOMKills", func(t *testing.T) {
		t.Parallel()
		k := newCanary(t, c, m, "gate-oom")
		k.grayEnv.startStable(canaryWeb(testutil.WithAnnotation(grayapi.PercentAnnotation, "20"),
			testutil.WithTemplateAnnotation(cluster.RestartWhileReadyAnnotation, restartImage),
			testutil.WithTemplateAnnotation(cluster.RestartReasonAnnotation, "OOMKilled")))
		k.released()
		k.defineGate("provider: pods\nsuccess: canary.oomKills == 0\ninterval: 2s\n")
		k.u.must("annotate", "deployment", "web", grayapi.GatesAnnotation+"=pods")
		k.u.must("gray", "set", "web", "20", "--image", "app="+restartImage)
		k.u.fails(plugin.ExitFailure, []string{"is Degraded", "gate pods failed", "not canary.oomKills == 0"},
			"gray", "status", "web", "--until", "complete", "--timeout", "60s")
		st := k.grayStatus(k.get("web"))
		counted := regexp.MustCompile(`canary: \d+ pods, \d+ restarts \([0-9.]+/pod\), [1-9]\d* OOMKilled`)
		if st.Failure == nil || st.Failure.Reason != grayapi.ReasonGateFailed || !counted.MatchString(st.Failure.Message) {
			t.Errorf("failure %+v, want GateFailed with the canary's OOMKills counted", st.Failure)
		}
		k.undo()
	})

	t.Run("a dry-run gate that fails is shown and changes nothing", func(t *testing.T) {
		t.Parallel()
		k := newCanary(t, c, m, "gate-dry")
		k.startRestartable(grayapi.GatesDryRunAnnotation, "")
		k.u.must("gray", "set", "web", "20", "--hold-for", "8s", "--image", "app="+restartImage)
		k.u.must("gray", "status", "web", "--until", "complete", "--timeout", "120s")
		k.settledNow("web", completeAt10)
		h := k.history("web")
		start := first(h, 0, withImage(restartImage))
		if first(h, start, gated(0, func(g grayapi.GateStatus) bool { return g.DryRun && g.Fails >= 1 })) < 0 {
			t.Errorf("no status showed the dry-run gate failing:\n%s", statusLines(h[max(start, 0):]))
		}
		if i := first(h, start, inPhase(grayapi.PhaseDegraded)); i >= 0 {
			t.Errorf("a dry-run gate made the rollout Degraded: phases %v", phases(h, start))
		}
		for _, ev := range k.events("web", grayapi.ReasonGrayGateFailed) {
			if ev.Type != corev1.EventTypeNormal || !strings.HasPrefix(ev.Message, "dry run: ") {
				t.Errorf("dry-run gate event %s %q, want a Normal event saying dry run", ev.Type, ev.Message)
			}
		}
		k.released()
	})

	t.Run("a gate defined nowhere stops the rollout until its ConfigMap comes", func(t *testing.T) {
		t.Parallel()
		k := newCanary(t, c, m, "gate-undefined")
		k.startStable("20")
		k.u.must("annotate", "deployment", "web", grayapi.GatesAnnotation+"=crashes")
		k.u.must("gray", "set", "web", "20", "--image", "app="+goodImage)
		d := k.expect("web", grayState{phase: grayapi.PhaseInvalid, newSpec: 0, oldTotal: 10, paused: m.alongside})
		if msg := k.grayStatus(d).Message; !strings.Contains(msg, `gate "crashes" is defined nowhere`) || !strings.Contains(msg, "namespace "+k.ns) {
			t.Errorf("Invalid message %q does not name the gate and where it looked", msg)
		}
		// The ConfigMap alone (no edit of the Deployment) lets the rollout go on.
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "more-gates", Labels: map[string]string{grayapi.GatesLabel: grayapi.GatesLabelValue}},
			Data: map[string]string{"crashes": "provider: pods\nsuccess: canary.crashLooping == 0\ninterval: 2s\ncount: 1\n"}}
		if _, err := k.client.CoreV1().ConfigMaps(k.ns).Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		k.expect("web", heldAt20)
		k.u.must("gray", "resume", "web", "--full")
		k.expect("web", completeAt10)
		k.released()
	})

	t.Run("a stable revision restarting as often keeps the canary from failing", func(t *testing.T) {
		t.Parallel()
		k := newCanary(t, c, m, "gate-stable")
		// Both revisions run the restarting image: the stable's pods restart as the canary's do.
		k.grayEnv.startStable(canaryWeb(testutil.WithImage(restartImage), testutil.WithAnnotation(grayapi.PercentAnnotation, "20"),
			testutil.WithTemplateAnnotation(cluster.RestartWhileReadyAnnotation, restartImage)))
		k.released()
		// Restarts count from the window's start: 5s and 10s of them even out kwok's uneven pace
		// under load (a 2s window once saw the canary's pods restart and the stable's not yet).
		// A quiet stable revision (0/pod) would fail this canary (about 2.5/pod at 5s).
		k.defineGate("provider: pods\nsuccess: canary.restartsPerPod <= stable.restartsPerPod * 1.5 + 1.0\ninterval: 5s\ncount: 2\n")
		k.u.must("annotate", "deployment", "web", grayapi.GatesAnnotation+"=pods", grayapi.HoldForAnnotation+"=5s")
		k.u.must("patch", "deployment", "web", "-p", `{"spec":{"template":{"metadata":{"annotations":{"example.com/build":"2"}}}}}`)
		k.u.must("gray", "status", "web", "--until", "complete", "--timeout", "120s")
		h := k.history("web")
		if first(h, 0, gated(0, func(g grayapi.GateStatus) bool { return g.Passes == 1 })) < 0 {
			t.Errorf("no status showed the pods gate passing:\n%s", statusLines(h))
		}
		if i := first(h, 0, inPhase(grayapi.PhaseDegraded)); i >= 0 {
			t.Errorf("the canary failed although the stable revision restarts as often: phases %v", phases(h, 0))
		}
		k.released()
	})

	t.Run("a canary flapping readiness fails a cluster-wide gate; its namespace's definition wins", func(t *testing.T) {
		t.Parallel()
		k := newCanary(t, c, m, "gate-flap")
		// Defined once for the cluster in gray-controller's namespace (gray-system here), under a
		// name no other scenario uses.
		k.defineGatesIn("gray-system", "cluster-gates-steady", map[string]string{"steady": "provider: pods\nsuccess: canary.readinessFlaps == 0\ninterval: 2s\ncount: 5\n"})
		t.Cleanup(func() {
			_ = k.client.CoreV1().ConfigMaps("gray-system").Delete(context.Background(), "cluster-gates-steady", metav1.DeleteOptions{})
		})
		k.grayEnv.startStable(canaryWeb(testutil.WithAnnotation(grayapi.PercentAnnotation, "20"),
			testutil.WithTemplateAnnotation(cluster.FlapReadinessAnnotation, flapImage)))
		k.released()
		k.u.must("annotate", "deployment", "web", grayapi.GatesAnnotation+"=steady")
		k.u.must("gray", "set", "web", "20", "--on-failure", "abort", "--image", "app="+flapImage)
		st := k.abortedToStable("web", 10, flapImage, stableImage, grayapi.ReasonGateFailed, m.alongside)
		if msg := st.Failure.Message; !strings.Contains(msg, "gate steady failed") || !strings.Contains(msg, "not canary.readinessFlaps == 0") ||
			!regexp.MustCompile(`canary: \d+ pods, .*, [1-9]\d* readiness changes`).MatchString(msg) {
			t.Errorf("failure message %q does not name the cluster-wide gate, its condition and the readiness changes it counted", msg)
		}

		// The namespace's own definition of steady wins over the cluster's: this one tolerates the
		// flaps, so the same canary, retried, passes it (and is then rejected by a person).
		k.defineGatesIn(k.ns, "gates", map[string]string{"steady": "provider: pods\nsuccess: canary.readinessFlaps <= 1000\ninterval: 2s\ncount: 2\n"})
		k.u.must("gray", "retry", "web")
		eventually(t, 60*time.Second, "the steady gate passed by the namespace's definition", func() (bool, string) {
			st := k.grayStatus(k.get("web"))
			ok := len(st.Gates) == 1 && st.Gates[0].Verdict == grayapi.GatePassed && strings.Contains(st.Gates[0].Why, "<= 1000")
			return ok, fmt.Sprintf("phase %s, gates %+v", st.Phase, st.Gates)
		})
		k.u.must("gray", "undo", "web")
		k.expect("web", completeAt10)
		k.released()
	})
}
