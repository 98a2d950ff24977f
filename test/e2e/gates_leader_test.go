package e2e

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/kubegray/kubectl-gray/pkg/grayapi"
	"github.com/kubegray/kubectl-gray/test/cluster"
)

// checkGateRecords checks the pods gate's records of revision 2 over a history, hold by hold
// (step): the counts never go down, each new measurement (a later `at`) adds exactly one
// outcome (the first takes the baseline and adds none), and two measurements are at least an
// interval apart (`at` has microseconds). Whoever led, a measurement is neither lost nor taken
// twice. It fails when it saw no measurement at all.
func checkGateRecords(t *testing.T, h []seenStatus, interval time.Duration) {
	t.Helper()
	type seen struct {
		rec  grayapi.GateStatus
		step int32
	}
	var last *seen
	measured := 0
	for _, s := range h {
		if !s.ok || s.st.Revision != 2 || len(s.st.Gates) != 1 || s.st.Gates[0].At == nil {
			continue
		}
		cur := &seen{rec: s.st.Gates[0], step: s.st.Step}
		if last == nil || last.step != cur.step {
			if cur.rec.Passes+cur.rec.Fails+cur.rec.Unsure > 1 {
				t.Errorf("step %d's gate first seen with %d outcomes: %+v", cur.step, cur.rec.Passes+cur.rec.Fails+cur.rec.Unsure, cur.rec)
			}
			last, measured = cur, measured+1
			continue
		}
		a, b := last.rec, cur.rec
		if b.At.Equal(a.At) {
			if a.Passes != b.Passes || a.Fails != b.Fails || a.Unsure != b.Unsure {
				t.Errorf("step %d's gate changed its counts without a measurement: %+v then %+v", cur.step, a, b)
			}
			continue
		}
		measured++
		added := (b.Passes - a.Passes) + (b.Fails - a.Fails) + (b.Unsure - a.Unsure)
		if b.Passes < a.Passes || b.Fails < a.Fails || b.Unsure < a.Unsure || added != 1 {
			t.Errorf("step %d's gate went from %+v to %+v: a measurement lost, doubled or undone", cur.step, a, b)
		}
		if gap := b.At.Sub(a.At.Time); gap < interval {
			t.Errorf("step %d's gate measured %v after the last (%s then %s), less than its interval %v", cur.step, gap, a.At, b.At, interval)
		}
		last = cur
	}
	if measured < 2 {
		t.Errorf("the gate was seen measured %d times: nothing to check", measured)
	}
}

// startLeaderPair starts a control plane for mode m run by two gray-controller replicas, one of
// them leading.
func startLeaderPair(t *testing.T, m canaryMode) (*cluster.Cluster, *controllerPool) {
	t.Helper()
	opts := cluster.Options{Controllers: cluster.WithoutDeploymentController}
	if m.alongside {
		opts = cluster.Options{}
	}
	c := cluster.StartForTest(t, opts)
	if m.alongside {
		applyManifests(t, c, overlayManifests(t, "alongside"))
	}
	return c, startControllerPool(t, c, 2, "--mode="+m.name)
}

// TestGatesAcrossALeaderKill: in both modes, with two gray-controller replicas, the leader is
// SIGKILLed once the pods gate has counted two passes; the next leader goes on from the recorded
// counts and times: the hold is left on the fifth pass, no measurement lost or taken twice.
func TestGatesAcrossALeaderKill(t *testing.T) {
	for _, m := range canaryModes {
		t.Run(m.name, func(t *testing.T) {
			c, pool := startLeaderPair(t, m)
			k := newCanary(t, c, m, "gate-kill")
			k.startStable("20")
			k.defineGate("provider: pods\nsuccess: canary.restartsPerPod <= stable.restartsPerPod\ninterval: 2s\ncount: 5\n")
			k.u.must("annotate", "deployment", "web", grayapi.GatesAnnotation+"=pods", grayapi.HoldForAnnotation+"=5s")
			k.u.must("gray", "set", "web", "20", "--image", "app="+goodImage)
			eventually(t, 60*time.Second, "two passes of the pods gate", func() (bool, string) {
				st := k.grayStatus(k.get("web"))
				return len(st.Gates) == 1 && st.Gates[0].Passes >= 2, fmt.Sprintf("status %+v", st)
			})
			pool.killLeader(t)
			k.u.must("gray", "status", "web", "--until", "complete", "--timeout", "120s")
			h := k.history("web")
			checkGateRecords(t, h, gateInterval)
			if first(h, 0, gated(0, func(g grayapi.GateStatus) bool { return g.Passes == 4 })) < 0 {
				t.Errorf("no status showed 4 passes before the hold was left:\n%s", statusLines(h))
			}
			k.released()
		})
	}
}

// TestWebhookGateAcrossALeaderKill: in both modes, with two gray-controller replicas and a webhook
// gate whose receiver answers each call 1.5 s late, the leader is SIGKILLed while a call is in
// flight once two passes are recorded: the call's answer is lost with it, and the next leader
// asks again for the measurement still due. The records show no measurement lost or taken twice.
func TestWebhookGateAcrossALeaderKill(t *testing.T) {
	for _, m := range canaryModes {
		t.Run(m.name, func(t *testing.T) {
			c, pool := startLeaderPair(t, m)
			r := startReceiver(t)
			k := newCanary(t, c, m, "hook-kill")
			r.install(t, c, k.ns)
			r.answer(k.ns, http.StatusOK, `{"failed": 0}`)
			k.startGated(map[string]string{"smoke": "provider: smoke\nsuccess: result.failed == 0\ninterval: 2s\ncount: 5\n"}, "smoke",
				grayapi.HoldForAnnotation+"=5s")
			k.u.must("gray", "set", "web", "20", "--image", "app="+goodImage)
			eventually(t, 60*time.Second, "two passes of the webhook gate", func() (bool, string) {
				st := k.grayStatus(k.get("web"))
				return len(st.Gates) == 1 && st.Gates[0].Passes >= 2, fmt.Sprintf("status %+v", st)
			})
			answering := make(chan struct{})
			r.mu.Lock()
			r.delay, r.answering = 1500*time.Millisecond, answering
			r.mu.Unlock()
			select {
			case <-answering:
			case <-time.After(30 * time.Second):
				t.Fatal("no webhook call within 30s of the second pass")
			}
			pool.killLeader(t)
			k.u.must("gray", "status", "web", "--until", "complete", "--timeout", "120s")
			h := k.history("web")
			checkGateRecords(t, h, gateInterval)
			fourth := first(h, 0, func(s seenStatus) bool {
				return s.ok && s.st.Revision == 2 && s.st.Step == 0 && len(s.st.Gates) == 1 && s.st.Gates[0].Name == "smoke" && s.st.Gates[0].Passes == 4
			})
			if fourth < 0 {
				t.Errorf("no status showed 4 passes before the hold was left:\n%s", statusLines(h))
			}
			k.released()
		})
	}
}
