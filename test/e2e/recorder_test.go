package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/kubegray/kubectl-gray/pkg/deployutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
	"github.com/kubegray/kubectl-gray/pkg/rollout"
)

// recorder watches every Deployment and ReplicaSet write in one namespace and,
// when the test ends, replays them in resourceVersion order (etcd's global
// write order) and fails the test on a broken gray invariant:
//   - overshoot: a write leaves a gray Deployment's new ReplicaSet above the
//     target of the hold point for the replicas at that instant;
//   - a scale-up of the new ReplicaSet while the percent annotation is invalid;
//   - availability below R − maxUnavailable after the Deployment first
//     reached it, outside scaling (R is taken as the smaller of its values
//     before and after the latest replicas change);
//   - fighting: one ReplicaSet's size reversing direction more than once
//     between two changes of the Deployment's replicas or template.
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
}

type recordedEvent struct {
	rv         uint64
	deployment *appsv1.Deployment
	replicaSet *appsv1.ReplicaSet
	deleted    bool
}

func startRecorder(t *testing.T, client kubernetes.Interface, ns string) *recorder {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &recorder{t: t, ns: ns, cancel: cancel, scaleWrites: map[string]int{}}
	dw, err := client.AppsV1().Deployments(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("watch deployments: %v", err)
	}
	rw, err := client.AppsV1().ReplicaSets(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("watch replicasets: %v", err)
	}
	for _, w := range []watch.Interface{dw, rw} {
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			defer w.Stop()
			for ev := range w.ResultChan() {
				r.record(ev)
			}
		}()
	}
	t.Cleanup(r.verify)
	return r
}

func (r *recorder) record(ev watch.Event) {
	var rec recordedEvent
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

// stop ends the watches; verify calls it too.
func (r *recorder) stop() {
	r.cancel()
	r.wg.Wait()
}

type deploymentTrack struct {
	d              *appsv1.Deployment
	prevReplicas   int32
	reachedMinimum bool
}

type rsTrack struct {
	spec      int32
	lastDir   int // +1 up, -1 down
	reversals int
}

func (r *recorder) verify() {
	r.stop()
	r.mu.Lock()
	defer r.mu.Unlock()
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
				!deployutil.EqualIgnoreHash(&tr.d.Spec.Template, &d.Spec.Template); replicasChanged || templateChanged {
				if replicasChanged {
					tr.prevReplicas = replicasOf(tr.d.Spec.Replicas)
				}
				// A replicas change starts a new scaling episode and a template
				// change a new rollout (an undo makes an old ReplicaSet grow
				// again): resizes in both directions are expected now.
				for name, rs := range replicaSets {
					if ownedBy(rs, d) {
						tracks[name] = &rsTrack{spec: replicasOf(rs.Spec.Replicas)}
					}
				}
			}
			tr.d = d
		case ev.replicaSet != nil:
			rs := ev.replicaSet
			if ev.deleted {
				delete(replicaSets, rs.Name)
				continue
			}
			prev := replicaSets[rs.Name]
			replicaSets[rs.Name] = rs
			spec := replicasOf(rs.Spec.Replicas)
			tr := tracks[rs.Name]
			if tr == nil {
				tr = &rsTrack{spec: spec}
				tracks[rs.Name] = tr
			}
			if prev != nil && replicasOf(prev.Spec.Replicas) != spec {
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
				r.checkGrayTarget(ev.rv, rs, prev, deployments, fail)
			}
		}
		r.checkAvailability(ev.rv, deployments, replicaSets, fail)
	}
	if len(violations) > 0 {
		r.t.Errorf("gray invariants broken in namespace %s:\n  %s", r.ns, strings.Join(violations, "\n  "))
	}
}

// checkGrayTarget is called on every write that resized rs.
func (r *recorder) checkGrayTarget(rv uint64, rs, prev *appsv1.ReplicaSet, deployments map[string]*deploymentTrack, fail func(uint64, string, ...any)) {
	ref := metav1.GetControllerOf(rs)
	if ref == nil {
		return
	}
	tr := deployments[ref.Name]
	if tr == nil || tr.d.UID != ref.UID {
		return
	}
	d := tr.d
	value, gray := d.Annotations[grayapi.PercentAnnotation]
	if !gray || !deployutil.EqualIgnoreHash(&d.Spec.Template, &rs.Spec.Template) {
		return
	}
	spec := replicasOf(rs.Spec.Replicas)
	points, err := grayapi.ParsePercent(value)
	if err != nil {
		if spec > replicasOf(prev.Spec.Replicas) {
			fail(rv, "new replicaset %s scaled up %d→%d while kubegray.io/percent is invalid (%q)", rs.Name, replicasOf(prev.Spec.Replicas), spec, value)
		}
		return
	}
	status, err := grayapi.ParseStatus(d.Annotations[grayapi.StatusAnnotation])
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
	target := rollout.GrayTarget(replicas, points[step])
	if spec > target {
		fail(rv, "overshoot: new replicaset %s at %d, above the target %d (%d%% of %d, step %d)", rs.Name, spec, target, points[step], replicas, step)
	}
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
		if d.Spec.Strategy.RollingUpdate == nil {
			continue
		}
		replicas := min(replicasOf(d.Spec.Replicas), tr.prevReplicas)
		unavailable, err := intstr.GetScaledValueFromIntOrPercent(d.Spec.Strategy.RollingUpdate.MaxUnavailable, int(replicas), false)
		if err != nil {
			continue
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
		return fmt.Sprintf("rv %d %s deployment %s: replicas %d paused %t generation %d %s=%s", ev.rv, verb, d.Name,
			replicasOf(d.Spec.Replicas), d.Spec.Paused, d.Generation, grayapi.StatusAnnotation, d.Annotations[grayapi.StatusAnnotation])
	}
	rs := ev.replicaSet
	return fmt.Sprintf("rv %d %s replicaset %s (rev %s): spec %d, status replicas %d ready %d available %d", ev.rv, verb, rs.Name,
		rs.Annotations[deployutil.RevisionAnnotation], replicasOf(rs.Spec.Replicas), rs.Status.Replicas, rs.Status.ReadyReplicas,
		rs.Status.AvailableReplicas)
}

// replicasManager names the field manager that owns rs's spec.replicas, that
// is the last writer of it (an Update moves field ownership to its manager).
func replicasManager(rs *appsv1.ReplicaSet) string {
	for _, entry := range rs.ManagedFields {
		if entry.FieldsV1 == nil {
			continue
		}
		var fields struct {
			Spec map[string]json.RawMessage `json:"f:spec"`
		}
		if json.Unmarshal(entry.FieldsV1.GetRawBytes(), &fields) == nil {
			if _, ok := fields.Spec["f:replicas"]; ok {
				return entry.Manager
			}
		}
	}
	return "unknown"
}
