package e2e

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/kubegray/kubectl-gray/pkg/deployutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// recorder watches every Deployment and ReplicaSet write in one namespace and,
// when the test ends, replays them in resourceVersion order (etcd's global
// write order) and fails the test on a broken gray invariant:
//   - overshoot: a write grows a gray Deployment's new ReplicaSet above the
//     target of the hold point for the replicas at that instant;
//   - another writer's resize: in alongside mode, a change of spec.replicas of
//     a ReplicaSet labelled kubegray.io/frozen, or of any ReplicaSet of a
//     taken-over Deployment, by anyone but gray-controller (the freeze policy
//     must have refused it: recorder_frozen_test.go);
//   - a scale-up of the new ReplicaSet while the percent annotation is invalid,
//     beyond its share of a change of the Deployment's replicas (scaling is
//     never frozen, progress is);
//   - availability below R − maxUnavailable after the Deployment first
//     reached it, outside scaling (R is taken as the smaller of its values
//     before and after the latest replicas change); a taken-over Deployment
//     (alongside mode, Recreate) is judged by its saved strategy;
//   - fighting: one ReplicaSet's size reversing direction more than once
//     between two changes of the Deployment's replicas or template;
//   - a flapping hold: phase Held followed by another phase than Aborted in
//     statuses of the same revision, observedGeneration, step and percent (a
//     user who saw Held for a generation must be able to act on it);
//   - a blind recorder: a watch that ended before stop, a watch.Error event,
//     or a watch that saw no event at all (every check above would pass
//     vacuously).
//
// The targets are computed by grayTarget, the test's own reading of the
// documented rule, not by the package under test.
type recorder struct {
	t      *testing.T
	ns     string
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	events []recordedEvent
	// scaleWrites counts ReplicaSet spec.replicas changes per ReplicaSet and
	// writer: "<deployment>/<revision> by <field manager>".
	scaleWrites map[string]int
	// watchProblems are failures of the watches themselves; seen counts the
	// events of each watch.
	watchProblems []string
	seen          map[string]int
}

type recordedEvent struct {
	rv         uint64
	at         time.Time // when the watch delivered it, for people
	deployment *appsv1.Deployment
	replicaSet *appsv1.ReplicaSet
	deleted    bool
}

func startRecorder(t *testing.T, client kubernetes.Interface, ns string) *recorder {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &recorder{t: t, ns: ns, cancel: cancel, scaleWrites: map[string]int{}, seen: map[string]int{}}
	dw, err := client.AppsV1().Deployments(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("watch deployments: %v", err)
	}
	rw, err := client.AppsV1().ReplicaSets(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("watch replicasets: %v", err)
	}
	for kind, w := range map[string]watch.Interface{"deployments": dw, "replicasets": rw} {
		r.seen[kind] = 0
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			defer w.Stop()
			for ev := range w.ResultChan() {
				// client-go ends a watch whose context is cancelled with an
				// Error event ("context canceled"): that is our stop.
				if ctx.Err() != nil {
					continue
				}
				r.record(kind, ev)
			}
			// The API server ends watches after its request timeout, or
			// when it restarts: whatever came after is missing, so every
			// check would judge a partial history.
			if ctx.Err() == nil {
				r.problem("the watch of %s ended at %s, before the recorder was stopped", kind, time.Now().Format(timeLayout))
			}
		}()
	}
	t.Cleanup(r.verify)
	return r
}

func (r *recorder) record(kind string, ev watch.Event) {
	rec := recordedEvent{at: time.Now()}
	if ev.Type == watch.Error {
		r.problem("the watch of %s reported an error: %v", kind, ev.Object)
		return
	}
	r.mu.Lock()
	r.seen[kind]++
	r.mu.Unlock()
	switch obj := ev.Object.(type) {
	case *appsv1.Deployment:
		rec.deployment = obj
		rec.rv, _ = strconv.ParseUint(obj.ResourceVersion, 10, 64)
	case *appsv1.ReplicaSet:
		rec.replicaSet = obj
		rec.rv, _ = strconv.ParseUint(obj.ResourceVersion, 10, 64)
	default:
		return
	}
	rec.deleted = ev.Type == watch.Deleted
	r.mu.Lock()
	r.events = append(r.events, rec)
	r.mu.Unlock()
}

func (r *recorder) problem(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.watchProblems = append(r.watchProblems, fmt.Sprintf(format, args...))
}

// timeLayout is the wall clock of history lines.
const timeLayout = "15:04:05.000"

// timeline is every event recorded so far, in resourceVersion order, one
// line each, for a person reading a failure.
func (r *recorder) timeline() []string {
	r.mu.Lock()
	events := append([]recordedEvent(nil), r.events...)
	r.mu.Unlock()
	sort.SliceStable(events, func(i, j int) bool { return events[i].rv < events[j].rv })
	lines := make([]string, 0, len(events))
	for _, ev := range events {
		lines = append(lines, ev.at.Format(timeLayout)+" "+describeEvent(ev))
	}
	return lines
}

// stop ends the watches; verify calls it too.
func (r *recorder) stop() {
	r.cancel()
	r.wg.Wait()
}

type deploymentTrack struct {
	d              *appsv1.Deployment
	prevReplicas   int32
	reachedMinimum bool
	// held is the latest readable gray status while its phase is Held.
	held *grayapi.Status
}

type rsTrack struct {
	spec int32
	// start is spec when the current episode (replicas, template or gray step) began.
	start     int32
	lastDir   int // +1 up, -1 down
	reversals int
}

func (r *recorder) verify() {
	r.stop()
	r.mu.Lock()
	defer r.mu.Unlock()
	for kind, n := range r.seen {
		if n == 0 {
			r.watchProblems = append(r.watchProblems, "the watch of "+kind+" saw no event at all")
		}
	}
	if len(r.watchProblems) > 0 {
		sort.Strings(r.watchProblems)
		r.t.Errorf("invariant recorder of namespace %s cannot vouch for its checks:\n  %s", r.ns, strings.Join(r.watchProblems, "\n  "))
	}
	events := append([]recordedEvent(nil), r.events...)
	sort.SliceStable(events, func(i, j int) bool { return events[i].rv < events[j].rv })

	deployments := map[string]*deploymentTrack{}
	replicaSets := map[string]*appsv1.ReplicaSet{}
	tracks := map[string]*rsTrack{}
	var violations, history []string
	fail := func(rv uint64, format string, args ...any) {
		if len(violations) == 0 {
			// The writes leading to the first violation explain it best.
			violations = append(violations, "writes before the first violation:\n    "+strings.Join(history, "\n    "))
		}
		if len(violations) < 20 {
			violations = append(violations, fmt.Sprintf("at resourceVersion %d: ", rv)+fmt.Sprintf(format, args...))
		}
	}

	for _, ev := range events {
		history = append(history, describeEvent(ev))
		if len(history) > 15 {
			history = history[1:]
		}
		switch {
		case ev.deployment != nil:
			d := ev.deployment
			if ev.deleted {
				delete(deployments, d.Name)
				continue
			}
			tr := deployments[d.Name]
			if tr == nil {
				tr = &deploymentTrack{prevReplicas: replicasOf(d.Spec.Replicas)}
				deployments[d.Name] = tr
			} else if replicasChanged, templateChanged := replicasOf(tr.d.Spec.Replicas) != replicasOf(d.Spec.Replicas),
				!deployutil.EqualIgnoreHash(&tr.d.Spec.Template, &d.Spec.Template); replicasChanged || templateChanged || grayStepChanged(tr.d, d) {
				if replicasChanged {
					tr.prevReplicas = replicasOf(tr.d.Spec.Replicas)
				}
				// A replicas change starts a new scaling episode, a template
				// change a new rollout (an undo makes an old ReplicaSet grow
				// again) and a new gray step or target a new leg: resizes in both
				// directions are expected now.
				for name, rs := range replicaSets {
					if ownedBy(rs, d) {
						tracks[name] = &rsTrack{spec: replicasOf(rs.Spec.Replicas), start: replicasOf(rs.Spec.Replicas)}
					}
				}
			}
			tr.d = d
			checkHoldKept(ev.rv, tr, fail)
		case ev.replicaSet != nil:
			rs := ev.replicaSet
			if ev.deleted {
				delete(replicaSets, rs.Name)
				// Whoever deleted it took its pods away: availability is judged afresh from
				// the point the Deployment reaches its minimum again.
				if tr := ownerTrack(rs, deployments); tr != nil {
					tr.reachedMinimum = false
				}
				continue
			}
			prev := replicaSets[rs.Name]
			replicaSets[rs.Name] = rs
			spec := replicasOf(rs.Spec.Replicas)
			tr := tracks[rs.Name]
			if tr == nil {
				tr = &rsTrack{spec: spec, start: spec}
				tracks[rs.Name] = tr
			}
			if prev != nil && replicasOf(prev.Spec.Replicas) != spec {
				checkOnlyGraySizes(ev.rv, rs, prev, deployments, fail)
				key := rs.Name
				if ref := metav1.GetControllerOf(rs); ref != nil {
					key = ref.Name + "/" + rs.Annotations[deployutil.RevisionAnnotation]
				}
				r.scaleWrites[key+" by "+replicasManager(rs)]++
				dir := 1
				if spec < replicasOf(prev.Spec.Replicas) {
					dir = -1
				}
				if tr.lastDir != 0 && dir != tr.lastDir {
					tr.reversals++
					if tr.reversals > 1 {
						fail(ev.rv, "replicaset %s resized back and forth (now %d): competing writers?", rs.Name, spec)
					}
				}
				tr.lastDir = dir
				tr.spec = spec
				r.checkGrayTarget(ev, rs, prev, tr.start, deployments, fail)
			}
		}
		r.checkAvailability(ev.rv, deployments, replicaSets, fail)
	}
	if len(violations) > 0 {
		r.t.Errorf("gray invariants broken in namespace %s:\n  %s", r.ns, strings.Join(violations, "\n  "))
	}
}

// checkGrayTarget is called on every write that resized rs. Only a write that grows the new
// ReplicaSet above its target is overshoot: a lowered hold point leaves it above the new,
// lower target until it has come down, and the writes that shrink it on the way are fine.
func (r *recorder) checkGrayTarget(ev recordedEvent, rs, prev *appsv1.ReplicaSet, start int32, deployments map[string]*deploymentTrack,
	fail func(uint64, string, ...any)) {
	rv := ev.rv
	tr := ownerTrack(rs, deployments)
	if tr == nil {
		return
	}
	d := tr.d
	value, gray := d.Annotations[grayapi.PercentAnnotation]
	if !gray || !deployutil.EqualIgnoreHash(&d.Spec.Template, &rs.Spec.Template) {
		return
	}
	spec, before := replicasOf(rs.Spec.Replicas), replicasOf(prev.Spec.Replicas)
	points, err := grayapi.ParsePercent(value)
	if err != nil {
		if spec > before && !grewInShare(start, spec, tr.prevReplicas, replicasOf(d.Spec.Replicas)) {
			fail(rv, "new replicaset %s scaled up %d→%d while kubegray.io/percent is invalid (%q), beyond its share of a scale from %d to %d replicas",
				rs.Name, before, spec, value, tr.prevReplicas, replicasOf(d.Spec.Replicas))
		}
		return
	}
	raw, reported := d.Annotations[grayapi.StatusAnnotation]
	if !reported && !d.Spec.Paused {
		// Neither reported on nor held: released by `kubectl gray release` with gray-controller
		// gone, the built-in controller rolls it as any other Deployment.
		return
	}
	status, err := grayapi.ParseStatus(raw)
	revision, _ := strconv.ParseInt(rs.Annotations[deployutil.RevisionAnnotation], 10, 64)
	step := int32(0)
	if err == nil && status.Revision == revision {
		step = status.Step
	}
	if err == nil && status.StableRevision != 0 && isRevisionOf(rs, status.StableRevision) {
		return // rolling back to the stable revision skips every hold point
	}
	if int(step) >= len(points) {
		return
	}
	replicas := replicasOf(d.Spec.Replicas)
	target := grayTarget(replicas, points[step])
	if spec <= target || spec <= before {
		return
	}
	fail(rv, "overshoot: new replicaset %s grew %d→%d, above the target %d (%d%% of %d, step %d)", rs.Name, before, spec, target, points[step], replicas, step)
}

// ownerTrack is the track of the Deployment controlling rs, nil when it is not recorded.
func ownerTrack(rs *appsv1.ReplicaSet, deployments map[string]*deploymentTrack) *deploymentTrack {
	ref := metav1.GetControllerOf(rs)
	if ref == nil {
		return nil
	}
	if tr := deployments[ref.Name]; tr != nil && tr.d.UID == ref.UID {
		return tr
	}
	return nil
}

// isRevisionOf reports whether rs is, or was before a rollback renumbered
// it, the given revision.
func isRevisionOf(rs *appsv1.ReplicaSet, revision int64) bool {
	want := strconv.FormatInt(revision, 10)
	if rs.Annotations[deployutil.RevisionAnnotation] == want {
		return true
	}
	for _, old := range strings.Split(rs.Annotations[deployutil.RevisionHistoryAnnotation], ",") {
		if old == want {
			return true
		}
	}
	return false
}

func (r *recorder) checkAvailability(rv uint64, deployments map[string]*deploymentTrack, replicaSets map[string]*appsv1.ReplicaSet, fail func(uint64, string, ...any)) {
	for _, tr := range deployments {
		d := tr.d
		maxSurge, maxUnavailable, ok := rollingLimits(d)
		if !ok || d.DeletionTimestamp != nil {
			// A Deployment being deleted lets go of its ReplicaSets (--cascade=orphan) or
			// loses them.
			tr.reachedMinimum = false
			continue
		}
		replicas := min(replicasOf(d.Spec.Replicas), tr.prevReplicas)
		unavailable, err := intstr.GetScaledValueFromIntOrPercent(maxUnavailable, int(replicas), false)
		if err != nil {
			continue
		}
		// Upstream's fencepost rule: limits that both round to 0 (maxSurge 0
		// and 25% of 2, say) let one replica be unavailable.
		if surge, err := intstr.GetScaledValueFromIntOrPercent(maxSurge, int(replicas), true); err == nil && surge == 0 && unavailable == 0 {
			unavailable = 1
		}
		minimum := replicas - int32(unavailable)
		available := int32(0)
		var sizes []string
		for _, rs := range replicaSets {
			if ownedBy(rs, d) {
				available += rs.Status.AvailableReplicas
				sizes = append(sizes, fmt.Sprintf("rev %s spec %d available %d", rs.Annotations[deployutil.RevisionAnnotation],
					replicasOf(rs.Spec.Replicas), rs.Status.AvailableReplicas))
			}
		}
		sort.Strings(sizes)
		if !tr.reachedMinimum {
			tr.reachedMinimum = available >= minimum
			continue
		}
		if available < minimum {
			fail(rv, "deployment %s has %d available replicas, below %d (replicas %d − maxUnavailable %d); replicasets: %s",
				d.Name, available, minimum, replicas, unavailable, strings.Join(sizes, ", "))
			tr.reachedMinimum = false // report each dip once
		}
	}
}

// rollingLimits are the maxSurge and maxUnavailable d's rollout must
// respect: its own RollingUpdate, or while taken over (alongside mode puts it
// on Recreate) the saved strategy the controller rolls it with. false: no
// limits (Recreate).
func rollingLimits(d *appsv1.Deployment) (*intstr.IntOrString, *intstr.IntOrString, bool) {
	if ru := d.Spec.Strategy.RollingUpdate; ru != nil {
		return ru.MaxSurge, ru.MaxUnavailable, true
	}
	saved, ok := d.Annotations[grayapi.StrategyAnnotation]
	if !ok {
		return nil, nil, false
	}
	s, err := parseSavedStrategy(saved)
	if err != nil || !s.rollingUpdate {
		return nil, nil, false
	}
	return &s.maxSurge, &s.maxUnavailable, true
}

// checkHoldKept fails when a Deployment reported Held and then, for the same
// revision, generation, step and percent, another phase: the hold flapped. A
// resume or new hold points change the step or percent; a new template or
// replicas count, the generation.
func checkHoldKept(rv uint64, tr *deploymentTrack, fail func(uint64, string, ...any)) {
	raw, ok := tr.d.Annotations[grayapi.StatusAnnotation]
	if !ok {
		tr.held = nil
		return
	}
	st, err := grayapi.ParseStatus(raw)
	if err != nil {
		tr.held = nil
		return
	}
	// Someone deleting the stable ReplicaSet under a hold ends it without a new generation, and
	// so does an abort (a person's, through kubegray.io/resume, which is no spec change), and a
	// gate that fails the settled canary (docs/gates.md).
	endsHold := st.Failure != nil && (st.Failure.Reason == grayapi.ReasonStableReplicaSetGone || st.Failure.Reason == grayapi.ReasonGateFailed)
	if h := tr.held; h != nil && st.Phase != grayapi.PhaseHeld && st.Phase != grayapi.PhaseAborted && !endsHold && st.Revision == h.Revision &&
		st.ObservedGeneration == h.ObservedGeneration && st.Step == h.Step && st.Percent == h.Percent {
		fail(rv, "hold flapped: deployment %s reported Held and then %s for the same revision %d, observedGeneration %d, step %d (%d%%)",
			tr.d.Name, st.Phase, st.Revision, st.ObservedGeneration, st.Step, st.Percent)
	}
	tr.held = nil
	if st.Phase == grayapi.PhaseHeld {
		tr.held = &st
	}
}

// grewInShare reports whether a new ReplicaSet that had start replicas when the Deployment went
// from before to after replicas grew no more than its share, rounded up: ceil(start·after/before).
// A gray target T = ceil(R·P/100) is always within it (T·R'/R ≥ R'·P/100).
func grewInShare(start, spec, before, after int32) bool {
	if after <= before || before <= 0 {
		return false
	}
	return int64(spec)*int64(before) <= int64(start)*int64(after)+int64(before)-1
}

// grayStepChanged reports whether the gray status moved to another revision,
// step or target between two versions of a Deployment.
func grayStepChanged(before, after *appsv1.Deployment) bool {
	a, errA := grayapi.ParseStatus(before.Annotations[grayapi.StatusAnnotation])
	b, errB := grayapi.ParseStatus(after.Annotations[grayapi.StatusAnnotation])
	if errA != nil || errB != nil {
		return (errA == nil) != (errB == nil)
	}
	return a.Revision != b.Revision || a.Step != b.Step || a.Target != b.Target
}

func ownedBy(rs *appsv1.ReplicaSet, d *appsv1.Deployment) bool {
	ref := metav1.GetControllerOf(rs)
	return ref != nil && ref.UID == d.UID
}

func replicasOf(p *int32) int32 {
	if p == nil {
		return 1
	}
	return *p
}

// describeEvent is one line of the recorder's history.
func describeEvent(ev recordedEvent) string {
	verb := "write"
	if ev.deleted {
		verb = "delete"
	}
	if d := ev.deployment; d != nil {
		status := "no status"
		if raw, ok := d.Annotations[grayapi.StatusAnnotation]; ok {
			status = "status unreadable: " + raw
			if st, err := grayapi.ParseStatus(raw); err == nil {
				status = fmt.Sprintf("status %s rev %d step %d (%d%%) target %d observedGeneration %d", st.Phase, st.Revision, st.Step,
					st.Percent, st.Target, st.ObservedGeneration)
			}
		}
		extra := ""
		if r, ok := d.Annotations[grayapi.ResumeAnnotation]; ok {
			extra += " resume=" + r
		}
		if p, ok := d.Annotations[grayapi.PercentAnnotation]; ok {
			extra += " percent=" + p
		}
		return fmt.Sprintf("rv %d %s deployment %s: generation %d replicas %d paused %t %s; strategy %s%s; image %s", ev.rv, verb, d.Name,
			d.Generation, replicasOf(d.Spec.Replicas), d.Spec.Paused, status, d.Spec.Strategy.Type, extra, imageOf(&d.Spec.Template))
	}
	rs := ev.replicaSet
	return fmt.Sprintf("rv %d %s replicaset %s (rev %s, %s): spec %d, status replicas %d ready %d available %d, by %s", ev.rv, verb, rs.Name,
		rs.Annotations[deployutil.RevisionAnnotation], imageOf(&rs.Spec.Template), replicasOf(rs.Spec.Replicas), rs.Status.Replicas,
		rs.Status.ReadyReplicas, rs.Status.AvailableReplicas, replicasManager(rs))
}

// imageOf is the image of the first container, the one the tests change.
func imageOf(t *corev1.PodTemplateSpec) string {
	if len(t.Spec.Containers) == 0 {
		return "(no container)"
	}
	return t.Spec.Containers[0].Image
}

// replicasManager names the field manager that owns rs's spec.replicas, that
// is the last writer of it (an Update moves field ownership to its manager).
func replicasManager(rs *appsv1.ReplicaSet) string {
	if owner := deployutil.FieldOwner(rs.ManagedFields, "f:spec", "f:replicas"); owner != "" {
		return owner
	}
	return "unknown"
}
