package grayapi

import (
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Phase is where a gray rollout stands.
type Phase string

// Phases, in the order a rollout usually meets them.
const (
	// PhaseProgressing: rolling toward the current target.
	PhaseProgressing Phase = "Progressing"
	// PhaseHeld: the target is reached and settled; waiting for a resume.
	PhaseHeld Phase = "Held"
	// PhaseComplete: every replica runs the new revision.
	PhaseComplete Phase = "Complete"
	// PhaseRolledBack: the template went back to the stable revision; the
	// rollout to it skips every hold point and then becomes Complete.
	PhaseRolledBack Phase = "RolledBack"
	// PhaseDegraded: the step missed its progress deadline (see Progress);
	// nothing is widened or shrunk unless kubegray.io/on-failure says rollback.
	PhaseDegraded Phase = "Degraded"
	// PhaseInvalid: kubegray.io/percent cannot be parsed; the rollout is
	// stopped where it is until the value is fixed or removed.
	PhaseInvalid Phase = "Invalid"
	// PhaseAborted: the canary failed (kubegray.io/on-failure: abort) or a
	// person aborted it: its ReplicaSet goes to 0 and the stable revision's
	// back to all replicas, spec.template stays as written (Git's), and
	// nothing rolls until the template changes or `kubectl gray retry`.
	PhaseAborted Phase = "Aborted"
)

// Valid reports whether p is one of the phases above.
func (p Phase) Valid() bool {
	switch p {
	case PhaseProgressing, PhaseHeld, PhaseComplete, PhaseRolledBack, PhaseDegraded, PhaseInvalid, PhaseAborted:
		return true
	}
	return false
}

// Mode is how the controller that wrote a status runs next to
// kube-controller-manager.
type Mode string

// Modes.
const (
	// ModeInstead: the built-in deployment controller is disabled and ours
	// manages every Deployment.
	ModeInstead Mode = "instead"
	// ModeAlongside: the built-in controller keeps running; gray rollouts
	// are taken over (paused, Recreate, saved strategy) while in flight.
	ModeAlongside Mode = "alongside"
)

// Valid reports whether m is one of the modes.
func (m Mode) Valid() bool { return m == ModeInstead || m == ModeAlongside }

// Alongside reports whether m runs next to the built-in deployment controller.
func (m Mode) Alongside() bool { return m == ModeAlongside }

// Takeover is how an alongside controller takes gray Deployments over.
type Takeover string

// Valid reports whether t is one of the takeover paths.
func (t Takeover) Valid() bool { return t == TakeoverAdmission || t == TakeoverEager }

// Takeover paths.
const (
	// TakeoverAdmission: the kubegray-takeover MutatingAdmissionPolicy (or
	// `kubectl gray set --image`) takes a Deployment over in the write that
	// changes its template (Kubernetes 1.36+).
	TakeoverAdmission Takeover = "admission"
	// TakeoverEager: the controller takes a Deployment over as soon as it is
	// annotated and keeps it taken over while annotated (no policy needed).
	TakeoverEager Takeover = "eager"
)

// Status is the controller's report of a gray rollout, stored as JSON in
// kubegray.io/status. Only the controller writes it. Example:
//
//	{"serves":["next","full","abort","undo"],"observedGeneration":4,"mode":"instead",
//	 "revision":2,"stableRevision":1,"step":0,"percent":10,"target":1,"phase":"Held",
//	 "message":"held at 10%: 1 of 10 replicas on revision 2","heldAt":"2026-03-01T10:00:00Z"}
//
// Serves and ObservedGeneration come first, in this order, so that a reader without a JSON
// parser can match them at the start of the value: Argo CD runs its Lua without the string
// library and can only compare whole strings and prefixes (manifests/argocd).
type Status struct {
	// Serves is what the controller would act on now (see Serves).
	Serves Serves `json:"serves"`
	// ObservedGeneration is the Deployment generation the status describes.
	ObservedGeneration int64 `json:"observedGeneration"`
	// Mode of the controller that wrote the status.
	Mode Mode `json:"mode"`
	// Revision is the deployment.kubernetes.io/revision being rolled out.
	Revision int64 `json:"revision"`
	// StableRevision is the revision that was fully rolled out before this
	// rollout began: the one undo goes back to. 0 when there is none.
	StableRevision int64 `json:"stableRevision"`
	// Step indexes the hold points; len(hold points) means the rollout goes
	// to the end.
	Step int32 `json:"step"`
	// Percent is the hold point of Step (100 when going to the end).
	Percent int32 `json:"percent"`
	// Target is the number of new-revision replicas that Percent means for
	// the current replica count.
	Target int32 `json:"target"`
	// Phase is where the rollout stands.
	Phase Phase `json:"phase"`
	// Message explains the phase for people.
	Message string `json:"message,omitempty"`
	// HeldAt is when the current hold was reached (RFC3339); nil unless held.
	HeldAt *metav1.Time `json:"heldAt,omitempty"`
	// TakenOver records, in alongside mode, that the controller runs this
	// rollout itself (paused, Recreate, strategy saved in
	// kubegray.io/strategy). It lets the controller repair a Deployment whose
	// saved strategy was lost, which would otherwise stay on Recreate.
	TakenOver bool `json:"takenOver,omitempty"`
	// Takeover is the takeover path of the alongside controller that wrote
	// the status; empty in instead mode.
	Takeover Takeover `json:"takeover,omitempty"`
	// Progress is when the current step last made progress: when it began
	// (rollout start, resume, new template, a scaling event that moved the
	// target) or when the new ReplicaSet last gained an available replica.
	// The step is Degraded once progressDeadlineSeconds pass after it with
	// fewer than Target available. Nil while Held or Complete: holding is
	// intentional, and no deadline runs.
	Progress *Progress `json:"progress,omitempty"`
	// SettledAt is when the current hold point was first reported Held; a
	// scaling event under it keeps the time. kubegray.io/hold-for counts from
	// it. Nil unless the step has been Held.
	SettledAt *metav1.Time `json:"settledAt,omitempty"`
	// HoldFor is how long the current hold lasts by itself, recorded when it settled: the hold
	// point's own duration (kubegray.io/percent "10@5m"), else kubegray.io/hold-for; 0 when
	// nothing but a person ends it. An edit of either annotation during the hold applies from the
	// next hold point, so it never shortens the hold in progress. Nil with SettledAt.
	HoldFor *metav1.Duration `json:"holdFor,omitempty"`
	// Failure explains a Degraded rollout, and is kept after on-failure
	// rolled it back, until the next rollout begins.
	Failure *Failure `json:"failure,omitempty"`
	// Gates are the current hold's gates (kubegray.io/gates and
	// kubegray.io/gates-dry-run), measured since the hold settled.
	Gates []GateStatus `json:"gates,omitempty"`
}

// Progress is the last progress of a step.
type Progress struct {
	// At is when it happened, to the microsecond: the deadline is counted
	// from it, and whole seconds would end a step up to a second early.
	At metav1.MicroTime `json:"at"`
	// Available is how many replicas of the new ReplicaSet were available then.
	Available int32 `json:"available"`
}

// Failure is why a rollout failed.
type Failure struct {
	// Reason is ReasonProgressDeadlineExceeded, ReasonStableReplicaSetGone,
	// ReasonAborted for a rollout a person aborted before it failed, or
	// ReasonRolledBack for a rollout rolled back before it failed.
	Reason string `json:"reason"`
	// Message names the ReplicaSet, its target, how many were available and
	// the most common reason its pods were not ready.
	Message string `json:"message"`
	// RolledBackFrom is the revision that was rolled back to the stable one
	// (by kubegray.io/on-failure, or by hand); 0 when nothing was rolled back.
	RolledBackFrom int64 `json:"rolledBackFrom,omitempty"`
}

const statusRule = `must be the JSON object gray-controller writes, with a known phase and no negative numbers`

// Validate checks the fields a reader relies on: a known phase, a known mode
// (or none), and no negative numbers; Percent is at most 100.
func (s Status) Validate() error {
	if err := s.Serves.validate(); err != nil {
		return err
	}
	switch {
	case !s.Phase.Valid():
		return fmt.Errorf("phase %s is not one of Progressing, Held, Complete, RolledBack, Degraded, Invalid, Aborted", quoteToken(string(s.Phase)))
	case s.Mode != "" && !s.Mode.Valid():
		return fmt.Errorf("mode %s is neither %q nor %q", quoteToken(string(s.Mode)), ModeInstead, ModeAlongside)
	case s.Takeover != "" && !s.Takeover.Valid():
		return fmt.Errorf("takeover %s is neither %q nor %q", quoteToken(string(s.Takeover)), TakeoverAdmission, TakeoverEager)
	case s.Revision < 0, s.StableRevision < 0, s.Step < 0, s.Target < 0, s.ObservedGeneration < 0,
		s.Progress != nil && s.Progress.Available < 0, s.Failure != nil && s.Failure.RolledBackFrom < 0:
		return fmt.Errorf("revision, stableRevision, step, target, observedGeneration, progress.available and failure.rolledBackFrom must not be negative")
	case s.Percent < 0 || s.Percent > FullPercent:
		return fmt.Errorf("percent %d is not within 0-100", s.Percent)
	case s.HoldFor != nil && (s.HoldFor.Duration < 0 || s.HoldFor.Duration > MaxHoldFor):
		return fmt.Errorf("holdFor %s is not within 0-%s", s.HoldFor.Duration, MaxHoldFor)
	case len(s.Gates) > MaxGates:
		return fmt.Errorf("%d gates, at most %d allowed", len(s.Gates), MaxGates)
	}
	for _, g := range s.Gates {
		if err := g.validate(); err != nil {
			return err
		}
	}
	return nil
}

// MaxStatusMessage bounds Message and Failure.Message as ParseStatus returns
// them and FormatStatus writes them: the controller repeats them in events
// and later messages, and in instead mode (no guard policy) anyone may write
// the annotation, so a forged status must not carry 250 KB into them.
const MaxStatusMessage = 1024

// CapMessage cuts text to MaxStatusMessage bytes, ending it in "..." when it cuts: the one cap
// of every message the controller writes about a rollout (the status's, the Deployment's
// conditions').
func CapMessage(text string) string {
	return capText(text, MaxStatusMessage)
}

// capMessages cuts Message and Failure.Message to MaxStatusMessage.
func (s *Status) capMessages() {
	s.Message = CapMessage(s.Message)
	if s.Failure != nil && len(s.Failure.Message) > MaxStatusMessage {
		f := *s.Failure
		f.Message = CapMessage(f.Message)
		s.Failure = &f
	}
	if len(s.Gates) > 0 {
		gates := make([]GateStatus, len(s.Gates))
		for i, g := range s.Gates {
			g.Value, g.Why = capText(g.Value, MaxGateText), capText(g.Why, MaxGateText)
			gates[i] = g
		}
		s.Gates = gates
	}
}

// MaxGateText bounds a gate's Value and Why as recorded: a few gates fit in
// one annotation next to the rest of the status.
const MaxGateText = 256

// ParseStatus parses a kubegray.io/status value. Unknown JSON fields are
// ignored, so a plugin keeps reading the status of a newer controller; the
// fields it knows must be well typed and pass Validate. Messages longer than
// MaxStatusMessage are cut.
func ParseStatus(value string) (Status, error) {
	var s Status
	fail := func(detail string) (Status, error) {
		return Status{}, &InvalidValueError{Key: StatusAnnotation, Value: value, Rule: statusRule, Detail: detail}
	}
	if err := json.Unmarshal([]byte(value), &s); err != nil {
		return fail(err.Error())
	}
	if err := s.Validate(); err != nil {
		return fail(err.Error())
	}
	s.capMessages()
	return s, nil
}

// RecordedStatus is the status gray-controller recorded in a Deployment's annotations;
// recorded is false when there is none, and err is ParseStatus's for one that cannot be read.
// The core's StoredStatus and the plugin's verbs read kubegray.io/status through it.
func RecordedStatus(annotations map[string]string) (st Status, recorded bool, err error) {
	value, recorded := annotations[StatusAnnotation]
	if !recorded {
		return Status{}, false, nil
	}
	st, err = ParseStatus(value)
	return st, true, err
}

// FormatStatus renders s as the compact JSON that ParseStatus reads, its
// messages cut to MaxStatusMessage. It refuses a status that ParseStatus
// would reject, so the controller cannot write one.
func FormatStatus(s Status) (string, error) {
	if err := s.Validate(); err != nil {
		return "", fmt.Errorf("%s: %w", StatusAnnotation, err)
	}
	s.capMessages()
	b, err := json.Marshal(s)
	if err != nil {
		return "", fmt.Errorf("%s: %w", StatusAnnotation, err)
	}
	return string(b), nil
}
