package e2e

// What the recorder allows the built-in controller in alongside mode, and measures: its paused
// sync of a taken-over Deployment may raise a lone canary to spec.replicas (checkGrayTarget)
// and empty old ReplicaSets next to a canary it sees saturated (builtInTookOldApart), and
// gray-controller must restore the hold each time (README: "Alongside mode and scaling").

import (
	"time"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/kubegray/kubectl-gray/pkg/deployutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// builtinTransient is one overshoot by the built-in controller's paused sync of a taken-over
// Deployment (alongside mode, see README: which scale events can briefly move pods): from
// the write that raised the canary above its target until the write that brought it back.
type builtinTransient struct {
	rv                uint64
	at, restoredAt    time.Time
	spec, target      int32
	extraPods, events int
}

// maxBuiltinTransient bounds how long an overshoot by the built-in controller may stand
// before gray-controller has restored the hold: one sync takes milliseconds, but the
// randomized tests kill the leading replica at random instants, and a standby takes over only
// once the lease (3s there) has expired and its caches have synced, on a loaded 2-core machine.
const maxBuiltinTransient = 30 * time.Second

// reportTransients logs every built-in transient on one greppable line (BENCHMARKS.md adds
// them up; kind "new" is the canary raised above its target, "old" an old ReplicaSet the
// built-in controller shrank, whose pods counts as extraPods) and fails on one that stood too
// long.
func (r *recorder) reportTransients(kind string, transients map[string]*builtinTransient, fail func(uint64, string, ...any)) {
	for name, tr := range transients {
		if tr.restoredAt.IsZero() {
			continue
		}
		d := tr.restoredAt.Sub(tr.at)
		r.t.Logf("BUILTIN-TRANSIENT namespace=%s kind=%s replicaset=%s extraPods=%d events=%d duration=%s", r.ns, kind, name, tr.extraPods, tr.events, d)
		if d > maxBuiltinTransient {
			fail(tr.rv, "the built-in controller's overshoot of %s stood %s, longer than %s", name, d, maxBuiltinTransient)
		}
	}
}

// maxBuiltinTakedowns bounds how often the built-in controller may shrink one old ReplicaSet
// between two changes of the Deployment's replicas or template: each time gray-controller
// restores it, and more than this is the two controllers fighting.
const maxBuiltinTakedowns = 3

// builtInTookOldApart reports whether this write of rs is the built-in controller
// (kube-controller-manager) shrinking an old ReplicaSet of a taken-over Deployment, and opens
// or extends that ReplicaSet's takedown transient.
func (r *recorder) builtInTookOldApart(ev recordedEvent, rs, prev *appsv1.ReplicaSet, deployments map[string]*deploymentTrack,
	takedowns map[string]*builtinTransient) bool {
	spec, before := replicasOf(rs.Spec.Replicas), replicasOf(prev.Spec.Replicas)
	if spec >= before || replicasManager(rs) != "kube-controller-manager" {
		return false
	}
	tr := ownerTrack(rs, deployments)
	if tr == nil {
		return false
	}
	if _, takenOver := tr.d.Annotations[grayapi.StrategyAnnotation]; !takenOver || deployutil.EqualIgnoreHash(&tr.d.Spec.Template, &rs.Spec.Template) {
		return false
	}
	td := takedowns[rs.Name]
	if td == nil || !td.restoredAt.IsZero() {
		events := 0
		if td != nil {
			events = td.events
		}
		td = &builtinTransient{rv: ev.rv, at: ev.at, events: events}
		takedowns[rs.Name] = td
	}
	td.events++
	td.extraPods = max(td.extraPods, int(before-spec))
	return true
}

// closeTakedown marks an open takedown of rs restored by this write of another writer.
func (r *recorder) closeTakedown(ev recordedEvent, rs *appsv1.ReplicaSet, takedowns map[string]*builtinTransient) {
	if td := takedowns[rs.Name]; td != nil && td.restoredAt.IsZero() && replicasManager(rs) != "kube-controller-manager" {
		td.restoredAt = ev.at
	}
}
