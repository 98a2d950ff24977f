package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kubegray/kubectl-gray/internal/testutil"
	"github.com/kubegray/kubectl-gray/pkg/deployutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
	"github.com/kubegray/kubectl-gray/pkg/rollout"
	"github.com/kubegray/kubectl-gray/test/cluster"
)

// Defaults sized for this project's 2-core machine, where the two modes run at
// the same time, each on its own control plane, inside make test's budget
// (docs/development.md has the measured times): with ciSeed the fewest that
// TestGrayRandomizedCoverage passes with.
const (
	defaultScenarios = 10
	defaultParallel  = 4
	// untilTimeout bounds one `kubectl gray status --until`, below the
	// kubectlTimeout the plugin user allows any kubectl run: a maxSurge-1
	// rollout of 20 replicas on a loaded 2-core machine needs over a minute.
	untilTimeout = "150s"
)

// randomMode is one way of running gray-controller for the randomized test.
type randomMode struct {
	name string // the --mode value
	opts cluster.Options
	env  func(t *testing.T, c *cluster.Cluster, name string) *grayEnv
}

var randomModes = []randomMode{
	{name: "instead", opts: cluster.Options{Controllers: cluster.WithoutDeploymentController}, env: newGrayEnv},
	{name: "alongside", opts: cluster.Options{}, env: newAlongsideEnv},
}

// TestGrayRandomized drives random scenarios through the real
// kubectl and plugin against two gray-controller replicas whose leader is
// SIGKILLed at random instants, and after every step asserts, without
// polling, the exact state the test's own model predicts. GRAY_SEED (ciSeed
// unless set), GRAY_SCENARIOS, GRAY_ONLY (one scenario index) and
// GRAY_PARALLEL replay or resize a run.
func TestGrayRandomized(t *testing.T) {
	seed := envNumber(t, "GRAY_SEED", ciSeed)
	count := int(envNumber(t, "GRAY_SCENARIOS", defaultScenarios))
	failing := failingCount(t)
	parallel := int(envNumber(t, "GRAY_PARALLEL", defaultParallel))
	only, onlyFailing := -1, -1
	if os.Getenv("GRAY_ONLY") != "" {
		only = int(envNumber(t, "GRAY_ONLY", 0))
		failing = 0
	}
	if os.Getenv("GRAY_ONLY_FAILING") != "" {
		onlyFailing = int(envNumber(t, "GRAY_ONLY_FAILING", 0))
		count = 0
	}
	t.Logf("GRAY_SEED=%d GRAY_SCENARIOS=%d GRAY_FAILING=%d GRAY_PARALLEL=%d (replay one scenario with GRAY_ONLY=<index> or GRAY_ONLY_FAILING=<index>)",
		seed, count, failing, parallel)
	var scenarios []grayScenario
	for i := range count {
		if only < 0 || only == i {
			scenarios = append(scenarios, randomScenario(seed, i))
		}
	}
	failingOnes := failingScenarios(seed, failing, onlyFailing)
	for _, mode := range randomModes {
		t.Run(mode.name, func(t *testing.T) {
			// The modes have a control plane each, and the scenarios mostly wait on them.
			t.Parallel()
			replay := fmt.Sprintf("GRAY_SEED=%d GRAY_SCENARIOS=%d GRAY_ONLY=%%d go test -run 'TestGrayRandomized/%s/' ./e2e/", seed, count, mode.name)
			replayFailing := fmt.Sprintf("GRAY_SEED=%d GRAY_FAILING=%d GRAY_ONLY_FAILING=%%d go test -run 'TestGrayRandomized/%s/' ./e2e/", seed, failing, mode.name)
			runScenarios(t, mode, scenarios, failingOnes, parallel, replay, replayFailing)
		})
	}
}

// TestGrayKnownFailures are fixed steps, in both modes, that once broke a
// hold: a hold that must not flap after a scale (and a resume right after
// the scale that must be accepted), and scaling while held in alongside
// mode, which must not end the hold.
func TestGrayKnownFailures(t *testing.T) {
	for _, mode := range randomModes {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			runScenarios(t, mode, knownFailures(), nil, defaultParallel, "go test -run 'TestGrayKnownFailures/"+mode.name+"/' ./e2e/ # %d", "")
		})
	}
}

func knownFailures() []grayScenario {
	one, surge25 := intstr.FromInt32(1), intstr.FromString("25%")
	sized := func(o op, newSpec, old int32) op { o.wantNew, o.wantOld = &newSpec, &old; return o }
	set := op{kind: opSetImage, image: "nginx:1.26"}
	return []grayScenario{
		{name: "hold-flaps-after-scale", replicas: 4, maxSurge: one, maxUnavail: intstr.FromInt32(0), points: []int32{58}, ops: []op{
			sized(set, 3, 1),
			sized(op{kind: opScale, replicas: 3}, 2, 1),
			sized(op{kind: opScale, replicas: 4}, 3, 1),
			// Held once for this revision: a resume right after the scale
			// must be accepted and acted on once the hold settles.
			sized(op{kind: opScaleResume, replicas: 3}, 3, 0),
		}},
		{name: "scale-4-to-2-while-held-at-50", replicas: 4, maxSurge: surge25, maxUnavail: surge25, points: []int32{50}, ops: []op{
			sized(set, 2, 2), sized(op{kind: opScale, replicas: 2}, 1, 1), sized(op{kind: opResumeFull}, 2, 0),
		}},
		{name: "scale-6-to-3-while-held-at-50", replicas: 6, maxSurge: surge25, maxUnavail: surge25, points: []int32{50}, ops: []op{
			sized(set, 3, 3), sized(op{kind: opScale, replicas: 3}, 2, 1), sized(op{kind: opResumeFull}, 3, 0),
		}},
		{name: "scale-1-to-6-while-held-at-83", replicas: 1, maxSurge: surge25, maxUnavail: surge25, points: []int32{83}, ops: []op{
			sized(set, 1, 0), sized(op{kind: opScale, replicas: 6}, 5, 1), sized(op{kind: opResumeFull}, 6, 0),
		}},
	}
}

// runScenarios starts a control plane for mode with two gray-controller
// replicas and runs the scenarios and the failing ones, parallel at a time,
// each in its own namespace under the invariant recorder.
func runScenarios(t *testing.T, mode randomMode, scenarios []grayScenario, failing []failingScenario, parallel int, replay, replayFailing string) {
	began := time.Now()
	c := cluster.StartForTest(t, mode.opts)
	if mode.name == "alongside" {
		applyManifests(t, c, overlayManifests(t, "alongside"))
	}
	pool := startControllerPool(t, c, 2, "--mode="+mode.name)
	work := make(chan func(), len(scenarios)+len(failing))
	// The failing ones first: they wait out their deadlines, which the others fill.
	for _, s := range failing {
		work <- func() {
			t.Run(s.name, func(t *testing.T) { runFailingScenario(t, c, pool, mode, s, fmt.Sprintf(replayFailing, s.index)) })
		}
	}
	for _, s := range scenarios {
		work <- func() {
			t.Run(s.name, func(t *testing.T) { runGrayScenario(t, c, pool, mode, s, fmt.Sprintf(replay, s.index)) })
		}
	}
	close(work)
	var wg sync.WaitGroup
	// Our own workers rather than t.Parallel: -parallel defaults to
	// GOMAXPROCS, 2 here, and the scenarios mostly wait.
	for range max(parallel, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for run := range work {
				run()
			}
		}()
	}
	wg.Wait()
	t.Logf("%d scenarios and %d failing ones in %s mode took %v including the control plane", len(scenarios), len(failing), mode.name,
		time.Since(began).Round(time.Second))
}

// scenarioRun is one scenario in progress.
type scenarioRun struct {
	t    *testing.T
	e    *grayEnv
	u    *pluginUser
	pool *controllerPool
	mode randomMode
	s    grayScenario
	// completionAllowed: per revision, when the test asked for the resume
	// that completes it; a held revision must not complete before.
	completionAllowed map[int64]time.Time
	lastRevision      int64
	// holdFor is, per hold (its revision and when it settled), the duration it recorded when first
	// seen Held. New hold points that keep the hold (kubectl gray set while held; settledAt
	// unchanged, even where the hold's step moves) apply from the next hold point, so the hold
	// keeps what it recorded; ones that make it settle again record the new point's.
	holdFor map[[2]int64]time.Duration
}

func runGrayScenario(t *testing.T, c *cluster.Cluster, pool *controllerPool, mode randomMode, s grayScenario, replay string) {
	failed := -1
	var e *grayEnv
	// Registered before the recorder's verify, so it runs after it and sees
	// its failures too.
	t.Cleanup(func() {
		if !t.Failed() || e == nil {
			return
		}
		t.Logf("FAILED in %s mode; replay with: %s\n%s\nwatched history of namespace %s (every Deployment and ReplicaSet event):\n  %s",
			mode.name, replay, s.describe(failed), e.ns, strings.Join(e.rec.timeline(), "\n  "))
	})
	t.Cleanup(func() { deletePassedNamespace(t, c, e) })
	e = mode.env(t, c, s.name)
	r := &scenarioRun{t: t, e: e, u: newPluginUser(t, c, e.ns), pool: pool, mode: mode, s: s, completionAllowed: map[int64]time.Time{},
		holdFor: map[[2]int64]time.Duration{}}
	t.Logf("%s", s.describe(-1))

	r.create()
	m := s.start()
	r.settle(m.want())
	r.completionAllowed[r.lastRevision] = time.Time{}
	for i, o := range s.ops {
		failed = i
		before := *m
		m.apply(o)
		want := m.want()
		if (o.wantNew != nil && *o.wantNew != want.newSpec) || (o.wantOld != nil && *o.wantOld != want.oldTotal) {
			t.Fatalf("the model disagrees with the hand-computed sizes of op %d (%s): model %s, by hand new %d old %d", i, o, want, *o.wantNew, *o.wantOld)
		}
		if before.held && !m.held && o.kind != opUndo {
			r.completionAllowed[r.lastRevision] = time.Now()
		}
		r.issue(o, before)
		if o.kill || o.kind == opKill {
			pool.killLeader(t)
		}
		r.settle(want)
	}
	failed = -1
	r.noCompletionWithoutResume()
}

// deletePassedNamespace deletes the namespace of a scenario that passed, so that it gives its
// pods back: the two kwok nodes hold 500 pods, fewer than 200 scenarios leave running. A failed
// one is kept to be looked at.
func deletePassedNamespace(t *testing.T, c *cluster.Cluster, e *grayEnv) {
	if t.Failed() || e == nil {
		return
	}
	if err := c.Client.CoreV1().Namespaces().Delete(context.Background(), e.ns, metav1.DeleteOptions{}); err != nil {
		t.Errorf("deleting the namespace %s of a finished scenario: %v", e.ns, err)
	}
}

// create makes the Deployment with kubectl, from a manifest file.
func (r *scenarioRun) create() {
	d := testutil.Deployment("web", testutil.WithTypeMeta(), testutil.WithImage(firstImage), testutil.WithReplicas(r.s.replicas),
		testutil.WithRollingUpdate(r.s.maxSurge, r.s.maxUnavail), testutil.WithAnnotation(grayapi.PercentAnnotation, formatPoints(r.s.points)))
	d.Namespace = r.e.ns
	data, err := json.Marshal(d)
	if err != nil {
		r.t.Fatal(err)
	}
	path := filepath.Join(r.t.TempDir(), "web.json")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		r.t.Fatal(err)
	}
	r.u.must("create", "-f", path)
}

// issue runs o's kubectl commands; each must succeed. before is the model's state before o.
func (r *scenarioRun) issue(o op, before model) {
	r.t.Helper()
	u := r.u
	switch o.kind {
	case opScaleZero:
		u.must("scale", "deployment/web", "--replicas=0")
		zero := before
		zero.replicas = 0
		r.settle(zero.want())
		u.must("scale", "deployment/web", "--replicas="+strconv.Itoa(int(before.replicas)))
	case opPauseResume:
		r.pauseResume(before.held)
	case opDeleteOld:
		r.deleteOldReplicaSet()
	case opScale:
		u.must("scale", "deployment/web", "--replicas="+strconv.Itoa(int(o.replicas)))
	case opScaleResume:
		u.must("scale", "deployment/web", "--replicas="+strconv.Itoa(int(o.replicas)))
		if res := u.kubectl("gray", "resume", "web"); res.code != 0 {
			r.t.Fatalf("a resume right after a scale of a rollout that has been held at this point must be accepted "+
				"(and acted on once the hold settles), got %s", res)
		}
	case opResume:
		u.must("gray", "resume", "web")
	case opResumeFull:
		u.must("gray", "resume", "web", "--full")
	case opUndo:
		u.must("gray", "undo", "web")
	case opGraySetImage:
		u.must("gray", "set", "web", formatPoints(o.points), "--image", "app="+o.image)
	case opSetImage:
		u.must("set", "image", "deployment/web", "app="+o.image)
	case opSetPoints:
		u.must("gray", "set", "web", formatPoints(o.points))
	case opRestart:
		r.restart(before.replicas)
	case opKill:
	}
}

// restart runs kubectl gray restart on web, held or complete, and checks that it started no new
// revision. Where the scenario's maxUnavailable resolves to 0 pods of replicas, as a rolling
// update resolves it (its maxSurge is not 0 then), restart must refuse and evict nothing: the
// recorder holds availability to replicas − maxUnavailable throughout.
func (r *scenarioRun) restart(replicas int32) {
	r.t.Helper()
	before := r.observe()
	_, unavailable, err := rollout.ResolveFenceposts(&r.s.maxSurge, &r.s.maxUnavail, replicas)
	if err != nil {
		r.t.Fatal(err)
	}
	if unavailable == 0 && replicas > 0 {
		res := r.u.kubectl("gray", "restart", "web", "--timeout", untilTimeout)
		if res.code != 1 || !strings.Contains(res.stderr, "allows no unavailable pods") {
			r.t.Fatalf("kubectl gray restart of web, whose maxUnavailable %s is 0 of %d replicas, must refuse (exit 1, saying so): %s",
				r.s.maxUnavail.String(), replicas, res)
		}
	} else {
		r.u.must("gray", "restart", "web", "--timeout", untilTimeout)
	}
	if after := r.observe(); after.revision != before.revision {
		r.t.Fatalf("kubectl gray restart moved web from revision %d to %d: a restart starts no revision", before.revision, after.revision)
	}
}

// pauseResume pauses web the way its user can and resumes it with kubectl rollout resume. A
// Deployment held in instead mode is paused already, and there kubectl rollout resume is a
// resume of the hold: nothing is done. One taken over in alongside mode is paused by
// kubegray.io/paused, whose removal kubectl rollout resume becomes.
func (r *scenarioRun) pauseResume(held bool) {
	r.t.Helper()
	switch {
	case held && r.mode.name == "instead":
		r.t.Log("a held Deployment in instead mode is paused by its hold: no pause of its user to try")
		return
	case held:
		r.u.must("annotate", "deployment/web", grayapi.PausedAnnotation+"=true")
	default:
		r.u.must("rollout", "pause", "deployment/web")
	}
	r.u.must("rollout", "resume", "deployment/web")
}

// deleteOldReplicaSet deletes one of web's old ReplicaSets that has no replicas and is not the
// stable one, as a person cleaning up history might; if there is none, nothing.
func (r *scenarioRun) deleteOldReplicaSet() {
	r.t.Helper()
	d := r.observe().d
	for _, rs := range ownedReplicaSets(r.t, r.e.client, d) {
		if replicasOf(rs.Spec.Replicas) == 0 && rs.Status.Replicas == 0 && rs.Labels[grayapi.StableLabel] != grayapi.StableLabelValue &&
			!deployutil.EqualIgnoreHash(&rs.Spec.Template, &d.Spec.Template) {
			r.u.must("delete", "replicaset", rs.Name)
			return
		}
	}
	r.t.Log("no old replica set at 0 to delete")
}

// settle waits the way a user does, with `kubectl gray status --until`, and
// then at once, without polling, checks the exact state: a hold that is
// reported before it has settled, or flaps, fails here.
func (r *scenarioRun) settle(want expectation) {
	r.t.Helper()
	until := "held"
	if want.phase == grayapi.PhaseComplete {
		until = "complete"
	}
	res := r.u.kubectl("gray", "status", "web", "--until", until, "--timeout", untilTimeout)
	got := r.observe()
	if res.code != 0 {
		r.t.Fatalf("waiting for %s (want %s) failed: %s\nstate now: %s", until, want, res, got.desc)
	}
	r.lastRevision = got.revision
	problems, released := r.compare(want, got)
	if len(problems) > 0 {
		r.t.Fatalf("right after `kubectl gray status --until %s` returned, the state is wrong:\n  %s\nwant %s\ngot  %s",
			until, strings.Join(problems, "\n  "), want, got.desc)
	}
	if len(released) > 0 {
		// Reported, then waited for, so the scenario goes on to find what
		// else is wrong rather than stopping at the first completion.
		r.t.Errorf("right after `kubectl gray status --until %s` returned, the Deployment is not released:\n  %s\ngot %s",
			until, strings.Join(released, "\n  "), got.desc)
		eventually(r.t, 30*time.Second, "deployment released", func() (bool, string) {
			now := r.observe()
			_, again := r.compare(want, now)
			return len(again) == 0, now.desc
		})
	}
	// Pod-level numbers trail the specs; these may be polled for.
	eventually(r.t, 30*time.Second, "new replicaset available at its size", func() (bool, string) {
		now := r.observe()
		return now.newAvailable == want.newSpec, now.desc
	})
}

// observation is the Deployment and its ReplicaSets read in one go.
type observation struct {
	// status is our status as read (ok: it parsed).
	status            grayapi.Status
	ok                bool
	phase             grayapi.Phase
	revision          int64
	newSpec, oldTotal int32
	newAvailable      int32
	newFound          bool
	newImage          string
	d                 *appsv1.Deployment
	desc              string
}

func (r *scenarioRun) observe() observation {
	r.t.Helper()
	ctx := context.Background()
	d, err := r.e.client.AppsV1().Deployments(r.e.ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		r.t.Fatal(err)
	}
	list, err := r.e.client.AppsV1().ReplicaSets(r.e.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		r.t.Fatal(err)
	}
	o := observation{d: d, newAvailable: -1}
	var sizes []string
	for i := range list.Items {
		rs := &list.Items[i]
		if !ownedBy(rs, d) {
			continue
		}
		spec := replicasOf(rs.Spec.Replicas)
		sizes = append(sizes, fmt.Sprintf("rev %s %s: spec %d available %d", rs.Annotations[deployutil.RevisionAnnotation],
			imageOf(&rs.Spec.Template), spec, rs.Status.AvailableReplicas))
		if deployutil.EqualIgnoreHash(&d.Spec.Template, &rs.Spec.Template) {
			o.newFound, o.newSpec, o.newAvailable, o.newImage = true, spec, rs.Status.AvailableReplicas, imageOf(&rs.Spec.Template)
		} else {
			o.oldTotal += spec
		}
	}
	sort.Strings(sizes)
	raw := d.Annotations[grayapi.StatusAnnotation]
	if st, err := grayapi.ParseStatus(raw); err == nil {
		o.status, o.ok = st, true
		o.phase, o.revision = st.Phase, st.Revision
	}
	o.desc = fmt.Sprintf("%s new %d old %d paused %t image %s; generation %d replicas %d strategy %+v %s=%q; replicasets %v; status %s",
		o.phase, o.newSpec, o.oldTotal, d.Spec.Paused, o.newImage, d.Generation, replicasOf(d.Spec.Replicas), d.Spec.Strategy,
		grayapi.StrategyAnnotation, d.Annotations[grayapi.StrategyAnnotation], sizes, raw)
	return o
}

// compare lists how got differs from want: problems with the rollout, and
// apart (alongside mode) what is not released yet. A held Deployment in
// alongside mode is taken over (Recreate, the original saved in
// kubegray.io/strategy); every other state has the original RollingUpdate,
// unpaused when complete.
func (r *scenarioRun) compare(want expectation, got observation) (problems, released []string) {
	check := func(ok bool, format string, args ...any) {
		if !ok {
			problems = append(problems, fmt.Sprintf(format, args...))
		}
	}
	d := got.d
	check(got.phase == want.phase, "phase %q, want %q", got.phase, want.phase)
	check(got.newFound, "no ReplicaSet matches the Deployment's template")
	check(got.newSpec == want.newSpec, "new ReplicaSet spec.replicas %d, want %d", got.newSpec, want.newSpec)
	check(got.oldTotal == want.oldTotal, "old ReplicaSets spec.replicas total %d, want %d", got.oldTotal, want.oldTotal)
	check(d.Spec.Paused == want.paused || (want.phase == grayapi.PhaseComplete && r.mode.name == "alongside"),
		"spec.paused %t, want %t", d.Spec.Paused, want.paused)
	check(got.newImage == want.image, "new ReplicaSet image %q, want %q", got.newImage, want.image)
	check(imageOf(&d.Spec.Template) == want.image, "Deployment image %q, want %q", imageOf(&d.Spec.Template), want.image)
	check(replicasOf(d.Spec.Replicas) == want.newSpec+want.oldTotal, "spec.replicas %d, want %d", replicasOf(d.Spec.Replicas), want.newSpec+want.oldTotal)
	if st := got.status; got.ok && st.Phase == grayapi.PhaseHeld && st.SettledAt != nil {
		// Its point's duration, or, for a hold kept through new hold points, what it recorded when
		// first seen: settledAt has whole seconds, so a hold that settles again within the same
		// second shares the key and records its new point's.
		key := [2]int64{st.Revision, st.SettledAt.Unix()}
		first, seen := r.holdFor[key]
		if !seen {
			first = pointHoldFor(st.Percent)
			r.holdFor[key] = first
		}
		own := pointHoldFor(st.Percent)
		check(st.HoldFor != nil && (st.HoldFor.Duration == own || st.HoldFor.Duration == first),
			"hold at %d%% settled at %s records holdFor %v, want its point's %v or %v, recorded when first seen", st.Percent,
			st.SettledAt.Format(time.RFC3339), st.HoldFor, own, first)
	}
	saved, taken := d.Annotations[grayapi.StrategyAnnotation]
	if r.mode.name == "alongside" && want.phase == grayapi.PhaseHeld {
		check(d.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType, "held in alongside mode with strategy %s, want Recreate (taken over)", d.Spec.Strategy.Type)
		s, err := parseSavedStrategy(saved)
		check(taken && err == nil && s.rollingUpdate && s.maxSurge.String() == r.s.maxSurge.String() &&
			s.maxUnavailable.String() == r.s.maxUnavail.String(), "saved strategy %q (%v), want RollingUpdate maxSurge=%s maxUnavailable=%s",
			saved, err, r.s.maxSurge.String(), r.s.maxUnavail.String())
		return problems, nil
	}
	if r.mode.name == "alongside" {
		check = func(ok bool, format string, args ...any) {
			if !ok {
				released = append(released, fmt.Sprintf(format, args...))
			}
		}
		check(!d.Spec.Paused, "spec.paused true, want false")
	}
	ru := d.Spec.Strategy.RollingUpdate
	check(d.Spec.Strategy.Type == appsv1.RollingUpdateDeploymentStrategyType && ru != nil && ru.MaxSurge.String() == r.s.maxSurge.String() &&
		ru.MaxUnavailable.String() == r.s.maxUnavail.String(), "strategy %+v, want the original RollingUpdate maxSurge=%s maxUnavailable=%s",
		d.Spec.Strategy, r.s.maxSurge.String(), r.s.maxUnavail.String())
	check(!taken, "%s=%q still set", grayapi.StrategyAnnotation, saved)
	return problems, released
}

// noCompletionWithoutResume fails when the watch saw a revision reported
// Held and later Complete before the test asked for the resume that
// completes it (or never).
func (r *scenarioRun) noCompletionWithoutResume() {
	r.t.Helper()
	rec := r.e.rec
	rec.mu.Lock()
	events := append([]recordedEvent(nil), rec.events...)
	rec.mu.Unlock()
	sort.SliceStable(events, func(i, j int) bool { return events[i].rv < events[j].rv })
	held := map[int64]bool{}
	for _, ev := range events {
		if ev.deployment == nil {
			continue
		}
		st, err := grayapi.ParseStatus(ev.deployment.Annotations[grayapi.StatusAnnotation])
		if err != nil {
			continue
		}
		switch st.Phase {
		case grayapi.PhaseHeld:
			held[st.Revision] = true
		case grayapi.PhaseComplete:
			allowed, ok := r.completionAllowed[st.Revision]
			if held[st.Revision] && (!ok || ev.at.Before(allowed)) {
				r.t.Errorf("revision %d was held and then completed at %s (rv %d) without a resume asking for it (asked: %v)",
					st.Revision, ev.at.Format(timeLayout), ev.rv, func() string {
						if ok {
							return allowed.Format(timeLayout)
						}
						return "never"
					}())
				return
			}
		}
	}
}

func envNumber(t *testing.T, key string, def uint64) uint64 {
	t.Helper()
	v := os.Getenv(key)
	if v == "" {
		return def
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		t.Fatalf("%s=%q: %v", key, v, err)
	}
	return n
}
