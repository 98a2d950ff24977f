package gray

// What a sync reports once its writes are done: the phase (DecidePhase), the step's clocks and
// deadline (DecideDeadline), the failures found on the way (a missed deadline, the stable
// ReplicaSet gone, an abort that cannot act), the Progressing condition a held rollout mirrors,
// the events, and when to look again.

import (
	"fmt"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegray/kubectl-gray/pkg/deployutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// ReportFacts is what DecideReport decides from.
type ReportFacts struct {
	// Status is the rollout as this sync identified, stepped and held it; Prev the status read
	// (Prev.Phase is empty when none was), HasPrev whether it names a rollout and is trusted.
	Status, Prev grayapi.Status
	HasPrev      bool
	// Steps is the number of hold points.
	Steps  int
	Policy grayapi.Policy
	// Deployment, NewRS and OldRSs are as this sync's writes left them.
	Deployment *appsv1.Deployment
	NewRS      *appsv1.ReplicaSet
	OldRSs     []*appsv1.ReplicaSet
	// Complete is upstream's DeploymentComplete for the status about to be written, and
	// Progressing that status's Progressing condition (nil without one).
	Complete    bool
	Progressing *appsv1.DeploymentCondition
	// ModePaused: the user paused the rollout in a way spec.paused does not show (alongside
	// mode's kubegray.io/paused).
	ModePaused bool
	// PodsRead: PodsNotReady was read (NeedsPodReasons); it names why the canary's pods are not
	// ready, empty when nothing tells.
	PodsRead     bool
	PodsNotReady string
	// Gates is the hold's gates as decideGates judged them.
	Gates GateDecision
	Now   time.Time
}

// Event is an event on the Deployment.
type Event struct {
	Type, Reason, Message string
}

// Report is what DecideReport decided.
type Report struct {
	// Status is the status to record.
	Status grayapi.Status
	// NeedsPodReasons: a step missed its deadline just now, and its failure names why the
	// canary's pods are not ready; read them (a live list) into ReportFacts and decide again.
	NeedsPodReasons bool
	// Progressing is the Progressing condition to mirror (nil: upstream's stays).
	Progressing *appsv1.DeploymentCondition
	// MarkStable: the new ReplicaSet becomes the stable one before the status says Complete.
	MarkStable bool
	// Events go out once the status is written.
	Events []Event
	// LookAgain is when to sync again (a deadline to check, a timed hold to end); 0: no need.
	LookAgain time.Duration
}

// DecideReport decides what a sync reports. A Degraded step says so once: its Failure and
// Warning come from the sync that finds the deadline missed, later syncs of the same step keep
// them. Held, Complete and every failure are said in events once per revision and step.
func DecideReport(f ReportFacts) Report {
	d := f.Deployment
	replicas := *d.Spec.Replicas
	p := f.Prev
	// Within one generation Held is final, so that whoever waited for it can act on it: a pod
	// lost under a settled hold does not make it Progressing again. A scaling event, a resume or
	// an edit is a new generation, settled afresh.
	heldBefore := heldOfStep(f, f.Status) && p.ObservedGeneration == d.Generation
	st := DecidePhase(PhaseFacts{Status: f.Status, Steps: f.Steps, Deployment: d, Complete: f.Complete,
		NewRS: f.NewRS, OldRSs: f.OldRSs, HeldBefore: heldBefore})
	r := Report{}

	// The deadline's clock stops while the user pauses the rollout, as upstream's does.
	df := DeadlineFacts{Status: st, Prev: p, HasPrev: f.HasPrev, Now: f.Now, HoldFor: f.Policy.HoldForAt(st.Step),
		ClockStopped: pausedByItsUser(d, st, f.ModePaused) || !deployutil.HasProgressDeadline(d)}
	if !df.ClockStopped {
		df.Deadline = time.Duration(*d.Spec.ProgressDeadlineSeconds) * time.Second
	}
	if f.NewRS != nil {
		df.Available = f.NewRS.Status.AvailableReplicas
	}
	deadline := DecideDeadline(df)
	st, r.LookAgain = deadline.Status, deadline.CheckAfter
	if deadline.Missed {
		if !degradedBefore(f, st, "") && !f.PodsRead {
			return Report{NeedsPodReasons: true}
		}
		st = r.degrade(f, st, df.Available)
	}
	st = r.judgeGates(f, st)
	if StableGone(st, f.Steps, f.NewRS, f.OldRSs) {
		st = r.stableGone(f, st)
	}
	if st.Phase == grayapi.PhaseDegraded && f.Policy.OnFailure == grayapi.OnFailureAbort && p.Phase != grayapi.PhaseDegraded &&
		StableToGoBackTo(f.OldRSs, st.StableRevision) == nil {
		r.warn(grayapi.ReasonGrayDegraded, "%s: %s cannot abort revision %d: no replica set of stable revision %d is left",
			grayapi.OnFailureAnnotation, grayapi.OnFailureAbort, st.Revision, st.StableRevision)
	}
	r.Progressing = mirroredProgressing(f, st)
	// A Held st is our hold (DecidePhase), so the user's pause that can stop it is ModePaused.
	if at, timed := grayapi.TimedResumeAt(st, f.Policy.HoldForAt(st.Step), f.ModePaused); timed {
		// One second late rather than early: the stored time has whole seconds.
		r.LookAgain = max(at.Sub(f.Now), 0) + time.Second
		// Said where Argo CD, Flux and kubectl read a hold: when it ends by itself.
		st.Message += fmt.Sprintf("; it moves on by itself at %s (a %s hold)", at.UTC().Format(time.RFC3339), f.Policy.HeldFor(st))
		if len(f.Gates.Pending) > 0 {
			st.Message += " once its gates pass"
		}
	}
	// A gate's next measurement may come before the hold-for or the deadline check.
	if next := f.Gates.NextIn; next > 0 && (r.LookAgain == 0 || next < r.LookAgain) {
		r.LookAgain = next
	}

	switch {
	case st.Phase == grayapi.PhaseComplete:
		r.MarkStable = f.NewRS != nil
		// A Deployment first seen complete has completed nothing under our watch.
		if p.Phase != "" && !(p.Phase == grayapi.PhaseComplete && p.Revision == st.Revision) {
			r.Events = append(r.Events, Event{corev1.EventTypeNormal, grayapi.ReasonGrayComplete,
				fmt.Sprintf("Revision %d complete: all %d replicas updated", st.Revision, replicas)})
		}
	case st.Phase == grayapi.PhaseHeld && f.NewRS != nil && !heldOfStep(f, st):
		r.Events = append(r.Events, Event{corev1.EventTypeNormal, grayapi.ReasonGrayHeld,
			fmt.Sprintf("%s holds %d/%d (%d%%), all %d available", f.NewRS.Name, st.Target, replicas, st.Percent, st.Target)})
	}
	r.Status = st
	return r
}

// judgeGates records the hold's gates while the step that settled is the one in flight, fails
// the step for a gate that failed past its limit (sticky while the step lasts: a pod lost after
// it does not make it Progressing again), and says in a Held message what the gates wait for.
func (r *Report) judgeGates(f ReportFacts, st grayapi.Status) grayapi.Status {
	g := f.Gates
	st.Gates = nil
	if !f.HasPrev || !sameStep(f.Prev, st) || st.SettledAt == nil {
		return st
	}
	st.Gates = g.Records
	switch unsure := CannotTell(g.Records); {
	case g.Failed != nil && (st.Phase == grayapi.PhaseHeld || st.Phase == grayapi.PhaseProgressing):
		return Degraded(st, g.Failed, fmt.Sprintf("revision %d at %d%%: %s", st.Revision, st.Percent, g.Failed.Message))
	case st.Phase != grayapi.PhaseHeld:
	case unsure != "":
		st.Message += "; " + unsure + "; kubectl gray resume accepts the canary, kubectl gray undo rejects it"
	case !g.Passed():
		st.Message += "; gates to pass: " + strings.Join(g.Pending, ", ")
	case slices.ContainsFunc(g.Records, func(r grayapi.GateStatus) bool { return !r.DryRun }):
		st.Message += "; gates passed"
	}
	return st
}

// degradedBefore reports whether the status read already said that st's step is Degraded, for
// the failure reason given (any, when empty).
func degradedBefore(f ReportFacts, st grayapi.Status, reason string) bool {
	p := f.Prev
	return p.Phase == grayapi.PhaseDegraded && p.Failure != nil && sameStep(p, st) && (reason == "" || p.Failure.Reason == reason)
}

// heldOfStep reports whether the status read already reported st's hold Held: same revision,
// step and target.
func heldOfStep(f ReportFacts, st grayapi.Status) bool {
	p := f.Prev
	return f.HasPrev && p.Phase == grayapi.PhaseHeld && sameStep(p, st) && p.Target == st.Target
}

// degrade makes st's step Degraded for its missed deadline: the failure the status read recorded
// for it, or a new one naming the canary's counts and why its pods are not ready, with a Warning.
func (r *Report) degrade(f ReportFacts, st grayapi.Status, available int32) grayapi.Status {
	if degradedBefore(f, st, "") {
		return Degraded(st, f.Prev.Failure, f.Prev.Message)
	}
	rsName := "(none created)"
	if f.NewRS != nil {
		rsName = f.NewRS.Name
	}
	msg := fmt.Sprintf("replica set %s has %d of %d replicas available, %ds after the step last progressed (progressDeadlineSeconds)",
		rsName, available, st.Target, *f.Deployment.Spec.ProgressDeadlineSeconds)
	if f.PodsNotReady != "" {
		msg += ": " + f.PodsNotReady
	}
	r.warn(grayapi.ReasonGrayDegraded, "Revision %d at %d%%: %s", st.Revision, st.Percent, msg)
	return Degraded(st, &grayapi.Failure{Reason: grayapi.ReasonProgressDeadlineExceeded, Message: msg},
		fmt.Sprintf("revision %d missed its progress deadline: %s", st.Revision, msg))
}

// stableGone makes st Degraded for its lost stable ReplicaSet (StableGone) and says what is left
// to do: finish it on the new revision. The Warning goes out once per revision.
func (r *Report) stableGone(f ReportFacts, st grayapi.Status) grayapi.Status {
	msg := fmt.Sprintf("the replica set of stable revision %d is gone, so revision %d cannot be rolled back and holds at %d of %d replicas; "+
		"finish it with kubectl gray resume --full", st.StableRevision, st.Revision, *f.NewRS.Spec.Replicas, *f.Deployment.Spec.Replicas)
	message := fmt.Sprintf("revision %d: %s", st.Revision, msg)
	if p := f.Prev; p.Phase == grayapi.PhaseDegraded && p.Failure != nil && p.Failure.Reason == grayapi.ReasonStableReplicaSetGone &&
		p.Revision == st.Revision {
		return Degraded(st, p.Failure, message)
	}
	r.warn(grayapi.ReasonGrayDegraded, "Revision %d: %s", st.Revision, msg)
	return Degraded(st, &grayapi.Failure{Reason: grayapi.ReasonStableReplicaSetGone, Message: msg}, message)
}

// warn adds a Warning event.
func (r *Report) warn(reason, format string, args ...any) {
	r.Events = append(r.Events, Event{corev1.EventTypeWarning, reason, fmt.Sprintf(format, args...)})
}

// mirroredProgressing is the Progressing condition a rollout our hold pauses reports, so that
// `kubectl rollout status` and GitOps health checks see a failure that upstream's condition
// cannot (a paused Deployment never times out): False/ProgressDeadlineExceeded while Degraded,
// and back to upstream's Unknown/DeploymentPaused once it is not. A running or user-paused
// Deployment keeps upstream's condition (nil).
func mirroredProgressing(f ReportFacts, st grayapi.Status) *appsv1.DeploymentCondition {
	if !f.Deployment.Spec.Paused || st.HeldAt == nil || !deployutil.HasProgressDeadline(f.Deployment) {
		return nil
	}
	cond, now := f.Progressing, metav1.NewTime(f.Now)
	switch {
	case st.Phase == grayapi.PhaseDegraded:
		if cond == nil || cond.Reason != deployutil.TimedOutReason || cond.Message != st.Failure.Message {
			return deployutil.NewDeploymentCondition(appsv1.DeploymentProgressing, corev1.ConditionFalse, deployutil.TimedOutReason, st.Failure.Message, now)
		}
	case cond != nil && cond.Reason == deployutil.TimedOutReason:
		return deployutil.NewDeploymentCondition(appsv1.DeploymentProgressing, corev1.ConditionUnknown, deployutil.PausedDeployReason, "Deployment is paused", now)
	}
	return nil
}
