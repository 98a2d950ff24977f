package e2e

// Failing canaries in the randomized suite: a Deployment of random shape (1–20 replicas,
// maxSurge and maxUnavailable 0 included, hold points 1–99, a progress deadline of 8–20 s,
// kubegray.io/on-failure hold or abort), created plain and opted in afterwards, gets a canary
// that never becomes ready, becomes ready only well after its deadline, or is ready but restarts
// while Ready and fails the pods gate (docs/gates.md); the leader may be
// killed right after the template change; a canary that recovers is undone. What must hold,
// besides the recorder's invariants (canary never above its target, availability never below
// R − maxUnavailable): the step is Degraded within its deadline plus failingDetectionBound, an
// abort keeps the template and brings every replica back to the stable revision after the
// failure was seen, and every undo lands on the stable revision (every replica on it, the
// canary at 0, failure.rolledBackFrom, no hold on the way back); a late canary that recovers is
// Held.

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
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

// failingDetectionBound is how long after its deadline a step may become Degraded: the check is
// queued for the deadline, but a killed leader is replaced only once its 3 s lease has expired
// and the standby's caches have synced, and with eight scenarios at once on a 2-core machine
// the controller's API client (20 requests per second) queues its writes (15.5 s late was seen).
const failingDetectionBound = 30 * time.Second

// lateMargin is how long after its deadline a late canary's pods become ready: later than any
// detection, so that the step is always Degraded first.
const lateMargin = failingDetectionBound + 5*time.Second

// canaryImage is the image of every failing canary.
const canaryImage = "nginx:canary"

// failingScenario is one canary that fails.
type failingScenario struct {
	name                 string
	index                int
	seed                 uint64
	replicas             int32
	maxSurge, maxUnavail intstr.IntOrString
	points               []int32
	deadline             int32
	abort                bool // kubegray.io/on-failure: abort, else hold
	late                 bool // ready after deadline + lateMargin, else never
	// gate: ready, but its containers restart while Ready, and the pods gate (kubegray.io/gates)
	// fails it once the hold has settled; neither late nor never ready.
	gate bool
	kill bool // SIGKILL the leader right after the template change
}

func (s failingScenario) describe() string {
	policy, kind, then := "hold", "never ready", "kubectl gray undo after 3s Degraded"
	if s.abort {
		policy, then = "abort", "kubectl gray undo once Aborted"
	}
	if s.late {
		kind = "ready after deadline + " + lateMargin.String()
		if !s.abort {
			then = "once Held, kubectl gray undo"
		}
	}
	if s.gate {
		kind = "restarting while Ready, failing the pods gate"
	}
	return fmt.Sprintf("failingScenario %s (index %d, seed %d): R=%d maxSurge=%s maxUnavailable=%s points %s deadline %ds on-failure %s, canary %s, then %s, kill %t",
		s.name, s.index, s.seed, s.replicas, s.maxSurge.String(), s.maxUnavail.String(), formatPoints(s.points), s.deadline, policy, kind, then, s.kill)
}

// randomFailingScenario draws failing scenario index of a run, replayable alone like the others.
func randomFailingScenario(runSeed uint64, index int) failingScenario {
	seed := runSeed*1_000_033 + uint64(index)
	rng := rand.New(rand.NewPCG(seed, seed^0x5bd1e995))
	s := failingScenario{name: fmt.Sprintf("failing-%d", index), index: index, seed: seed,
		replicas: 1 + rng.Int32N(20), deadline: 8 + rng.Int32N(13),
		abort: rng.IntN(2) == 0, late: rng.IntN(3) == 0, kill: rng.IntN(4) == 0}
	for {
		s.maxSurge, s.maxUnavail = limitChoices[rng.IntN(len(limitChoices))], limitChoices[rng.IntN(len(limitChoices))]
		if s.maxSurge.String() != "0" || s.maxUnavail.String() != "0" {
			break
		}
	}
	for {
		s.points = randomPoints(rng)
		if s.points[0] > 0 {
			break
		}
	}
	// Drawn last, so that a seed draws the same shapes as before the kind existed.
	s.gate = rng.IntN(3) == 0
	s.late = s.late && !s.gate
	return s
}

// failingRun is one failing scenario in progress.
type failingRun struct {
	t    *testing.T
	e    *grayEnv
	u    *pluginUser
	mode randomMode
	s    failingScenario
}

func runFailingScenario(t *testing.T, c *cluster.Cluster, pool *controllerPool, mode randomMode, s failingScenario, replay string) {
	var e *grayEnv
	t.Cleanup(func() {
		if t.Failed() && e != nil {
			t.Logf("FAILED in %s mode; replay with: %s\n%s\nwatched history of namespace %s:\n  %s", mode.name, replay, s.describe(), e.ns,
				strings.Join(e.rec.timeline(), "\n  "))
		}
	})
	t.Cleanup(func() { deletePassedNamespace(t, c, e) })
	e = mode.env(t, c, s.name)
	r := &failingRun{t: t, e: e, u: newPluginUser(t, c, e.ns), mode: mode, s: s}
	t.Logf("%s", s.describe())
	r.start()
	changed := time.Now()
	r.u.must("patch", "deployment/web", "-p", r.canaryPatch())
	if s.kill {
		pool.killLeader(t)
	}
	target := grayTarget(s.replicas, s.points[0])
	reason := grayapi.ReasonProgressDeadlineExceeded
	if s.gate {
		reason = grayapi.ReasonGateFailed
		r.gateFailedInTime()
	} else {
		r.degradedInTime(changed)
	}
	switch {
	case s.abort:
		// The failure is recorded first, then the canary goes to 0 with the template kept; an
		// undo then writes the stable template back.
		r.u.fails(plugin.ExitFailure, []string{"web"}, "gray", "status", "web", "--until", "complete", "--timeout", untilTimeout)
		r.e.abortedToStable("web", s.replicas, canaryImage, firstImage, reason, mode.name == "alongside")
		r.u.must("gray", "undo", "web")
		r.u.fails(plugin.ExitFailure, []string{"rolled back revision 2"}, "gray", "status", "web", "--until", "complete", "--timeout", untilTimeout)
		r.landsOnStable(reason)
	case s.late:
		// Degraded, then Held once the pods are ready; the waves of the step created after that
		// instant are ready as they come.
		want := grayState{phase: grayapi.PhaseHeld, newSpec: target, oldTotal: s.replicas - target, paused: true}
		wait := time.Duration(s.deadline)*time.Second + lateMargin + 2*time.Minute
		eventually(t, wait, fmt.Sprintf("deployment web at %+v", want), func() (bool, string) {
			got, _, msg := e.observed("web")
			return got == want, msg
		})
		// Going on would meet the same slow start in every new pod: it is undone.
		r.u.must("gray", "undo", "web")
		r.u.must("gray", "status", "web", "--until", "complete", "--timeout", untilTimeout)
		r.landsOnStable(grayapi.ReasonRolledBack)
	default:
		// Nothing moves while it is Degraded; the undo ends the scenario either way.
		now, _, _ := e.observed("web")
		if now.newSpec > target {
			t.Fatalf("the Degraded canary stands at %d, above its target %d", now.newSpec, target)
		}
		e.stays("web", now, 3*time.Second)
		r.u.must("gray", "undo", "web")
		r.u.fails(plugin.ExitFailure, []string{"rolled back revision 2"}, "gray", "status", "web", "--until", "complete", "--timeout", untilTimeout)
		r.landsOnStable(reason)
	}
}

// start creates web plain, waits for it, and opts it in with its policy.
func (r *failingRun) start() {
	r.t.Helper()
	s := r.s
	d := testutil.Deployment("web", testutil.WithTypeMeta(), testutil.WithImage(firstImage), testutil.WithReplicas(s.replicas),
		testutil.WithRollingUpdate(s.maxSurge, s.maxUnavail), testutil.WithProgressDeadline(s.deadline))
	d.Namespace = r.e.ns
	data, err := json.Marshal(d)
	if err != nil {
		r.t.Fatal(err)
	}
	f, err := os.CreateTemp("", "web-*.json")
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { _ = os.Remove(f.Name()) })
	if _, err := f.Write(data); err != nil {
		r.t.Fatal(err)
	}
	_ = f.Close()
	r.u.must("create", "-f", f.Name())
	r.u.must("rollout", "status", "deployment/web", "--timeout=120s")
	policy := "hold"
	if s.abort {
		policy = "abort"
	}
	if s.gate {
		r.defineGate()
	}
	r.u.must("gray", "set", "web", formatPoints(s.points), "--on-failure", policy)
	r.u.must("gray", "status", "web", "--until", "complete", "--timeout", untilTimeout)
}

// defineGate names the pods gate on web and defines it in the namespace: restarts per pod no
// more than the stable revision's, measured every 2s, 3 passes needed.
func (r *failingRun) defineGate() {
	r.t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "gates", Labels: map[string]string{grayapi.GatesLabel: grayapi.GatesLabelValue}},
		Data: map[string]string{grayapi.PodsGate: "provider: pods\nsuccess: canary.restartsPerPod <= stable.restartsPerPod\ninterval: 2s\n"}}
	if _, err := r.e.client.CoreV1().ConfigMaps(r.e.ns).Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
		r.t.Fatal(err)
	}
	r.u.must("annotate", "deployment", "web", grayapi.GatesAnnotation+"=pods")
}

// canaryPatch changes the image and marks the new pods never ready, ready late, or restarting
// while Ready.
func (r *failingRun) canaryPatch() string {
	key, value := cluster.NeverReadyAnnotation, "true"
	if r.s.gate {
		key, value = cluster.RestartWhileReadyAnnotation, canaryImage
	}
	if r.s.late {
		// One instant for every pod of the canary, not a delay per pod: with maxSurge 0 the
		// step's pods come one wave after the other, and a delay per pod would hold each wave
		// that long (nineteen waves of 55 s at 99% of 20).
		readyAt := time.Now().Add(time.Duration(r.s.deadline)*time.Second + lateMargin)
		key, value = cluster.ReadyAfterAnnotation, readyAt.UTC().Format(time.RFC3339Nano)
	}
	return fmt.Sprintf(`{"spec":{"template":{"metadata":{"annotations":{%q:%q}},"spec":{"containers":[{"name":"app","image":%q}]}}}}`, key, value, canaryImage)
}

// degradedInTime waits for revision 2 to be found failing and checks when: not before its
// deadline (counted from the template change), not later than failingDetectionBound after it.
// With on-failure abort the step is recorded Degraded before the abort acts on it.
func (r *failingRun) degradedInTime(changed time.Time) {
	r.t.Helper()
	deadline := time.Duration(r.s.deadline) * time.Second
	failed := func(s seenStatus) bool {
		return s.ok && s.st.Revision == 2 && s.st.Phase == grayapi.PhaseDegraded
	}
	eventually(r.t, deadline+failingDetectionBound+30*time.Second, "revision 2 found failing", func() (bool, string) {
		h := r.e.history("web")
		return first(h, 0, failed) >= 0, fmt.Sprint(phases(h, 0))
	})
	h := r.e.history("web")
	i := first(h, 0, failed)
	after := h[i].at.Sub(changed)
	r.t.Logf("FAILING-DEGRADED mode=%s deadline=%v degradedAfter=%v kill=%t", r.mode.name, deadline, after.Round(time.Millisecond), r.s.kill)
	if after < deadline || after > deadline+failingDetectionBound {
		r.t.Errorf("found failing %v after the template change, want within %v–%v", after, deadline, deadline+failingDetectionBound)
	}
}

// gateFailedInTime waits for revision 2 to fail its pods gate and checks how: Held at its first
// step before (the window opens when the hold settles, never earlier), Degraded with reason
// GateFailed no later than failingDetectionBound after that, never beyond the first step.
func (r *failingRun) gateFailedInTime() {
	r.t.Helper()
	failed := func(s seenStatus) bool {
		return s.ok && s.st.Revision == 2 && s.st.Phase == grayapi.PhaseDegraded
	}
	eventually(r.t, 2*time.Minute+failingDetectionBound, "revision 2 failing its gate", func() (bool, string) {
		h := r.e.history("web")
		return first(h, 0, failed) >= 0, fmt.Sprint(phases(h, 0))
	})
	h := r.e.history("web")
	i := first(h, 0, failed)
	held := first(h, 0, func(s seenStatus) bool {
		return s.ok && s.st.Revision == 2 && s.st.Phase == grayapi.PhaseHeld && s.st.Step == 0
	})
	if f := h[i].st.Failure; f == nil || f.Reason != grayapi.ReasonGateFailed || held < 0 || held > i {
		r.t.Fatalf("revision 2 Degraded with %+v, phases %v: want Held at step 0, then Degraded by its gate (%s)", f, phases(h, 0), grayapi.ReasonGateFailed)
	}
	after := h[i].at.Sub(h[held].at)
	r.t.Logf("FAILING-GATE mode=%s degradedAfterHeld=%v kill=%t", r.mode.name, after.Round(time.Millisecond), r.s.kill)
	if after > failingDetectionBound {
		r.t.Errorf("failed its gate %v after it was Held, want within %v", after, failingDetectionBound)
	}
	if j := first(h, 0, func(s seenStatus) bool { return s.ok && s.st.Revision == 2 && s.st.Step > 0 }); j >= 0 {
		r.t.Errorf("the canary failing its gate moved on: phases %v", phases(h, 0))
	}
}

// landsOnStable checks that a rollback ended on the stable revision: Complete, every replica on
// the first image, the canary's ReplicaSet at 0, the failure recorded, never held on the way.
// The rollback is revision 3 and the canary stays 2, except in alongside mode when the built-in
// controller, syncing a cached Deployment that still has the canary's template, renumbers the
// canary past the rollback and then the rollback past it (4 and 5: upstream's revision sync, seen
// with seed 20261260); the revisions are read from the ReplicaSets' images, and only that order
// is asked of them.
func (r *failingRun) landsOnStable(reason string) {
	r.t.Helper()
	s := r.s
	d := r.e.expect("web", grayState{phase: grayapi.PhaseComplete, newSpec: s.replicas})
	if got := imageOf(&d.Spec.Template); got != firstImage {
		r.t.Fatalf("web runs %s after the rollback, want the stable %s", got, firstImage)
	}
	sizes, images := r.e.sizesByRevision("web")
	canaryRev, stableRev := "", ""
	for rev, image := range images {
		switch image {
		case canaryImage:
			canaryRev = rev
		case firstImage:
			stableRev = rev
		}
	}
	renumbered := r.mode.name == "alongside" && canaryRev == "4" && stableRev == "5"
	if len(sizes) != 2 || sizes[canaryRev] != 0 || sizes[stableRev] != s.replicas || !(canaryRev == "2" && stableRev == "3" || renumbered) {
		r.t.Fatalf("replica sets by revision %v %v, want the canary (2) at 0 and the stable one (3) at %d", sizes, images, s.replicas)
	}
	rollback, _ := strconv.ParseInt(stableRev, 10, 64)
	st := r.e.grayStatus(d)
	if st.Revision != rollback || st.StableRevision != rollback || st.Failure == nil || st.Failure.RolledBackFrom != 2 || st.Failure.Reason != reason {
		r.t.Fatalf("status %+v, want Complete on %d with revision 2 rolled back (%s)", st, rollback, reason)
	}
	h := r.e.history("web")
	back := first(h, 0, func(x seenStatus) bool { return x.ok && x.st.Revision > 2 })
	// An undo of an aborted rollout finds the stable revision at every replica already, and may
	// be Complete in its first status.
	if back < 0 || (h[back].st.Phase != grayapi.PhaseRolledBack && h[back].st.Phase != grayapi.PhaseComplete) ||
		first(h, back, inPhase(grayapi.PhaseHeld)) >= 0 {
		r.t.Fatalf("the way back: %v, want RolledBack (or Complete at once) then Complete, never Held", phases(h, max(back, 0)))
	}
}

// failingScenarios draws count scenarios of a run, or the one of index only.
func failingScenarios(seed uint64, count, only int) []failingScenario {
	var out []failingScenario
	for i := range count {
		if only < 0 || only == i {
			out = append(out, randomFailingScenario(seed, i))
		}
	}
	return out
}

// failingCount reads GRAY_FAILING (how many failing scenarios a run draws).
func failingCount(t *testing.T) int {
	return int(envNumber(t, "GRAY_FAILING", defaultFailing))
}

// defaultFailing failing scenarios per mode in `make test`, beside the defaultScenarios others.
const defaultFailing = 7
