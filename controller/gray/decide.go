package gray

import (
	"context"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubegray/kubectl-gray/pkg/gates"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// Facts is everything one gray sync decides from, gathered before anything is decided: the
// annotations as read, the status read and who wrote it, the Deployment and its ReplicaSets as
// the caches have them (through the mode's view), the pods and the gates' measurements, the
// mode's and the leader's facts, and the clock.
type Facts struct {
	// Problem is the error of an unreadable gray annotation (kubegray.io/percent, on-failure,
	// hold-for, the gates named); "" when every one reads. Points, Policy and Gates are then
	// what could be read.
	Problem string
	// Prev is the status read, HasPrev whether it names a rollout; whether the sync trusts it is
	// decided here (Plan.Prev, Plan.HasPrev).
	Prev    grayapi.Status
	HasPrev bool
	// ForeignWriter is the field manager other than gray-controller that last wrote the status;
	// "" when gray-controller did, or nobody can tell.
	ForeignWriter string
	Points        []int32
	Policy        grayapi.Policy
	// Request is kubegray.io/resume parsed (zero when absent or unreadable: the move drops an
	// unreadable one with the reason, from the Deployment's annotation).
	Request    grayapi.Resume
	Deployment *appsv1.Deployment
	// NewRS and OldRSs are the Deployment's ReplicaSets (NewRS with its revision synced, nil
	// until it is created; both as found, unsynced, when Problem is set); Cached are the
	// ReplicaSets as read, before that.
	NewRS  *appsv1.ReplicaSet
	OldRSs []*appsv1.ReplicaSet
	Cached []*appsv1.ReplicaSet
	// Scaling: spec.replicas changed (read once per sync: no write of the sync changes it);
	// ModePaused: the user paused the rollout in a way spec.paused does not show.
	Scaling, ModePaused bool
	// Gates are the gates named, resolved, and their latest measurements (GateFacts but for the
	// status, the pods and the clock, which Decide fills in); Pods are the pods of each of the
	// Deployment's ReplicaSets, by UID, gathered only when there are gates to judge them.
	Gates GateFacts
	Pods  map[types.UID][]gates.Pod
	// LeaderInStable: this process is a pod of one of the Deployment's old ReplicaSets.
	LeaderInStable bool
	Now            time.Time
}

// Plan is what Decide decided for one sync, before any of it is written.
type Plan struct {
	// Invalid is the whole decision of a sync whose annotation is unreadable (Facts.Problem);
	// nothing else is decided then.
	Invalid *InvalidDecision
	// Distrust says why the status read is not taken as it is (zero: it is); Prev and HasPrev
	// are the status read as the sync trusts it, which every later decision reads.
	Distrust Distrust
	Prev     grayapi.Status
	HasPrev  bool
	// Identity is the rollout in flight and where it stands.
	Identity Identity
	// PausedByUs: spec.paused is a hold's (one recorded, even by a status since distrusted, or
	// one identify re-derived); any other pause is the user's own.
	PausedByUs bool
	// Sync is the course, the gates, the move and the hand-over.
	Sync SyncDecision
}

// Distrust is why a sync does not take the status read as it is.
type Distrust int

const (
	// DistrustNone: the status read is taken as it is.
	DistrustNone Distrust = iota
	// DistrustForeign: someone other than gray-controller wrote the status of the rollout in
	// flight; the rollout is re-derived from its ReplicaSets (a Warning names the writer).
	DistrustForeign
	// DistrustRenumbered and DistrustCopied are trustStatus' StatusRenumbered and StatusCopied.
	DistrustRenumbered
	DistrustCopied
)

// Decide is the one decision of a gray sync: whether the status read is trusted, which rollout
// is in flight (identify), and the sync's course, gates, move and hand-over (decideSync); or,
// for an unreadable annotation, what the rollout still does (decideInvalid). A status written by
// kubectl annotate for revision 3 while revision 3 is in flight is distrusted, and the rollout
// re-derived from its ReplicaSets, before anything reads it.
func Decide(ctx context.Context, f Facts) Plan {
	if f.Problem != "" {
		inv := decideInvalid(ctx, invalidFacts{Problem: f.Problem, Prev: f.Prev, HasPrev: f.HasPrev, Deployment: f.Deployment,
			NewRS: f.NewRS, OldRSs: f.OldRSs, Aborted: AbortRecorded(f.NewRS) || (f.HasPrev && f.Prev.Phase == grayapi.PhaseAborted),
			Scaling: f.Scaling, Policy: f.Policy, Now: f.Now})
		return Plan{Invalid: &inv, Prev: f.Prev, HasPrev: f.HasPrev, PausedByUs: f.Deployment.Spec.Paused && f.HasPrev && f.Prev.HeldAt != nil}
	}
	p := Plan{Prev: f.Prev, HasPrev: f.HasPrev}
	rev := RevisionInFlight(f.NewRS, f.OldRSs)
	if p.HasPrev && f.ForeignWriter != "" && p.Prev.Revision == rev {
		p.Distrust, p.HasPrev = DistrustForeign, false
	}
	// A hold recorded by a status that turns out copied still explains spec.paused: a sync that
	// renumbered the new ReplicaSet and stopped before its status write leaves one.
	recordedHold := p.HasPrev && p.Prev.HeldAt != nil
	switch trustStatus(trustFacts{Prev: p.Prev, HasPrev: p.HasPrev, Generation: f.Deployment.Generation, NewRS: f.NewRS,
		OldRSs: f.OldRSs, Cached: f.Cached}) {
	case StatusRenumbered:
		p.Distrust, p.Prev.Revision = DistrustRenumbered, rev
	case StatusCopied:
		p.Distrust, p.HasPrev = DistrustCopied, false
	}
	p.Identity = identify(identifyFacts{Prev: p.Prev, HasPrev: p.HasPrev, Points: f.Points, Deployment: f.Deployment,
		NewRS: f.NewRS, OldRSs: f.OldRSs, Now: metav1.NewTime(f.Now)})
	id := p.Identity
	p.PausedByUs = f.Deployment.Spec.Paused && (recordedHold || id.RederivedHold)
	p.Sync = decideSync(ctx, syncFacts{Status: id.Status, Prev: p.Prev, HasPrev: p.HasPrev, Request: f.Request, Points: f.Points,
		Policy: f.Policy, Deployment: f.Deployment, NewRS: f.NewRS, OldRSs: f.OldRSs, HeldByUs: id.HeldByUs(p.Prev, p.HasPrev),
		PausedByUs: p.PausedByUs, NewRollout: id.NewRollout, Scaling: f.Scaling,
		ModePaused: f.ModePaused, Gates: f.gateEvidence(id.Status), LeaderInStable: f.LeaderInStable, Now: f.Now})
	return p
}

// gateEvidence is f's gates with the pods of the canary and of st's stable revision.
func (f Facts) gateEvidence(st grayapi.Status) GateFacts {
	g := f.Gates
	if len(g.Gates) == 0 {
		return GateFacts{}
	}
	if f.NewRS != nil {
		g.Canary = f.Pods[f.NewRS.UID]
	}
	if stable := StableToGoBackTo(f.OldRSs, st.StableRevision); stable != nil {
		g.Stable = f.Pods[stable.UID]
	}
	return g
}
