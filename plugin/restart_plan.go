package plugin

// `kubectl gray restart`, the decisions: whether a Deployment may be
// restarted now and which ReplicaSets in which order, how many pods may be
// down at once, and which pods go next. Pure functions of what was read; the
// loop that reads, evicts and waits is restart.go.

import (
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/kubectl/pkg/util/podutils"

	"github.com/kubegray/kubectl-gray/pkg/deployutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
	"github.com/kubegray/kubectl-gray/pkg/rollout"
)

// restartTarget is one ReplicaSet whose pods a restart replaces.
type restartTarget struct {
	Name     string
	UID      types.UID
	Role     string // "canary", "stable", "old", or "" for a settled Deployment's only ReplicaSet
	Revision int64
	Replicas int32
}

func (t restartTarget) String() string {
	s := fmt.Sprintf("replicaset %s (", t.Name)
	if t.Role != "" {
		s += t.Role + ", "
	}
	return s + fmt.Sprintf("revision %d, %s)", t.Revision, podCount(int(t.Replicas)))
}

// podCount is "1 pod" or "N pods".
func podCount(n int) string {
	if n == 1 {
		return "1 pod"
	}
	return fmt.Sprintf("%d pods", n)
}

// restartTargets says whether d may be restarted now and returns its
// ReplicaSets with pods in the order they are restarted, and how d stands
// ("held at 20%, revision 2"). Two shapes are safe, because nothing but the
// restart then takes pods down:
//
//   - a gray rollout Held for d's generation: the canary first, so that a bad
//     restart shows on the small side, then the stable ReplicaSet, then any
//     other old one, newest first;
//   - a settled Deployment: observed by its controller, one ReplicaSet with
//     all the replicas (complete, aborted, or paused with nothing moving; a
//     finished gray rollout whose pods are not all available reports
//     Progressing, and is settled when that ReplicaSet has its template).
//
// Anything else is refused: while a step moves, the rollout takes pods down
// within the same maxUnavailable, and the two would not see each other's.
func restartTargets(d *appsv1.Deployment, rss []*appsv1.ReplicaSet) ([]restartTarget, string, error) {
	obj := fmt.Sprintf("deployment %s/%s", d.Namespace, d.Name)
	wait := fmt.Sprintf("wait for the hold ('kubectl gray status %s --until held') or the end of the rollout ('kubectl gray status %s --until complete'), then restart", d.Name, d.Name)
	if d.DeletionTimestamp != nil {
		return nil, "", fmt.Errorf("%s is being deleted", obj)
	}
	active := deployutil.FilterActiveReplicaSets(rss)
	replicas := deploymentReplicas(d)
	if _, gray := d.Annotations[grayapi.PercentAnnotation]; gray {
		st, recorded, err := grayapi.RecordedStatus(d.Annotations)
		if !recorded {
			return nil, "", fmt.Errorf("%s has no gray status yet, so whether its rollout is moving is unknown; check that gray-controller is running, then 'kubectl gray status %s'", obj, d.Name)
		}
		if err != nil {
			return nil, "", fmt.Errorf("%s: cannot tell whether its rollout is moving: %w", obj, err)
		}
		switch st.Phase {
		case grayapi.PhaseHeld:
			if st.ObservedGeneration < d.Generation {
				return nil, "", fmt.Errorf("%s changed since gray-controller reported its hold (generation %d, reported %d), so its ReplicaSets may be moving; %s", obj, d.Generation, st.ObservedGeneration, wait)
			}
			if total := deployutil.GetReplicaCountForReplicaSets(active); total != replicas {
				return nil, "", fmt.Errorf("%s is held but its ReplicaSets have %d replicas for %d wanted (%s), so they are moving; %s", obj, total, replicas, describeSizes(active), wait)
			}
			return heldTargets(active, st.Revision), fmt.Sprintf("held at %d%%, revision %d", st.Percent, st.Revision), nil
		case grayapi.PhaseProgressing, grayapi.PhaseRolledBack:
			// A finished rollout whose pods are not all available (this restart's own evictions
			// among them) is Progressing again, as kubectl rollout status waits for them: with
			// one ReplicaSet, of the Deployment's template, it is settled, checked below.
			if len(active) != 1 || !deployutil.EqualIgnoreHash(&active[0].Spec.Template, &d.Spec.Template) {
				return nil, "", fmt.Errorf("%s is not held (phase %s): a rollout step is moving and takes pods down within the same maxUnavailable as a restart would, so the two would overrun it; %s", obj, st.Phase, wait)
			}
		case grayapi.PhaseInvalid:
			if len(active) > 1 {
				return nil, "", fmt.Errorf("%s is Invalid (%s): its rollout is stopped between two ReplicaSets without a hold, and a scale still moves them; fix it with 'kubectl gray set %s PERCENT', then %s", obj, st.Message, d.Name, wait)
			}
		case grayapi.PhaseDegraded:
			return nil, "", fmt.Errorf("%s is Degraded: its canary's pods are not all available and the step is not held; see 'kubectl gray status %s', then abort ('kubectl gray abort %s') or fix the canary before restarting", obj, d.Name, d.Name)
		}
	}
	if d.Status.ObservedGeneration < d.Generation {
		return nil, "", fmt.Errorf("%s changed (generation %d) and its controller has not acted on it yet (observed %d); %s", obj, d.Generation, d.Status.ObservedGeneration, wait)
	}
	switch {
	case replicas == 0 || len(active) == 0:
		return nil, "settled, no replicas", nil
	case len(active) > 1:
		return nil, "", fmt.Errorf("%s is in the middle of a rollout and not held: %d ReplicaSets have pods (%s), and the rollout takes pods down within the same maxUnavailable as a restart would; %s", obj, len(active), describeSizes(active), wait)
	}
	rs := active[0]
	if n := rsSpecReplicas(rs); n != replicas {
		return nil, "", fmt.Errorf("%s is scaling: replicaset %s has %d replicas for %d wanted; wait until it is done, then restart", obj, rs.Name, n, replicas)
	}
	for _, old := range rss {
		if old.UID != rs.UID && old.Status.Replicas > 0 {
			return nil, "", fmt.Errorf("%s is still scaling down replicaset %s (%d pods left); wait until it is done, then restart", obj, old.Name, old.Status.Replicas)
		}
	}
	rev, _ := deployutil.Revision(rs)
	return []restartTarget{target(rs, "", rev)}, fmt.Sprintf("settled on revision %d", rev), nil
}

// heldTargets orders a held rollout's ReplicaSets with pods: the canary (of
// revision canaryRevision), the stable one, then other old ones newest first.
func heldTargets(active []*appsv1.ReplicaSet, canaryRevision int64) []restartTarget {
	var canary, stable, others []restartTarget
	for _, rs := range active {
		rev, _ := deployutil.Revision(rs)
		switch {
		case rev == canaryRevision:
			canary = append(canary, target(rs, "canary", rev))
		case rs.Labels[grayapi.StableLabel] == grayapi.StableLabelValue:
			stable = append(stable, target(rs, "stable", rev))
		default:
			others = append(others, target(rs, "old", rev))
		}
	}
	slices.SortFunc(others, func(a, b restartTarget) int { return int(b.Revision - a.Revision) })
	return slices.Concat(canary, stable, others)
}

func target(rs *appsv1.ReplicaSet, role string, rev int64) restartTarget {
	return restartTarget{Name: rs.Name, UID: rs.UID, Role: role, Revision: rev, Replicas: rsSpecReplicas(rs)}
}

// describeSizes lists ReplicaSets and their sizes: "web-5f4 8, web-7c9 2".
func describeSizes(rss []*appsv1.ReplicaSet) string {
	parts := make([]string, len(rss))
	for i, rs := range rss {
		parts[i] = fmt.Sprintf("%s %d", rs.Name, rsSpecReplicas(rs))
	}
	return strings.Join(parts, ", ")
}

// restartLimit is how many of d's pods may be unavailable at once during a
// restart, and where the number comes from (for messages). override is
// --max-unavailable; without it the Deployment's own maxUnavailable is
// resolved against spec.replicas as a rolling update resolves it
// (rollout.ResolveFenceposts: a percentage rounds down, and one replica may
// go when both fields resolve to 0), clamped to the replicas. A taken-over
// Deployment (alongside mode) is read with the strategy it saved in
// kubegray.io/strategy, since its own is the takeover's Recreate.
//
//	R=10, 25%/25%   → 2
//	R=3,  25%/25%   → 0 (0.75 rounds down; the rolling update surges instead): refused
//	R=3,  0/25%     → 1 (both zero: one may go)
//	R=10, override 3 → 3;  R=10, override 50% → 5;  R=4, override 10 → 4
func restartLimit(d *appsv1.Deployment, override *intstr.IntOrString) (int32, string, error) {
	obj := fmt.Sprintf("deployment %s/%s", d.Namespace, d.Name)
	replicas := deploymentReplicas(d)
	if override != nil {
		n, err := intstr.GetScaledValueFromIntOrPercent(override, int(replicas), false)
		if err != nil {
			return 0, "", fmt.Errorf("invalid --max-unavailable %s: %w", override, err)
		}
		limit := min(int32(n), replicas)
		if limit < 1 && replicas > 0 {
			return 0, "", fmt.Errorf("--max-unavailable %s of %d replicas rounds down to 0, which restarts nothing; give at least 1", override, replicas)
		}
		return limit, fmt.Sprintf("--max-unavailable %s", override), nil
	}
	strategy := d.Spec.Strategy
	if saved, ok := d.Annotations[grayapi.StrategyAnnotation]; ok && strategy.Type == appsv1.RecreateDeploymentStrategyType {
		parsed, err := grayapi.ParseStrategy(saved)
		if err != nil {
			return 0, "", fmt.Errorf("%s: reading its saved strategy: %w", obj, err)
		}
		strategy = parsed
	}
	if strategy.Type == appsv1.RecreateDeploymentStrategyType {
		return 0, "", fmt.Errorf("%s uses the Recreate strategy, which has no maxUnavailable to restart within; give --max-unavailable N to take N pods down at a time", obj)
	}
	surge, unavailable := defaultFencepost(), defaultFencepost()
	if ru := strategy.RollingUpdate; ru != nil {
		surge = *intstr.ValueOrDefault(ru.MaxSurge, surge)
		unavailable = *intstr.ValueOrDefault(ru.MaxUnavailable, unavailable)
	}
	_, limit, err := rollout.ResolveFenceposts(&surge, &unavailable, replicas)
	if err != nil {
		return 0, "", fmt.Errorf("%s: %w", obj, err)
	}
	limit = min(limit, replicas)
	source := fmt.Sprintf("maxUnavailable %s of %d replicas", unavailable.String(), replicas)
	if limit < 1 && replicas > 0 {
		return 0, "", fmt.Errorf("%s allows no unavailable pods (%s is 0, maxSurge %s): its rolling updates surge instead, which a restart cannot do without resizing the ReplicaSets; give --max-unavailable N to take N pods down at a time", obj, source, surge.String())
	}
	return limit, source, nil
}

// defaultFencepost is the API server's default of maxSurge and
// maxUnavailable.
func defaultFencepost() intstr.IntOrString { return intstr.FromString("25%") }

// batchSize is how many more available pods may be taken down now: the limit
// less the replicas already unavailable (counted like a rolling update:
// spec.replicas less the available pods), never below 0.
//
//	limit 2, 0 unavailable → 2;  limit 2, 1 unavailable → 1;  limit 2, 3 unavailable → 0
func batchSize(limit, replicas, available int32) int32 {
	return max(0, limit-max(0, replicas-available))
}

// restartPod is one pod as a restart sees it.
type restartPod struct {
	Name       string
	UID        types.UID
	ReplicaSet types.UID
	Available  bool
}

// restartState is the Deployment's pods at one moment: the active ones of its
// ReplicaSets, terminating pods left out as the ReplicaSet controller leaves
// them out.
type restartState struct {
	Replicas int32
	Pods     []restartPod
}

// podsOf collects the active pods among pods that a ReplicaSet in owners
// controls, with their availability at now (minReadySeconds counted as the
// ReplicaSet controller counts it), sorted by name.
func podsOf(pods []corev1.Pod, owners map[types.UID]bool, minReadySeconds int32, now metav1.Time) []restartPod {
	var out []restartPod
	for i := range pods {
		p := &pods[i]
		ref := metav1.GetControllerOf(p)
		if ref == nil || !owners[ref.UID] || p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		out = append(out, restartPod{Name: p.Name, UID: p.UID, ReplicaSet: ref.UID, Available: podutils.IsPodAvailable(p, minReadySeconds, now)})
	}
	slices.SortFunc(out, func(a, b restartPod) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// available counts the available pods of s, leaving out gone (pods evicted
// but still listed, as a list may trail the eviction).
func (s restartState) available(gone map[types.UID]bool) int32 {
	var n int32
	for _, p := range s.Pods {
		if p.Available && !gone[p.UID] {
			n++
		}
	}
	return n
}

// left is the pods of s that were there when the restart began (originals)
// and have not been evicted.
func (s restartState) left(originals, gone map[types.UID]bool) []restartPod {
	var out []restartPod
	for _, p := range s.Pods {
		if originals[p.UID] && !gone[p.UID] {
			out = append(out, p)
		}
	}
	return out
}

// nextBatch is the pods to evict next: from the first target in order that
// still has pods left, every left pod that is unavailable (evicting it takes
// nothing more down: its replacement is as unavailable as it is) and as many
// available ones as batchSize allows. Empty when the limit is used up, until
// replacements become available.
//
//	limit 2, R 10, all available, stable has 8 left → 2 of them
//	limit 2, R 10, one stable pod not ready        → it and 1 available one
//	limit 1, R 10, one canary pod not ready, canary and stable left → the canary's not-ready pod only
func nextBatch(targets []restartTarget, s restartState, limit int32, originals, gone map[types.UID]bool) (restartTarget, []restartPod) {
	left := s.left(originals, gone)
	for _, t := range targets {
		var broken, healthy []restartPod
		for _, p := range left {
			switch {
			case p.ReplicaSet != t.UID:
			case p.Available:
				healthy = append(healthy, p)
			default:
				broken = append(broken, p)
			}
		}
		if len(broken)+len(healthy) == 0 {
			continue
		}
		n := min(int(batchSize(limit, s.Replicas, s.available(gone))), len(healthy))
		if batch := append(broken, healthy[:n]...); len(batch) > 0 {
			return t, batch
		}
		return restartTarget{}, nil
	}
	return restartTarget{}, nil
}

// planBatches is what a dry run prints: the batches a restart would evict if
// each batch's replacements became available before the next, as the real
// restart waits for.
func planBatches(targets []restartTarget, s restartState, limit int32, originals map[types.UID]bool) [][]restartPod {
	gone := map[types.UID]bool{}
	var batches [][]restartPod
	for i := 0; ; i++ {
		t, batch := nextBatch(targets, s, limit, originals, gone)
		if len(batch) == 0 {
			return batches
		}
		batches = append(batches, batch)
		for j, p := range batch {
			gone[p.UID] = true
			s.Pods = append(s.Pods, restartPod{Name: fmt.Sprintf("replacement-%d-%d", i, j), UID: types.UID(fmt.Sprintf("replacement-%d-%d", i, j)), ReplicaSet: t.UID, Available: true})
		}
	}
}

func deploymentReplicas(d *appsv1.Deployment) int32 {
	if d.Spec.Replicas == nil {
		return 1
	}
	return *d.Spec.Replicas
}

func rsSpecReplicas(rs *appsv1.ReplicaSet) int32 {
	if rs.Spec.Replicas == nil {
		return 1
	}
	return *rs.Spec.Replicas
}
