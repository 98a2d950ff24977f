package plugin

import (
	"fmt"
	"strings"
	"text/tabwriter"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/kubegray/kubectl-gray/pkg/grayapi"
	"github.com/kubegray/kubectl-gray/pkg/podhealth"
)

// The failure view of `kubectl gray status`: why a rollout failed, what
// kubegray.io/on-failure (or a person) did about it, and why the new ReplicaSet's pods are
// not ready. The same facts end `status --until` with exit code 1, so a CI
// log says what a person would otherwise look up with kubectl describe.

// FailureView is why a gray rollout failed, as gray-controller reported it.
type FailureView struct {
	// Reason is the machine-readable reason: ProgressDeadlineExceeded.
	Reason string `json:"reason"`
	// Message names the ReplicaSet, its target, how many of its replicas
	// were available and the most common reason its pods were not ready.
	Message string `json:"message"`
	// RolledBackFrom is the revision whose template was replaced by the
	// stable one's (kubectl gray undo, a revert, or an older gray-controller's
	// kubegray.io/on-failure: rollback); 0 when nothing was rolled back. An
	// abort keeps the template, so it leaves this 0.
	RolledBackFrom int64 `json:"rolledBackFrom,omitempty"`
}

// NotReadyView says why pods of the new ReplicaSet are not ready.
type NotReadyView struct {
	// ReplicaSet is the name of the new ReplicaSet.
	ReplicaSet string `json:"replicaSet"`
	// Pods counts its pods that are not ready (terminating ones aside).
	Pods int `json:"pods"`
	// Top is the most common reason in one phrase, the way gray-controller
	// quotes it in a Degraded message, e.g. "2 pods CrashLoopBackOff
	// (back-off 10s restarting failed container), 7 restarts".
	Top string `json:"top"`
	// Reasons group those pods by why they are not ready, the most common
	// first; the ReplicaSet's own ReplicaFailure condition (quota, admission
	// denial) comes last, with no pods.
	Reasons []PodReasonView `json:"reasons"`
}

// PodReasonView is one reason pods are not ready, and how many it holds back.
type PodReasonView struct {
	// Reason is the word to look up: a container waiting reason
	// (ImagePullBackOff, ErrImagePull, CrashLoopBackOff,
	// CreateContainerConfigError, ...), the scheduler's (Unschedulable), or
	// ReplicaFailure.
	Reason string `json:"reason"`
	// Message is the longer explanation, taken from the first such pod by name.
	Message string `json:"message,omitempty"`
	// Pods counts the pods held back by it; 0 for ReplicaFailure.
	Pods int `json:"pods"`
	// Restarts sums the container restarts of those pods.
	Restarts int32 `json:"restarts"`
}

func failureView(f *grayapi.Failure) *FailureView {
	if f == nil {
		return nil
	}
	return &FailureView{Reason: f.Reason, Message: f.Message, RolledBackFrom: f.RolledBackFrom}
}

// notReadyView groups the not-ready pods of rs among pods by reason; nil
// when there is no new ReplicaSet, or nothing holds its pods back.
func notReadyView(rs *appsv1.ReplicaSet, pods []*corev1.Pod) *NotReadyView {
	if rs == nil {
		return nil
	}
	// Summarize picks rs's pods out by their controller reference.
	s := podhealth.Summarize(rs, pods)
	if len(s.Reasons) == 0 {
		return nil
	}
	v := &NotReadyView{ReplicaSet: rs.Name, Pods: s.NotReady, Top: s.Top(), Reasons: make([]PodReasonView, len(s.Reasons))}
	for i, r := range s.Reasons {
		v.Reasons[i] = PodReasonView{Reason: r.Reason, Message: r.Message, Pods: r.Pods, Restarts: r.Restarts}
	}
	return v
}

// failureText is the Failure line of the summary. The controller's Message
// while Degraded or rolling back usually quotes the failure message; it is
// said once.
func failureText(v StatusView) string {
	f := v.Failure
	text := orPlaceholder(f.Reason, "-")
	if f.Message != "" && !strings.Contains(v.Message, f.Message) {
		text += ": " + f.Message
	}
	return text
}

// rolledBackText says that revision f.RolledBackFrom was rolled back. It
// does not say by whom: kubegray.io/on-failure aborts now, keeping the
// template, so a template rolled back after a failure was most likely undone
// by hand, but an older gray-controller rolled back by itself.
func rolledBackText(f *FailureView) string {
	if f.Reason != grayapi.ReasonRolledBack {
		return fmt.Sprintf("rolled back revision %d to the stable revision after it failed", f.RolledBackFrom)
	}
	return fmt.Sprintf("rolled back revision %d to the stable revision", f.RolledBackFrom)
}

// abortedText says how revision v.Revision came to be Aborted: by
// kubegray.io/on-failure when it failed under that policy, by a request
// (kubectl gray abort) otherwise, before or after it failed.
func abortedText(v StatusView) string {
	f := v.Failure
	switch {
	case f == nil:
		return fmt.Sprintf("aborted revision %d", v.Revision)
	case f.Reason == grayapi.ReasonAborted:
		return fmt.Sprintf("aborted revision %d on request before it failed", v.Revision)
	case v.Policy != nil && v.Policy.OnFailure == string(grayapi.OnFailureAbort):
		return fmt.Sprintf("aborted revision %d automatically (%s: %s)", v.Revision, grayapi.OnFailureAnnotation, grayapi.OnFailureAbort)
	}
	return fmt.Sprintf("aborted revision %d on request after it failed", v.Revision)
}

// abortedPhaseText is what the Phase line adds to Aborted: where the
// replicas went, and that the template did not change.
func abortedPhaseText(v StatusView) string {
	if v.StableRevision > 0 {
		return fmt.Sprintf("revision %d scaled to 0, stable revision %d back to all replicas, template kept", v.Revision, v.StableRevision)
	}
	return fmt.Sprintf("revision %d scaled to 0, template kept", v.Revision)
}

// renderNotReady writes the table of reasons the new pods are not ready.
func renderNotReady(b *strings.Builder, n *NotReadyView) {
	fmt.Fprintf(b, "Not ready (replicaset.apps/%s, %s):\n", n.ReplicaSet, plural(int32(n.Pods), "pod"))
	tw := tabwriter.NewWriter(b, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "  PODS\tREASON\tRESTARTS\tMESSAGE")
	for _, r := range n.Reasons {
		pods, restarts := fmt.Sprint(r.Pods), fmt.Sprint(r.Restarts)
		if r.Pods == 0 {
			// The ReplicaSet's ReplicaFailure: about pods it could not create.
			pods, restarts = "-", "-"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", pods, r.Reason, restarts, r.Message)
	}
	// Writes into a strings.Builder cannot fail.
	_ = tw.Flush()
}

// failureError ends `status --until` for a rollout that failed: Degraded,
// Aborted (by kubegray.io/on-failure or by a person: either way the revision
// awaited will not hold or complete until it is retried), or failed and then
// rolled back (also once the rollback is Complete: the rollout that was
// awaited did not succeed). It is nil for any other rollout.
func failureError(v StatusView) error {
	obj := fmt.Sprintf("deployment %s/%s", v.Namespace, v.Name)
	if v.Phase == grayapi.PhaseAborted {
		// The canary's pods are gone; the failure is in the controller's record.
		return fmt.Errorf("%s is Aborted: %s; %s; %s", obj, orPlaceholder(failureMessage(v), "(no message)"), abortedText(v), againHint(v.Name))
	}
	if v.Failure != nil && v.Failure.RolledBackFrom > 0 && v.Failure.Reason != grayapi.ReasonRolledBack {
		// The pods now shown are those of the stable revision; the failed
		// revision's reason is in the controller's message. A rollout rolled
		// back before it failed is no failure: the rollback was asked for.
		return fmt.Errorf("%s %s: %s", obj, rolledBackText(v.Failure), orPlaceholder(failureMessage(v), "(no message)"))
	}
	if v.Phase != grayapi.PhaseDegraded {
		return nil
	}
	reason := orPlaceholder(failureMessage(v), "(no message)")
	if n := v.NotReady; n != nil && n.Top != "" && !strings.Contains(reason, n.Top) {
		reason += "; not ready: " + n.Top
	}
	advice := fmt.Sprintf("see 'kubectl gray status %s', then size it back to the stable revision with 'kubectl gray abort %s' (template kept) or roll back with 'kubectl gray undo %s'",
		v.Name, v.Name, v.Name)
	if v.Policy != nil && v.Policy.OnFailure == string(grayapi.OnFailureAbort) && v.StableRevision > 0 {
		// Exit now rather than wait: the rollout awaited has failed either way.
		advice = fmt.Sprintf("%s: %s aborts it, back to stable revision %d with the template kept; see 'kubectl gray status %s'",
			grayapi.OnFailureAnnotation, grayapi.OnFailureAbort, v.StableRevision, v.Name)
	}
	return fmt.Errorf("%s is Degraded: %s; %s", obj, reason, advice)
}

// failureMessage is the controller's explanation of the failure, or of the
// phase when it reported no Failure.
func failureMessage(v StatusView) string {
	if v.Failure != nil && v.Failure.Message != "" {
		return v.Failure.Message
	}
	return v.Message
}
