package gray

import (
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegray/kubectl-gray/pkg/deployutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// abortedFacts is what decideAborted decides from.
type abortedFacts struct {
	// Status is the rollout in flight, its abort just started (decideCourse) or standing; Prev is
	// the status read, HasPrev whether it names a rollout and is trusted.
	Status, Prev grayapi.Status
	HasPrev      bool
	Deployment   *appsv1.Deployment
	// NewRS is the aborted canary's ReplicaSet, OldRSs the others.
	NewRS  *appsv1.ReplicaSet
	OldRSs []*appsv1.ReplicaSet
	Now    time.Time
}

// AbortedSync is what decideAborted decided.
type AbortedSync struct {
	// Status goes with the first write, saying how many replicas the stable revision runs as
	// found; Reported ends the sync, saying it as the sizes leave them.
	Status, Reported grayapi.Status
	// LeavesHold: our hold goes with the first write; Paused is spec.paused after it.
	LeavesHold, Paused bool
	// Sizes take the canary to 0 and the stable revision back to every replica (PlanAbortSizes);
	// nil when no ReplicaSet of the stable revision is left.
	Sizes *SizePlan
	// Progressing is the condition the report mirrors where it is ours: False with
	// ProgressDeadlineExceeded, the one reason `kubectl rollout status` reports as a failure (nil:
	// none, or already said).
	Progressing *appsv1.DeploymentCondition
}

// decideAborted decides the sync of an aborted rollout: the status saying so first, with our
// hold, which an abort leaves; then the sizes back to the stable revision; then the status with
// the counts. Revision 3 aborted at 20% of 10 over stable revision 1 at 8 reports "stable
// revision 1 runs 8 of 10 replicas" first and "runs 10 of 10" once the sizes are written.
func decideAborted(f abortedFacts) AbortedSync {
	d := f.Deployment
	// The canary's ReplicaSet may be gone (deleted by hand after the abort): the status read still
	// says the revision in flight is aborted, and there is nothing of it left to scale.
	canaryName := ""
	if f.NewRS != nil {
		canaryName = f.NewRS.Name
	}
	st := Aborted(f.Status, canaryName)
	ourHold := d.Spec.Paused && f.HasPrev && f.Prev.HeldAt != nil
	dec := AbortedSync{LeavesHold: ourHold, Paused: d.Spec.Paused && !ourHold}
	var found, left int32
	if stable := StableToGoBackTo(f.OldRSs, st.StableRevision); stable != nil {
		plan := PlanAbortSizes(d, stable, f.NewRS, f.OldRSs)
		dec.Sizes = &plan
		found, left = *stable.Spec.Replicas, plan.OldSizes[0]
	}
	dec.Status, dec.Reported = abortedMessage(st, d, found), abortedMessage(st, d, left)
	cond := deployutil.GetDeploymentCondition(d.Status, appsv1.DeploymentProgressing)
	if deployutil.HasProgressDeadline(d) && (cond == nil || cond.Reason != deployutil.TimedOutReason || cond.Message != dec.Reported.Message) {
		dec.Progressing = deployutil.NewDeploymentCondition(appsv1.DeploymentProgressing, corev1.ConditionFalse, deployutil.TimedOutReason,
			dec.Reported.Message, metav1.NewTime(f.Now))
	}
	return dec
}

// abortedMessage is st with the message of an aborted rollout whose stable revision runs stable
// replicas.
func abortedMessage(st grayapi.Status, d *appsv1.Deployment, stable int32) grayapi.Status {
	st.Message = fmt.Sprintf("revision %d aborted (%s: %s); stable revision %d runs %d of %d replicas; kubectl gray retry %s, or a new template, starts again",
		st.Revision, st.Failure.Reason, st.Failure.Message, st.StableRevision, stable, *d.Spec.Replicas, d.Name)
	return st
}
