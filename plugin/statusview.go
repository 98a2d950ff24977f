package plugin

import (
	"fmt"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegray/kubectl-gray/pkg/deployutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// The identity of the objects `kubectl gray status -o json|yaml` prints (and
// the templates read).
// They are views computed by the plugin, not API objects; the version
// changes only with an incompatible change to the fields below.
const (
	viewAPIVersion     = "kubectl-gray/v1"
	statusViewKind     = "GrayStatus"
	statusViewListKind = "GrayStatusList"
)

// maxEvents is how many gray events a status shows, newest last.
const maxEvents = 5

// StatusView is the documented, stable object `kubectl gray status
// DEPLOYMENT -o json|yaml` prints: the gray rollout of one Deployment as the
// plugin understands it, not the raw Deployment. Fields are only ever added.
type StatusView struct {
	// Kind is always "GrayStatus".
	Kind string `json:"kind"`
	// APIVersion is always "kubectl-gray/v1".
	APIVersion string `json:"apiVersion"`
	// Namespace of the Deployment.
	Namespace string `json:"namespace"`
	// Name of the Deployment.
	Name string `json:"name"`
	// Gray is true when the Deployment carries kubegray.io/percent.
	Gray bool `json:"gray"`
	// PercentAnnotation is the raw kubegray.io/percent value ("" if absent).
	PercentAnnotation string `json:"percentAnnotation"`
	// HoldPoints are the parsed hold points; empty when absent or invalid.
	HoldPoints []int32 `json:"holdPoints"`
	// HoldPointDurations are the hold points' own durations as Go durations, one for each of
	// HoldPoints ("10@5m,50" → ["5m0s", "0s"]; "0s" for a point that waits for
	// kubegray.io/hold-for or a resume). A point's own duration wins over
	// kubegray.io/hold-for. Absent when no hold point names one.
	HoldPointDurations []metav1.Duration `json:"holdPointDurations,omitempty"`
	// Phase is the gray-controller's phase: Progressing, Held, Complete,
	// RolledBack, Degraded, Invalid or Aborted; "" before the controller
	// reported.
	Phase grayapi.Phase `json:"phase"`
	// Serves are the requests gray-controller would act on now, as its status lists them
	// (next, full, abort, undo, retry, unpause; [] for none): resume, abort, retry and the
	// dashboard write one only when it is listed. Absent before the controller reported, and
	// when it is older than the list.
	Serves *grayapi.Serves `json:"serves,omitempty"`
	// Message is the gray-controller's explanation of the phase.
	Message string `json:"message"`
	// Step is the index of the current hold point; equal to the number of
	// hold points when the rollout goes to the end.
	Step int32 `json:"step"`
	// Steps is the number of hold points.
	Steps int32 `json:"steps"`
	// Percent is the hold point of the current step (100 at the end).
	Percent int32 `json:"percent"`
	// Target is the number of new-revision replicas the current step holds at.
	Target int32 `json:"target"`
	// HeldAt is when the current hold was reached (RFC3339); absent unless held.
	HeldAt *metav1.Time `json:"heldAt,omitempty"`
	// Policy is what the Deployment's kubegray.io/on-failure and
	// kubegray.io/hold-for ask of gray-controller; absent unless Gray.
	Policy *PolicyView `json:"policy,omitempty"`
	// Failure is why the rollout failed: set while Degraded, kept while
	// Aborted (reason Aborted when a person aborted a rollout that had not
	// failed) and after a rollback, until the next rollout begins.
	Failure *FailureView `json:"failure,omitempty"`
	// Gates are the current hold's gates as gray-controller last measured
	// them (docs/gates.md); absent until the hold settles.
	Gates []grayapi.GateStatus `json:"gates,omitempty"`
	// Revision is the Deployment's current revision
	// (deployment.kubernetes.io/revision).
	Revision int64 `json:"revision"`
	// StableRevision is the revision fully rolled out before this rollout:
	// the one `kubectl gray undo` returns to. 0 when unknown.
	StableRevision int64 `json:"stableRevision"`
	// Paused mirrors spec.paused (gray-controller pauses held Deployments).
	Paused bool `json:"paused"`
	// Mode is the mode of the gray-controller that last reported ("instead"
	// or "alongside"); "" before it reported.
	Mode grayapi.Mode `json:"mode"`
	// TakenOver is true while the Deployment is taken over by an alongside
	// gray-controller: paused on strategy Recreate for the whole rollout,
	// its own strategy saved in kubegray.io/strategy.
	TakenOver bool `json:"takenOver"`
	// SavedStrategy is kubegray.io/strategy ("" unless taken over).
	SavedStrategy string `json:"savedStrategy,omitempty"`
	// Takeover is the alongside controller's takeover path ("admission" or
	// "eager"), as its last status says; empty in instead mode or before it
	// reported.
	Takeover string `json:"takeover,omitempty"`
	// Stale is true while the reported phase may not yet reflect the latest
	// change (a new generation or a pending resume request); StaleReasons
	// says why.
	Stale bool `json:"stale"`
	// StaleReasons explains Stale, one sentence each.
	StaleReasons []string `json:"staleReasons,omitempty"`
	// Warnings are problems found while reading the annotations.
	Warnings []string `json:"warnings,omitempty"`
	// Replicas is the desired replica count (spec.replicas).
	Replicas int32 `json:"replicas"`
	// CurrentReplicas is status.replicas: pods of every revision.
	CurrentReplicas int32 `json:"currentReplicas"`
	// UpdatedReplicas is status.updatedReplicas: pods of the current template.
	UpdatedReplicas int32 `json:"updatedReplicas"`
	// ReadyReplicas is status.readyReplicas.
	ReadyReplicas int32 `json:"readyReplicas"`
	// AvailableReplicas is status.availableReplicas.
	AvailableReplicas int32 `json:"availableReplicas"`
	// NewAvailableReplicas are the available pods of the new ReplicaSet, the
	// count that reaches Target; 0 when there is no new ReplicaSet yet.
	// Omitted in a GrayStatusList.
	NewAvailableReplicas *int32 `json:"newAvailableReplicas,omitempty"`
	// Images of the current pod template.
	Images []ContainerImage `json:"images"`
	// Conditions of the Deployment, including GrayHeld.
	Conditions []ConditionView `json:"conditions"`
	// NotReady says why pods of the new ReplicaSet are not ready; absent
	// when they all are. Omitted in a GrayStatusList.
	NotReady *NotReadyView `json:"notReady,omitempty"`
	// Revisions are the Deployment's ReplicaSets, newest revision first.
	// Omitted in a GrayStatusList.
	Revisions []RevisionView `json:"revisions,omitempty"`
	// Events are the latest gray events of the Deployment, oldest first.
	// Omitted in a GrayStatusList.
	Events []EventView `json:"events,omitempty"`

	// deployment is the Deployment's name, namespace and labels, for the
	// table's NAMESPACE and LABELS columns and -o name; not printed.
	deployment metav1.ObjectMeta
}

// StatusViewList is what `kubectl gray status -o json|yaml` prints without
// a Deployment name: every gray Deployment of the namespace (or of all
// namespaces with -A), without revisions and events.
type StatusViewList struct {
	// Kind is always "GrayStatusList".
	Kind string `json:"kind"`
	// APIVersion is always "kubectl-gray/v1".
	APIVersion string `json:"apiVersion"`
	// Items are the gray Deployments, by namespace and name.
	Items []StatusView `json:"items"`
}

// ConditionView is one Deployment condition.
type ConditionView struct {
	// Type, e.g. Available, Progressing, GrayHeld.
	Type string `json:"type"`
	// Status: True, False or Unknown.
	Status string `json:"status"`
	// Reason is the machine-readable reason.
	Reason string `json:"reason"`
	// Message is the human-readable message.
	Message string `json:"message"`
	// LastTransitionTime is when Status last changed (RFC3339).
	LastTransitionTime *metav1.Time `json:"lastTransitionTime,omitempty"`
}

// RevisionView is one revision of the Deployment and its ReplicaSet.
type RevisionView struct {
	// Revision is the ReplicaSet's deployment.kubernetes.io/revision.
	Revision int64 `json:"revision"`
	// ReplicaSet is the ReplicaSet name.
	ReplicaSet string `json:"replicaSet"`
	// New is true for the ReplicaSet running the current template.
	New bool `json:"new"`
	// Stable is true for the stable revision.
	Stable bool `json:"stable"`
	// Aborted is true for the ReplicaSet of an aborted rollout of its
	// revision (gray-controller's kubegray.io/aborted label names it).
	Aborted bool `json:"aborted,omitempty"`
	// Replicas is the ReplicaSet's spec.replicas.
	Replicas int32 `json:"replicas"`
	// ReadyReplicas is the ReplicaSet's status.readyReplicas.
	ReadyReplicas int32 `json:"readyReplicas"`
	// AvailableReplicas is the ReplicaSet's status.availableReplicas.
	AvailableReplicas int32 `json:"availableReplicas"`
	// Images of the ReplicaSet's pod template.
	Images []ContainerImage `json:"images"`
	// Pods of the ReplicaSet, by name.
	Pods []PodView `json:"pods"`
}

// PodView is one pod of a ReplicaSet.
type PodView struct {
	// Name of the pod.
	Name string `json:"name"`
	// Phase is the pod phase, or "Terminating" once deletion started.
	Phase string `json:"phase"`
	// Ready is the pod's Ready condition.
	Ready bool `json:"ready"`
	// ReadyContainers is the number of ready containers.
	ReadyContainers int32 `json:"readyContainers"`
	// Containers is the number of containers.
	Containers int32 `json:"containers"`
	// Restarts is the sum of the containers' restart counts.
	Restarts int32 `json:"restarts"`
	// CreatedAt is the pod's creation time (RFC3339).
	CreatedAt metav1.Time `json:"createdAt"`
}

// EventView is one gray event of the Deployment.
type EventView struct {
	// Type is Normal or Warning.
	Type string `json:"type"`
	// Reason is one of the gray event reasons, e.g. GrayHeld.
	Reason string `json:"reason"`
	// Message is the event message.
	Message string `json:"message"`
	// Count is how many times the event was seen.
	Count int32 `json:"count"`
	// LastSeen is when the event was last seen (RFC3339).
	LastSeen *metav1.Time `json:"lastSeen,omitempty"`
}

// related are the objects around a Deployment that a full status shows.
type related struct {
	replicaSets []*appsv1.ReplicaSet
	pods        []*corev1.Pod
	events      []corev1.Event
}

// newStatusView builds the view of one Deployment. With rel nil (the table
// view, which reads only Deployments) it has no revisions and events.
func newStatusView(d *appsv1.Deployment, rel *related) StatusView {
	v := StatusView{
		Kind:              statusViewKind,
		APIVersion:        viewAPIVersion,
		Namespace:         d.Namespace,
		Name:              d.Name,
		Paused:            d.Spec.Paused,
		Replicas:          replicasOf(d),
		CurrentReplicas:   d.Status.Replicas,
		UpdatedReplicas:   d.Status.UpdatedReplicas,
		ReadyReplicas:     d.Status.ReadyReplicas,
		AvailableReplicas: d.Status.AvailableReplicas,
		HoldPoints:        []int32{},
		Images:            templateImages(&d.Spec.Template.Spec),
		Conditions:        []ConditionView{},
		deployment:        metav1.ObjectMeta{Namespace: d.Namespace, Name: d.Name, Labels: d.Labels},
	}
	annotations := d.Annotations
	var percentErr error
	if raw, ok := annotations[grayapi.PercentAnnotation]; ok {
		v.Gray = true
		v.PercentAnnotation = raw
		if points, err := grayapi.ParseHoldPoints(raw); err != nil {
			percentErr = err
		} else {
			v.HoldPoints = points.Percents
			v.HoldPointDurations = pointDurations(points.HoldFor)
		}
	}
	v.Steps = int32(len(v.HoldPoints))
	v.SavedStrategy, v.TakenOver = annotations[grayapi.StrategyAnnotation]
	if v.TakenOver {
		// Taken over means alongside, even before the controller reported.
		v.Mode = grayapi.ModeAlongside
	}
	if rev, err := deployutil.Revision(d); err != nil {
		v.Warnings = append(v.Warnings, fmt.Sprintf("deployment %s/%s: %v", d.Namespace, d.Name, err))
	} else {
		v.Revision = rev
	}

	var recorded *grayapi.Status
	if st, present, err := grayapi.RecordedStatus(annotations); err != nil {
		v.Warnings = append(v.Warnings, err.Error())
	} else if present {
		v.Phase = st.Phase
		if st.Serves != nil {
			v.Serves = &st.Serves
		}
		v.Mode = st.Mode
		v.Takeover = string(st.Takeover)
		v.Message = st.Message
		v.Step = st.Step
		v.Percent = st.Percent
		v.Target = st.Target
		v.HeldAt = st.HeldAt
		v.StableRevision = st.StableRevision
		v.Failure = failureView(st.Failure)
		v.Gates = st.Gates
		v.StaleReasons = staleReasons(d, st, v.HoldPoints, percentErr)
		recorded = &st
	}
	if v.Gray {
		v.Policy = policyView(annotations, recorded, v.TakenOver)
	}
	// The controller's message usually is this very error; say it once.
	if percentErr != nil && percentErr.Error() != v.Message {
		v.Warnings = append(v.Warnings, percentErr.Error())
	}
	if d.Status.ObservedGeneration < d.Generation {
		v.StaleReasons = append(v.StaleReasons, fmt.Sprintf("the Deployment controller has not yet observed generation %d", d.Generation))
	}
	v.Stale = len(v.StaleReasons) > 0

	for _, c := range d.Status.Conditions {
		cv := ConditionView{Type: string(c.Type), Status: string(c.Status), Reason: c.Reason, Message: c.Message}
		if !c.LastTransitionTime.IsZero() {
			t := c.LastTransitionTime
			cv.LastTransitionTime = &t
		}
		v.Conditions = append(v.Conditions, cv)
	}

	if rel != nil {
		newRS := deployutil.FindNewReplicaSet(d, rel.replicaSets)
		v.NotReady = notReadyView(newRS, rel.pods)
		v.Revisions = revisionViews(rel.replicaSets, newRS, rel.pods, v.StableRevision)
		var newAvailable int32
		for _, r := range v.Revisions {
			if r.New {
				newAvailable = r.AvailableReplicas
			}
		}
		v.NewAvailableReplicas = &newAvailable
		v.Events = eventViews(d, rel.events)
	}
	return v
}

// pointDurations are the hold points' own durations for the view, nil when none names one.
func pointDurations(holdFor []time.Duration) []metav1.Duration {
	if !slices.ContainsFunc(holdFor, func(d time.Duration) bool { return d > 0 }) {
		return nil
	}
	out := make([]metav1.Duration, len(holdFor))
	for i, d := range holdFor {
		out[i] = metav1.Duration{Duration: d}
	}
	return out
}

// holdPoints are the view's hold points with their own durations.
func (v StatusView) holdPoints() grayapi.HoldPoints {
	points := grayapi.HoldPoints{Percents: v.HoldPoints}
	for _, d := range v.HoldPointDurations {
		points.HoldFor = append(points.HoldFor, d.Duration)
	}
	return points
}

// staleReasons says why a parsed gray status may not describe the Deployment
// as it is now. `status --until` keeps waiting while there is a reason, so a
// status written before the last change cannot end the wait early.
func staleReasons(d *appsv1.Deployment, st grayapi.Status, points []int32, percentErr error) []string {
	var reasons []string
	if st.ObservedGeneration < d.Generation {
		reasons = append(reasons, fmt.Sprintf("gray-controller has not yet observed generation %d (status is for %d)", d.Generation, st.ObservedGeneration))
	}
	if r, ok := d.Annotations[grayapi.ResumeAnnotation]; ok {
		reasons = append(reasons, fmt.Sprintf("resume request %q is not yet consumed", r))
	}
	// An annotation edit does not bump the generation, so compare the hold
	// points and the policy with what the status was computed from. Either
	// can make the phase Invalid.
	_, policyErr := grayapi.ParsePolicy(d.Annotations)
	switch {
	case st.Phase == grayapi.PhaseInvalid && percentErr == nil && policyErr == nil && len(points) > 0:
		reasons = append(reasons, fmt.Sprintf("hold points (%s) and policy are valid since gray-controller reported Invalid", grayapi.FormatPercent(points)))
	case st.Phase != grayapi.PhaseInvalid && percentErr != nil:
		reasons = append(reasons, "hold points became invalid since gray-controller reported")
	case st.Phase != grayapi.PhaseInvalid && policyErr != nil:
		reasons = append(reasons, "the policy became invalid since gray-controller reported")
	case st.Phase == grayapi.PhaseHeld && len(points) > 0 && grayapi.StepPercent(points, st.Step) != st.Percent:
		reasons = append(reasons, fmt.Sprintf("hold points changed to %s since the hold at %d%%", grayapi.FormatPercent(points), st.Percent))
	}
	return reasons
}

// replicasOf is spec.replicas with the API default of 1.
func replicasOf(d *appsv1.Deployment) int32 {
	if d.Spec.Replicas == nil {
		return 1
	}
	return *d.Spec.Replicas
}
