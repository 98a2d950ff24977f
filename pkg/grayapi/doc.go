// Package grayapi is the one owner of the kubegray.io annotation API: the
// annotation keys, the GrayHeld condition type, the event reasons, and the
// parsers and formatters of every annotation value.
//
// The controller and the plugin both go through this package, so a value one
// of them writes is always a value the other can read, and a bad value is
// rejected with the same words on both sides. Nobody else concatenates keys
// or parses values.
//
// The annotations, all on the Deployment:
//
//	kubegray.io/percent   user or plugin   hold points, "20" or "10,30,60"
//	kubegray.io/resume    user or plugin   one-shot "<revision>:next" or "<revision>:full"
//	kubegray.io/status    controller only  JSON, see Status
//	kubegray.io/strategy  takeover only    saved strategy, "RollingUpdate;maxSurge=25%;maxUnavailable=25%"
//	kubegray.io/paused    takeover or user the user's own pause while taken over, "true"
//	kubegray.io/on-failure user or plugin  "hold" (default) or "rollback" when Degraded
//	kubegray.io/hold-for  user or plugin   a settled hold resumes by itself after it, "10m"
//
// And on the ReplicaSets the controller owns (the durable record, which the
// tools that rewrite a Deployment's annotations never touch):
//
//	kubegray.io/stable=true  label, controller only: the stable ReplicaSet
//	kubegray.io/frozen=true  label, controller only (the freeze policy refuses
//	                         anyone else adding or removing it): sized by gray-controller
//	                         alone while the Deployment is taken over
//	kubegray.io/aborted=3    label, controller only (likewise): the ReplicaSet
//	                         of an aborted rollout, with its revision
//	kubegray.io/percent      the Deployment's current hold points, so that a
//	                         rollback to any revision keeps the opt-in
//	kubegray.io/on-failure   likewise, the Deployment's current values
//	kubegray.io/hold-for
package grayapi

import (
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
)

// Prefix starts every annotation key of the API.
const Prefix = "kubegray.io/"

// Annotation keys.
const (
	// PercentAnnotation holds the hold points of every rollout of the
	// Deployment. Its presence opts the Deployment in to gray rollouts.
	PercentAnnotation = Prefix + "percent"
	// ResumeAnnotation is a one-shot request to leave the current hold; the
	// controller consumes and deletes it.
	ResumeAnnotation = Prefix + "resume"
	// StatusAnnotation is the controller's JSON report of the gray rollout.
	StatusAnnotation = Prefix + "status"
	// StrategyAnnotation saves the Deployment's own strategy while a rollout
	// is taken over (alongside mode only).
	StrategyAnnotation = Prefix + "strategy"
	// PausedAnnotation is the user's own pause of a taken-over Deployment
	// (alongside mode only), whose spec.paused is the takeover's: the
	// takeover saves a pause it finds here, a user may set it to pause the
	// rollout, and removing it, or `kubectl rollout resume`, resumes it. The
	// release hands it back as spec.paused.
	PausedAnnotation = Prefix + "paused"
	// OnFailureAnnotation says what a Degraded rollout does: "hold" (the
	// default) or "abort" (see ParseOnFailure).
	OnFailureAnnotation = Prefix + "on-failure"
	// HoldForAnnotation makes a settled hold resume by itself after the
	// duration it holds (see ParseHoldFor).
	HoldForAnnotation = Prefix + "hold-for"
)

// StatusFieldPath is StatusAnnotation in managedFields' fieldsV1 notation: who wrote it.
var StatusFieldPath = []string{"f:metadata", "f:annotations", "f:" + StatusAnnotation}

// RecordedAnnotations are the annotations the controller mirrors on every
// ReplicaSet of a gray Deployment, so that `kubectl rollout undo`, which sets
// a Deployment's annotations to a ReplicaSet's, keeps the opt-in and its
// policy.
var RecordedAnnotations = []string{PercentAnnotation, OnFailureAnnotation, HoldForAnnotation, GatesAnnotation, GatesDryRunAnnotation}

// StableLabel marks the stable ReplicaSet of a gray Deployment (the last one
// fully rolled out) with StableLabelValue. It is a label because `kubectl
// rollout undo` copies a ReplicaSet's annotations onto the Deployment but
// never its labels.
const (
	StableLabel      = Prefix + "stable"
	StableLabelValue = "true"
)

// FrozenLabel marks, with FrozenLabelValue, every ReplicaSet of a Deployment
// that gray-controller has taken over (alongside mode): the kubegray-freeze
// admission policy then refuses any change of its spec.replicas by anyone but
// gray-controller, so that the built-in deployment controller cannot resize
// it. gray-controller sets it before it writes anything for the rollout and
// removes it before the release.
const (
	FrozenLabel      = Prefix + "frozen"
	FrozenLabelValue = "true"
)

// AbortedLabel marks the ReplicaSet of an aborted rollout with its revision
// (e.g. kubegray.io/aborted=3): the durable record of the abort, where
// `kubectl rollout undo`, apply and GitOps tools never write, so that a lost
// or forged kubegray.io/status cannot roll the failed canary out again. A
// value other than the ReplicaSet's revision is stale (the template came
// back as a new rollout) and is ignored.
const AbortedLabel = Prefix + "aborted"

// ControllerFieldManager is the field manager of every write gray-controller
// makes, and the source of its events. It is API: the plugin reads
// managedFields to tell which controller runs a Deployment.
const ControllerFieldManager = "gray-controller"

// IsGrayAnnotation reports whether key belongs to this API. Tools that copy
// annotations between a Deployment and its ReplicaSets (rollback, for one)
// use it to leave the gray bookkeeping of the live Deployment alone.
func IsGrayAnnotation(key string) bool {
	return strings.HasPrefix(key, Prefix)
}

// ConditionGrayHeld is the Deployment condition that is True while a gray
// rollout is held, so `kubectl wait --for=condition=GrayHeld` works.
const ConditionGrayHeld appsv1.DeploymentConditionType = "GrayHeld"

// ConditionStalled is the standard condition (kstatus, Flux) that is True
// while a gray rollout cannot go on by itself: Degraded (its reason is the
// failure's) or Invalid. It is removed as soon as the rollout recovers.
const ConditionStalled appsv1.DeploymentConditionType = "Stalled"

// ReasonInvalid is the reason of the Stalled condition of an Invalid rollout.
const ReasonInvalid = "Invalid"

// ReasonAborted is the reason of the GrayHeld and Stalled conditions of an
// Aborted rollout, and of the Failure recorded when a person aborted a
// rollout that had not failed.
const ReasonAborted = "Aborted"

// Conditions are the Deployment conditions the controller owns.
var Conditions = []appsv1.DeploymentConditionType{ConditionGrayHeld, ConditionStalled}

// Event reasons the controller emits on the Deployment (and the condition
// reasons it uses for GrayHeld).
const (
	// ReasonGrayHeld is emitted when a rollout is Held: its new ReplicaSet
	// stands at the hold point's target with every replica available.
	ReasonGrayHeld = "GrayHeld"
	// ReasonGrayHolding is emitted when a rollout reaches a hold point's
	// target, saying how many of its pods are still to become ready.
	ReasonGrayHolding    = "GrayHolding"
	ReasonGrayResumed    = "GrayResumed"
	ReasonGrayInvalid    = "GrayInvalid"
	ReasonGrayTakeover   = "GrayTakeover"
	ReasonGrayRelease    = "GrayRelease"
	ReasonGrayRolledBack = "GrayRolledBack"
	ReasonGrayComplete   = "GrayComplete"
	// ReasonGrayDegraded is the Warning emitted when a step misses its
	// progress deadline.
	ReasonGrayDegraded = "GrayDegraded"
	// ReasonGrayResumeIgnored is the Warning emitted when a kubegray.io/resume
	// request is dropped (unparsable, stale revision, or nothing held).
	ReasonGrayResumeIgnored = "GrayResumeIgnored"
	// ReasonGrayAborted is the Warning emitted when a rollout is aborted, and
	// ReasonGrayRetried the event of `kubectl gray retry`.
	ReasonGrayAborted = "GrayAborted"
	ReasonGrayRetried = "GrayRetried"
	// ReasonGrayStatusDistrusted is the Warning emitted when a
	// kubegray.io/status disagrees with the ReplicaSets' record and is
	// re-derived; it names who wrote it.
	ReasonGrayStatusDistrusted = "GrayStatusDistrusted"
	// ReasonGrayLeaseHandedOver is emitted on gray-controller's own Deployment when its leader,
	// of the stable revision, hands the leader-election lease to the canary its gates judge.
	ReasonGrayLeaseHandedOver = "GrayLeaseHandedOver"
)

// ReasonHoldPointReached is the reason of a True GrayHeld condition. While
// the rollout is not held the condition is False and its reason is the phase.
const ReasonHoldPointReached = "HoldPointReached"

// ReasonProgressDeadlineExceeded is the reason of a False GrayHeld condition,
// and of Failure, when a step missed the Deployment's progress deadline
// (upstream's Progressing condition uses the same word).
const ReasonProgressDeadlineExceeded = "ProgressDeadlineExceeded"

// ReasonStableReplicaSetGone is the reason of a Degraded rollout whose stable
// revision has no ReplicaSet any more (deleted by hand, or by
// revisionHistoryLimit while it had no replicas): there is nothing to go back
// to, so the rollout stays where it is until it is finished on the new
// revision.
const ReasonStableReplicaSetGone = "StableReplicaSetGone"

// ReasonRolledBack is the reason of the Failure recorded when the stable
// revision was brought back (kubectl gray undo, kubectl rollout undo, a
// revert) while a rollout that had not failed was in flight. Unlike a failure
// it does not make `kubectl gray status --until complete` exit 1: the
// rollback was asked for.
const ReasonRolledBack = "RolledBack"

// IsEventReason reports whether reason is one of the gray event reasons
// above; status views use it to pick gray events out of a Deployment's
// events.
func IsEventReason(reason string) bool {
	switch reason {
	case ReasonGrayHeld, ReasonGrayHolding, ReasonGrayResumed, ReasonGrayInvalid, ReasonGrayTakeover,
		ReasonGrayRelease, ReasonGrayRolledBack, ReasonGrayComplete, ReasonGrayResumeIgnored, ReasonGrayDegraded,
		ReasonGrayAborted, ReasonGrayRetried, ReasonGrayStatusDistrusted, ReasonGrayGatePassed, ReasonGrayGateFailed, ReasonGrayGateInconclusive:
		return true
	}
	return false
}

// InvalidValueError is returned for an annotation value that breaks the API.
// Its message quotes the value and states the rule, so it can go unchanged
// into a Warning event or a command-line error.
type InvalidValueError struct {
	// Key is the annotation key, e.g. "kubegray.io/percent".
	Key string
	// Value is the value as found.
	Value string
	// Rule says what a valid value looks like, with an example.
	Rule string
	// Detail names the part of Value that breaks the rule; may be empty.
	Detail string
}

// Error quotes Value with QuoteValue and caps Detail, so that the whole
// message stays a few hundred bytes whatever the value's size: Key and Rule
// are this package's constants.
func (e *InvalidValueError) Error() string {
	msg := fmt.Sprintf("invalid %s %s: %s", e.Key, QuoteValue(e.Value), e.Rule)
	if e.Detail != "" {
		msg += "; " + capText(e.Detail, maxDetail)
	}
	return msg
}
