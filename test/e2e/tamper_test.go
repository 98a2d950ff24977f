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
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegray/kubectl-gray/pkg/deployutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
	"github.com/kubegray/kubectl-gray/test/cluster"
)

// The TestTamper suites drive a gray Deployment named web through
// what people and tools do to it — kubectl rollout undo|restart|pause|resume,
// kubectl apply (client- and server-side), kubectl set image, kubectl
// annotate, kubectl replace of an edited object — all through the real
// kubectl, and check that the gray state survives: exact ReplicaSet sizes
// (keyed by template: image, plus "+restart" / "+broken" for a restarted or
// never-ready template), the kubegray.io/status phase, spec.paused and, in
// alongside mode, the saved and restored strategy. Every scenario runs under
// the invariant recorder, restarts gray-controller once at a named point
// (and checks nothing moved across it), and ends with the rollout finished by
// `kubectl gray resume --full` or `kubectl gray undo`.

// Images of the successive templates.
const (
	tpImg1 = "nginx:1.25"
	tpImg2 = "nginx:1.26"
	tpImg3 = "nginx:1.27"
	tpImg4 = "nginx:1.28"
)

// tpWait is what every kubectl gray status --until waits at most (below
// kubectlTimeout, which bounds the kubectl process).
const tpWait = "80s"

// tpRestartedAt is the template annotation kubectl rollout restart writes.
const tpRestartedAt = "kubectl.kubernetes.io/restartedAt"

// tamperCluster is one control plane with gray-controller in one mode; the
// scenarios share it and take turns restarting the controller.
type tamperCluster struct {
	c         *cluster.Cluster
	alongside bool
	args      []string
	// mu is taken by a restart, and held for reading by a scenario waiting for an
	// event of the controller (steady): an event emitted just before a graceful
	// stop can die with the process (client-go's broadcaster has no flush; the
	// status it reported stays), and another scenario's restart must not be what
	// that scenario sees.
	mu sync.RWMutex
}

// steady runs check while no scenario restarts the controller.
func (tc *tamperCluster) steady(check func()) {
	tc.mu.RLock()
	defer tc.mu.RUnlock()
	check()
}

func (tc *tamperCluster) restart(t *testing.T) {
	t.Helper()
	tc.mu.Lock()
	defer tc.mu.Unlock()
	if err := tc.c.StopComponent(grayControllerName, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	startGrayController(t, tc.c, tc.args...)
}

// TestTamperInstead runs the tamper scenarios with gray-controller in place of
// the built-in deployment controller.
func TestTamperInstead(t *testing.T) {
	c := cluster.StartForTest(t, cluster.Options{Controllers: cluster.WithoutDeploymentController})
	tc := &tamperCluster{c: c, args: []string{"--mode=instead"}}
	startGrayController(t, c, tc.args...)
	runTamperScenarios(t, tc)
}

// TestTamperAlongside runs them next to the stock kube-controller-manager
// with the admission policies of manifests/alongside.
func TestTamperAlongside(t *testing.T) {
	c := cluster.StartForTest(t, cluster.Options{})
	// The guard policies first, as a cluster that moves from alongside-eager
	// to the takeover policy has them: until kube-apiserver loads the takeover
	// policy, the guard refuses a Deployment created with kubegray.io/percent,
	// and the installation's probe must wait for it rather than fail.
	docs := overlayManifests(t, "alongside")
	applyManifests(t, c, policyDocs(docs, "ValidatingAdmissionPolicy"))
	applyManifests(t, c, docs)
	tc := &tamperCluster{c: c, alongside: true, args: []string{"--mode=alongside"}}
	startGrayController(t, c, tc.args...)
	runTamperScenarios(t, tc)
}

// tamperScenario is one scenario; modes says where it applies.
type tamperScenario struct {
	name  string
	modes string // "both", "instead" or "alongside"
	run   func(e *tamperEnv)
}

func runTamperScenarios(t *testing.T, tc *tamperCluster) {
	var all []tamperScenario
	all = append(all, tamperUndoScenarios()...)
	all = append(all, tamperEditScenarios()...)
	mode := "instead"
	if tc.alongside {
		mode = "alongside"
	}
	t.Run("scenarios", func(t *testing.T) {
		for i, s := range all {
			if s.modes != "both" && s.modes != mode {
				continue
			}
			t.Run(s.name, func(t *testing.T) {
				t.Parallel()
				s.run(newTamperEnv(t, tc, strconv.Itoa(i)))
			})
		}
	})
}

// tamperEnv is one scenario: a namespace under the recorder and a kubectl user
// whose current namespace it is.
type tamperEnv struct {
	*grayEnv
	tc  *tamperCluster
	u   *pluginUser
	dir string
	n   int // manifests written
	// phaseUntrusted: the status was just tampered with, so its phase is
	// not one the controller wrote; keeps then checks sizes and paused only.
	phaseUntrusted bool
}

func newTamperEnv(t *testing.T, tc *tamperCluster, name string) *tamperEnv {
	t.Helper()
	// Registered first, so it runs last: after the recorder's verdict.
	var e *tamperEnv
	t.Cleanup(func() {
		if e != nil && t.Failed() {
			e.dumpTimeline()
		}
	})
	// Not t.TempDir(): its name comes from the test's, and kubectl -f splits
	// a path at commas.
	dir, err := os.MkdirTemp("", "tamper-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	var g *grayEnv
	if tc.alongside {
		g = newAlongsideEnv(t, tc.c, "tp"+name)
	} else {
		g = newGrayEnv(t, tc.c, "tp"+name)
	}
	e = &tamperEnv{grayEnv: g, tc: tc, u: newPluginUser(t, tc.c, g.ns), dir: dir}
	// Runs before the plugin user's directory is removed.
	t.Cleanup(func() {
		if t.Failed() {
			e.dumpCluster()
		}
	})
	return e
}

func (e *tamperEnv) alongside() bool { return e.tc.alongside }

// dumpCluster logs what a person would look at after a failure.
func (e *tamperEnv) dumpCluster() {
	e.u.kubectl("gray", "status", "web")
	e.u.kubectl("gray", "history", "web")
	e.u.kubectl("get", "events", "--field-selector", "involvedObject.name=web", "--sort-by=.lastTimestamp")
}

// dumpTimeline logs the recorder's history (after its verdict).
func (e *tamperEnv) dumpTimeline() {
	lines := e.rec.timeline()
	if len(lines) > 150 {
		lines = lines[len(lines)-150:]
	}
	e.t.Logf("recorder timeline of %s (last %d writes):\n  %s", e.ns, len(lines), strings.Join(lines, "\n  "))
}

// webManifest is the user's manifest of web, as kept in Git.
type webManifest struct {
	replicas           int32
	image              string
	percent            string // "": not a gray Deployment
	surge, unavailable string // "": the API default 25%/25%, not written
	minReady           int32
}

func yamlIntOrString(v string) string {
	if strings.HasSuffix(v, "%") {
		return strconv.Quote(v)
	}
	return v
}

func (m webManifest) yaml() string {
	var b strings.Builder
	b.WriteString("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n")
	if m.percent != "" {
		fmt.Fprintf(&b, "  annotations:\n    kubegray.io/percent: %q\n", m.percent)
	}
	fmt.Fprintf(&b, "spec:\n  replicas: %d\n", m.replicas)
	if m.minReady > 0 {
		fmt.Fprintf(&b, "  minReadySeconds: %d\n", m.minReady)
	}
	if m.surge != "" {
		fmt.Fprintf(&b, "  strategy:\n    type: RollingUpdate\n    rollingUpdate:\n      maxSurge: %s\n      maxUnavailable: %s\n",
			yamlIntOrString(m.surge), yamlIntOrString(m.unavailable))
	}
	b.WriteString("  selector:\n    matchLabels:\n      app: web\n  template:\n    metadata:\n      labels:\n        app: web\n" +
		"    spec:\n      containers:\n      - name: app\n        image: " + m.image + "\n")
	return b.String()
}

// writeFile writes a manifest into the scenario's directory.
func (e *tamperEnv) writeFile(content string) string {
	e.t.Helper()
	e.n++
	path := filepath.Join(e.dir, fmt.Sprintf("web-%d.yaml", e.n))
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		e.t.Fatal(err)
	}
	e.t.Logf("manifest %s:\n%s", path, content)
	return path
}

// apply runs kubectl apply [flags] -f of the manifest.
func (e *tamperEnv) apply(m webManifest, flags ...string) {
	e.t.Helper()
	e.u.must(append(append([]string{"apply"}, flags...), "-f", e.writeFile(m.yaml()))...)
}

// create applies m (client-side, or server-side with ssa) and waits for its
// first revision to be rolled out.
func (e *tamperEnv) create(m webManifest, ssa bool) {
	e.t.Helper()
	if ssa {
		e.apply(m, "--server-side")
	} else {
		e.apply(m)
	}
	if m.percent != "" {
		e.until("complete")
		e.want("the first revision", grayapi.PhaseComplete, map[string]int32{m.image: m.replicas}, false)
	} else {
		e.u.must("rollout", "status", "deploy/web", "--timeout="+tpWait)
		e.want("the first revision", tpAnyPhase, map[string]int32{m.image: m.replicas}, false)
	}
}

// until runs kubectl gray status web --until what and fails unless it
// exits 0.
func (e *tamperEnv) until(what string) {
	e.t.Helper()
	r := e.u.kubectl("gray", "status", "web", "--until", what, "--timeout", tpWait)
	if r.code == 2 && what == "complete" {
		// A Complete status that lags the generation (alongside: the
		// release's own write) keeps --until waiting: report it, go on.
		if d := e.get("web"); d != nil {
			if st, err := grayapi.ParseStatus(d.Annotations[grayapi.StatusAnnotation]); err == nil && st.Phase == grayapi.PhaseComplete && st.ObservedGeneration < d.Generation {
				e.t.Errorf("kubectl gray status web --until complete timed out: the status is Complete but for generation %d, the Deployment is at %d: %s",
					st.ObservedGeneration, d.Generation, strings.TrimSpace(r.stderr))
				return
			}
		}
	}
	if r.code != 0 {
		_, _, msg := e.look()
		e.t.Fatalf("kubectl gray status web --until %s: exit %d: %s\nnow: %s", what, r.code, strings.TrimSpace(r.stderr), msg)
	}
}

// tpAnyPhase in a wanted state: the phase is not checked (the Deployment is
// no longer gray).
const tpAnyPhase grayapi.Phase = "*"

type tamperState struct {
	phase  grayapi.Phase // "" when the status is missing or unreadable
	sizes  map[string]int32
	paused bool
}

func (s tamperState) String() string {
	return fmt.Sprintf("phase %q sizes %v paused %t", s.phase, s.sizes, s.paused)
}

// rsKey names a template in the size maps: its image, "+restart" after
// kubectl rollout restart, "+broken" with never-ready pods.
func rsKey(tpl *corev1.PodTemplateSpec) string {
	key := imageOf(tpl)
	if _, ok := tpl.Annotations[tpRestartedAt]; ok {
		key += "+restart"
	}
	if _, ok := tpl.Annotations[cluster.NeverReadyAnnotation]; ok {
		key += "+broken"
	}
	return key
}

// look reads web and its ReplicaSets.
func (e *tamperEnv) look() (tamperState, *appsv1.Deployment, string) {
	ctx := context.Background()
	d, err := e.client.AppsV1().Deployments(e.ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		return tamperState{}, nil, err.Error()
	}
	list, err := e.client.AppsV1().ReplicaSets(e.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return tamperState{}, nil, err.Error()
	}
	s := tamperState{sizes: map[string]int32{}, paused: d.Spec.Paused}
	var rss []string
	for _, rs := range list.Items {
		if !ownedBy(&rs, d) {
			continue
		}
		key := rsKey(&rs.Spec.Template)
		if _, dup := s.sizes[key]; dup {
			key += "#" + rs.Annotations[deployutil.RevisionAnnotation]
		}
		s.sizes[key] = replicasOf(rs.Spec.Replicas)
		rss = append(rss, fmt.Sprintf("%s rev %s: %d (available %d)", key, rs.Annotations[deployutil.RevisionAnnotation],
			replicasOf(rs.Spec.Replicas), rs.Status.AvailableReplicas))
	}
	sort.Strings(rss)
	if st, err := grayapi.ParseStatus(d.Annotations[grayapi.StatusAnnotation]); err == nil {
		s.phase = st.Phase
	}
	return s, d, fmt.Sprintf("%s; paused %t strategy %s; replicasets %v; annotations %v", s.phase, d.Spec.Paused,
		tpStrategy(d), rss, tpGrayAnnotations(d))
}

func tpGrayAnnotations(d *appsv1.Deployment) map[string]string {
	out := map[string]string{}
	for k, v := range d.Annotations {
		if grayapi.IsGrayAnnotation(k) {
			out[k] = v
		}
	}
	return out
}

func tpStrategy(d *appsv1.Deployment) string {
	s := string(d.Spec.Strategy.Type)
	if ru := d.Spec.Strategy.RollingUpdate; ru != nil {
		s += fmt.Sprintf(" maxSurge=%s maxUnavailable=%s", ru.MaxSurge, ru.MaxUnavailable)
	}
	return s
}

// want waits up to 60s for web to be exactly at phase, sizes and paused.
func (e *tamperEnv) want(what string, phase grayapi.Phase, sizes map[string]int32, paused bool) *appsv1.Deployment {
	e.t.Helper()
	var d *appsv1.Deployment
	wantSizes := fmt.Sprint(sizes)
	eventually(e.t, 60*time.Second, fmt.Sprintf("%s: web %s sizes %v paused %t", what, phase, sizes, paused), func() (bool, string) {
		got, obj, msg := e.look()
		d = obj
		return (phase == tpAnyPhase || got.phase == phase) && fmt.Sprint(got.sizes) == wantSizes && got.paused == paused, msg
	})
	return d
}

// status reads kubegray.io/status of web (failing if unreadable).
func (e *tamperEnv) status() grayapi.Status {
	e.t.Helper()
	return e.grayStatus(e.get("web"))
}

// keeps fails if sizes or spec.paused change within d, or a set phase turns
// into another one.
func (e *tamperEnv) keeps(what string, before tamperState, d time.Duration) {
	e.t.Helper()
	if e.phaseUntrusted {
		before.phase = ""
	}
	consistently(d, 200*time.Millisecond, func() {
		got, _, msg := e.look()
		if fmt.Sprint(got.sizes) != fmt.Sprint(before.sizes) || got.paused != before.paused ||
			(before.phase != "" && got.phase != "" && got.phase != before.phase) {
			e.t.Fatalf("%s: web moved: was %s, now %s", what, before, msg)
		}
	})
}

// still is keeps from the state now.
func (e *tamperEnv) still(what string, d time.Duration) {
	e.t.Helper()
	before, _, _ := e.look()
	e.keeps(what, before, d)
}

// stillAfterTamper is still right after the status was overwritten or dropped: the phase
// then is not the controller's, and the first sync that rebuilds the status may report the
// hold Progressing before Held (its target is new to it); sizes and spec.paused must not move.
func (e *tamperEnv) stillAfterTamper(what string, d time.Duration) {
	e.t.Helper()
	e.phaseUntrusted = true
	defer func() { e.phaseUntrusted = false }()
	e.still(what, d)
}

// restartController stops and starts gray-controller (where says at which
// point of the scenario) and checks that nothing moved across it.
func (e *tamperEnv) restartController(where string) {
	e.t.Helper()
	before, _, msg := e.look()
	e.t.Logf("restarting gray-controller %s; web is %s", where, msg)
	e.tc.restart(e.t)
	e.keeps("across the gray-controller restart "+where, before, 4*time.Second)
}

// restartAfterTamper is restartController right after the status was
// overwritten: the phase before is not the controller's.
func (e *tamperEnv) restartAfterTamper(where string) {
	e.t.Helper()
	e.phaseUntrusted = true
	defer func() { e.phaseUntrusted = false }()
	e.restartController(where)
}

// takenOver checks (alongside) that web is taken over with saved.
func (e *tamperEnv) takenOver(saved string) {
	e.t.Helper()
	if !e.alongside() {
		return
	}
	d := e.get("web")
	if d.Annotations[grayapi.StrategyAnnotation] != saved || !d.Spec.Paused || d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
		e.t.Errorf("web not taken over with %s=%q: paused %t strategy %s annotations %v", grayapi.StrategyAnnotation, saved,
			d.Spec.Paused, tpStrategy(d), tpGrayAnnotations(d))
	}
}

// final waits for the end state of a scenario: exactly sizes, Complete (or
// not gray any more), not paused, strategy RollingUpdate surge/unavailable
// and no saved strategy; and the rollout finished as kubectl sees it.
func (e *tamperEnv) final(sizes map[string]int32, gray bool, surge, unavailable string) {
	e.t.Helper()
	phase := tpAnyPhase
	if gray {
		phase = grayapi.PhaseComplete
	}
	e.want("the end", phase, sizes, false)
	e.strategyIs(surge, unavailable)
	e.u.must("rollout", "status", "deploy/web", "--timeout="+tpWait)
	d := e.get("web")
	if _, ok := d.Annotations[grayapi.ResumeAnnotation]; ok {
		e.t.Errorf("a resume request is left on web: %v", tpGrayAnnotations(d))
	}
	if gray {
		err := cluster.Poll(context.Background(), 15*time.Second, 200*time.Millisecond, func(context.Context) (bool, string, error) {
			d := e.get("web")
			st := e.grayStatus(d)
			return st.Revision == st.StableRevision && st.ObservedGeneration == d.Generation,
				fmt.Sprintf("status revision %d stableRevision %d observedGeneration %d (generation %d)",
					st.Revision, st.StableRevision, st.ObservedGeneration, d.Generation), nil
		})
		if err != nil {
			e.t.Errorf("complete web: %v", err)
		}
	}
}

// strategyIs waits until web is on RollingUpdate surge/unavailable without a
// saved strategy (released, in alongside mode).
func (e *tamperEnv) strategyIs(surge, unavailable string) {
	e.t.Helper()
	eventually(e.t, 30*time.Second, fmt.Sprintf("web on RollingUpdate maxSurge=%s maxUnavailable=%s, no saved strategy", surge, unavailable), func() (bool, string) {
		d := e.get("web")
		_, saved := d.Annotations[grayapi.StrategyAnnotation]
		ru := d.Spec.Strategy.RollingUpdate
		ok := !saved && d.Spec.Strategy.Type == appsv1.RollingUpdateDeploymentStrategyType && ru != nil &&
			ru.MaxSurge.String() == surge && ru.MaxUnavailable.String() == unavailable
		return ok, fmt.Sprintf("paused %t strategy %s annotations %v", d.Spec.Paused, tpStrategy(d), tpGrayAnnotations(d))
	})
}

// peak is the largest spec.replicas the recorder saw on a ReplicaSet of web
// with template key between from and to (zero to: until now).
func (e *tamperEnv) peak(key string, from, to time.Time) int32 {
	e.rec.mu.Lock()
	defer e.rec.mu.Unlock()
	peak := int32(0)
	for _, ev := range e.rec.events {
		rs := ev.replicaSet
		if rs == nil || ev.at.Before(from) || (!to.IsZero() && ev.at.After(to)) || !strings.HasPrefix(rs.Name, "web-") {
			continue
		}
		if rsKey(&rs.Spec.Template) == key {
			peak = max(peak, replicasOf(rs.Spec.Replicas))
		}
	}
	return peak
}

// annotate runs kubectl annotate deploy/web --overwrite args...
func (e *tamperEnv) annotate(args ...string) {
	e.t.Helper()
	e.u.must(append([]string{"annotate", "deploy/web", "--overwrite"}, args...)...)
}

// tamperStatus writes kubegray.io/status with kubectl annotate (arg as for it: "KEY=VALUE" or
// "KEY-"). Instead mode lets it through; in alongside mode the guard refuses it, naming the
// Deployment and whose the status is, so gray-controller's own stands.
func (e *tamperEnv) tamperStatus(arg string) {
	e.t.Helper()
	if !e.alongside() {
		e.annotate(arg)
		return
	}
	e.u.fails(1, e.statusRefusal(), "annotate", "deploy/web", "--overwrite", arg)
}

// statusRefusal is what the guard says to a write of kubegray.io/status on web.
func (e *tamperEnv) statusRefusal() []string {
	return []string{"kubegray-guard", "deployment " + e.ns + "/web: the " + grayapi.StatusAnnotation +
		" annotation is gray-controller's report of the gray rollout, and only gray-controller writes it"}
}

// replaceEdited emulates kubectl edit: kubectl get -o json, edit, kubectl
// replace -f (retried when the controller wrote in between). With refusal it
// wants the replace refused with those messages instead.
func (e *tamperEnv) replaceEdited(edit func(obj map[string]any), refusal ...string) {
	e.t.Helper()
	for attempt := 0; ; attempt++ {
		var obj map[string]any
		if err := json.Unmarshal([]byte(e.u.must("get", "deploy/web", "-o", "json")), &obj); err != nil {
			e.t.Fatal(err)
		}
		meta := obj["metadata"].(map[string]any)
		delete(meta, "managedFields")
		delete(obj, "status")
		edit(obj)
		data, err := json.MarshalIndent(obj, "", "  ")
		if err != nil {
			e.t.Fatal(err)
		}
		r := e.u.kubectl("replace", "-f", e.writeFile(string(data)))
		if attempt < 5 && strings.Contains(r.stderr, "the object has been modified") {
			continue
		}
		if len(refusal) == 0 && r.code == 0 {
			return
		}
		if len(refusal) > 0 && r.code == 1 {
			for _, m := range refusal {
				if !strings.Contains(r.stderr, m) {
					e.t.Errorf("kubectl replace refused without saying %q: %s", m, r)
				}
			}
			return
		}
		e.t.Fatalf("kubectl replace (want refused: %t): %s", len(refusal) > 0, r)
	}
}

// events are the reasons of web's events of type typ.
func (e *tamperEnv) hasEvent(typ, reason string) (bool, string) {
	list, err := e.client.CoreV1().Events(e.ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return false, err.Error()
	}
	var seen []string
	for _, ev := range list.Items {
		if ev.InvolvedObject.Name != "web" {
			continue
		}
		if ev.Type == typ && ev.Reason == reason {
			return true, ev.Message
		}
		seen = append(seen, ev.Type+"/"+ev.Reason)
	}
	return false, fmt.Sprintf("events %v", seen)
}

// waitProgressing waits until web's new ReplicaSet is between 1 and maxNew,
// phase Progressing.
func (e *tamperEnv) waitProgressing(maxNew int32) {
	e.t.Helper()
	eventually(e.t, 60*time.Second, fmt.Sprintf("web Progressing with 1..%d new replicas", maxNew), func() (bool, string) {
		s, _, msg := e.observed("web")
		return s.phase == grayapi.PhaseProgressing && s.newSpec >= 1 && s.newSpec <= maxNew, msg
	})
}

// refusedPaused is kubectl's refusal to roll back a paused Deployment.
const refusedPaused = "you cannot rollback a paused deployment"
