package gray

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegray/kubectl-gray/pkg/deployutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// SetConditions keeps GrayHeld True while the rollout is Held and False otherwise, with the
// phase as reason (the failure's reason, ProgressDeadlineExceeded or StableReplicaSetGone, while
// Degraded), and Stalled True while it is Degraded, Invalid or Aborted (absent otherwise).
// steps is the number of hold points, for the Held message ("held at 20% (step 1/2): ...")
// that the Argo CD health check shows.
func SetConditions(status *appsv1.DeploymentStatus, st grayapi.Status, replicas int32, steps int, now metav1.Time) {
	held := fmt.Sprintf("held at %d%% (step %d/%d): %d of %d replicas on revision %d", st.Percent, st.Step+1, steps, st.Target, replicas, st.Revision)
	switch unsure := CannotTell(st.Gates); {
	case st.Phase == grayapi.PhaseHeld && unsure != "":
		// A person must decide: GitOps health reads the reason (Flux: not Current).
		msg := held + "; " + unsure + "; kubectl gray resume accepts the canary, kubectl gray undo rejects it"
		setCondition(status, *deployutil.NewDeploymentCondition(grayapi.ConditionGrayHeld, corev1.ConditionTrue, grayapi.ReasonGateInconclusive, msg, now))
	case st.Phase == grayapi.PhaseHeld:
		setCondition(status, *deployutil.NewDeploymentCondition(grayapi.ConditionGrayHeld, corev1.ConditionTrue, grayapi.ReasonHoldPointReached,
			held+"; run kubectl gray resume", now))
	default:
		setCondition(status, *deployutil.NewDeploymentCondition(grayapi.ConditionGrayHeld, corev1.ConditionFalse, failureReason(st), st.Message, now))
	}
	switch st.Phase {
	case grayapi.PhaseDegraded, grayapi.PhaseInvalid, grayapi.PhaseAborted:
		setCondition(status, *deployutil.NewDeploymentCondition(grayapi.ConditionStalled, corev1.ConditionTrue, failureReason(st), st.Message, now))
	default:
		deployutil.RemoveDeploymentCondition(status, grayapi.ConditionStalled)
	}
}

// failureReason is a condition's reason for st: the failure's while Degraded, else the phase
// (Aborted for an aborted rollout, whose failure is in the status).
func failureReason(st grayapi.Status) string {
	if st.Phase == grayapi.PhaseDegraded && st.Failure != nil {
		return st.Failure.Reason
	}
	return string(st.Phase)
}

// setCondition is deployutil.SetDeploymentCondition for our conditions, but a new message
// replaces the old one when the status and reason stay: upstream keeps a reason's first
// message, and ours would go on saying "2 of 10 replicas" of a hold scaled to 20, or the
// number of pods not ready when the step missed its deadline. The transition time stays
// while the status does. The message is capped as the status's is (Argo CD shows it whole).
func setCondition(status *appsv1.DeploymentStatus, c appsv1.DeploymentCondition) {
	c.Message = grayapi.CapMessage(c.Message)
	cur := deployutil.GetDeploymentCondition(*status, c.Type)
	if cur != nil && cur.Status == c.Status && cur.Reason == c.Reason && cur.Message == c.Message {
		return
	}
	if cur != nil && cur.Status == c.Status {
		c.LastTransitionTime = cur.LastTransitionTime
	}
	deployutil.RemoveDeploymentCondition(status, c.Type)
	status.Conditions = append(status.Conditions, c)
}
