package graysync

// The entry of a gray sync (docs/design.md: One gray sync, step by step): a Deployment with
// kubegray.io/percent and the RollingUpdate strategy takes syncGray instead of upstream's
// dispatch. The sync gathers its facts (gray_facts.go), controller/gray decides once
// (gray.Decide), and these files write what it decided, in an order that keeps the new
// ReplicaSet within the target recorded on the Deployment (the status raising a target goes
// before the ReplicaSet write using it, the pause in the sync the target is reached), then report.

import (
	"context"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/kubegray/kubectl-gray/controller/gray"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// readGrayStatus is gray.StoredStatus, an unreadable status logged (and taken as none).
func readGrayStatus(ctx context.Context, d *appsv1.Deployment) (grayapi.Status, bool) {
	st, names, err := gray.StoredStatus(d)
	if err != nil {
		klog.FromContext(ctx).V(2).Info("Ignoring unreadable gray status", "deployment", klog.KObj(d), "err", err)
	}
	return st, names
}

// graySync is one sync of a gray Deployment: what it read (in), the objects as it last left
// them (cur), and what it decided so far (st, removeResume), written in the order its mode
// requires.
type graySync struct {
	gs  *Controller
	in  grayInputs
	cur grayObjects
	st  grayapi.Status
	// removeResume: kubegray.io/resume was consumed and goes with the next Update.
	removeResume bool
	// gates is the hold's gates as this sync decided them (gray_gates.go: takeGates).
	gates gray.GateDecision
	// facts is what this sync decided from (gather); what it would serve after its writes is
	// asked on them (nextFacts).
	facts gray.Facts
	// dropped holds the GrayResumeIgnored Warnings of a request consumed without being served,
	// emitted once the write that removes it has landed (holdWritten).
	dropped []string
	// mode is how this sync writes what it decided (gray_mode.go). In alongside mode cur.d is
	// seen through its view: the saved strategy, and our hold as spec.paused, while the server
	// keeps paused=true and Recreate.
	mode grayMode
}

// grayInputs is what a sync reads before it decides anything (gather): the cached ReplicaSets,
// the hold points, the policy and our status as the decision trusts it. Nothing the sync writes
// changes them.
type grayInputs struct {
	key string
	// now is the clock, read once when the sync began: every time this sync records or
	// compares with (heldAt, a deadline, hold-for, a condition's timestamps) is this one.
	now    time.Time
	rsList []*appsv1.ReplicaSet
	points []int32
	// policy is kubegray.io/on-failure, kubegray.io/hold-for and the gates named; gates are
	// those gates resolved.
	policy grayapi.Policy
	gates  namedGates
	// prev is the status read at the start (statusOnServer is the one on the server now);
	// hasPrev: it names a rollout, and one this sync trusts (gray.Plan's Prev and HasPrev).
	prev    grayapi.Status
	hasPrev bool
	// statusWriter is who last wrote kubegray.io/status when it was not this controller (from
	// the managedFields the Deployment cache keeps; empty when it was, or nobody can tell).
	statusWriter string
}

// grayObjects is the Deployment and its ReplicaSets as this sync last left them. d is our copy
// of the Deployment as last written in this sync: every write moves its resourceVersion on, so
// later writes of the same sync do not conflict with earlier ones, while a write based on a
// stale read still does.
type grayObjects struct {
	d *appsv1.Deployment
	// server is the Deployment as the server has it (as read, then as last written): d gathers
	// changes in memory (revision, conditions) that only the final status write persists.
	server *appsv1.Deployment
	newRS  *appsv1.ReplicaSet
	oldRSs []*appsv1.ReplicaSet
}

// metaNow is the sync's clock as an API timestamp.
func (in grayInputs) metaNow() metav1.Time { return metav1.NewTime(in.now) }

// statusOnServer is our status as the server has it now: as read, or as this sync last wrote
// it (every write adopts what the server answered). ok: it names a rollout.
func (g *graySync) statusOnServer() (st grayapi.Status, ok bool) {
	st, _, err := grayapi.RecordedStatus(g.cur.server.Annotations)
	return st, err == nil && st.Revision > 0
}
