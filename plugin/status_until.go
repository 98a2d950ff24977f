package plugin

// `kubectl gray status --until`: when the wait is over, and the lines it prints meanwhile.

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/kubegray/kubectl-gray/pkg/deployutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// untilReached says whether the wait for a phase is over: true when reached,
// an error when it cannot be reached (Degraded, Aborted, failed and rolled
// back, Invalid, or a rollout that completed without holding).
func untilReached(v StatusView, until string) (bool, error) {
	obj := fmt.Sprintf("deployment %s/%s", v.Namespace, v.Name)
	if !v.Gray {
		if until == untilHeld {
			return false, fmt.Errorf("%s is not a gray Deployment, so it never holds; make it one with 'kubectl gray set %s PERCENT'", obj, v.Name)
		}
		return plainRolloutComplete(v)
	}
	if v.Stale {
		return false, nil
	}
	if err := failureError(v); err != nil {
		return false, err
	}
	switch v.Phase {
	case grayapi.PhaseInvalid:
		return false, fmt.Errorf("%s is Invalid: %s; fix it with '%s'", obj, orPlaceholder(v.Message, "(no message)"), fixCommand(v))
	case grayapi.PhaseHeld:
		return until == untilHeld, nil
	case grayapi.PhaseComplete:
		if until == untilHeld {
			return false, fmt.Errorf("%s is Complete: revision %d rolled out without a hold; start a gray rollout with 'kubectl gray set %s PERCENT --image CONTAINER=IMAGE'", obj, v.Revision, v.Name)
		}
		return true, nil
	}
	return false, nil
}

// fixCommand is the set command that rewrites the annotations that may have
// made a rollout Invalid. set always writes the hold points, so PERCENT is in
// it even when only the policy is wrong.
func fixCommand(v StatusView) string {
	cmd := "kubectl gray set " + v.Name + " PERCENT"
	if v.Policy != nil && v.Policy.OnFailureError != "" {
		cmd += " --on-failure hold|abort"
	}
	if v.Policy != nil && v.Policy.HoldForError != "" {
		cmd += " --hold-for DURATION"
	}
	return cmd
}

// plainRolloutComplete applies kubectl rollout status's test to a Deployment
// without gray annotations: every replica updated and available.
func plainRolloutComplete(v StatusView) (bool, error) {
	for _, c := range v.Conditions {
		if c.Type == string(appsv1.DeploymentProgressing) && c.Reason == deployutil.TimedOutReason {
			return false, fmt.Errorf("deployment %s/%s exceeded its progress deadline", v.Namespace, v.Name)
		}
	}
	if v.Stale {
		return false, nil
	}
	return v.UpdatedReplicas == v.Replicas && v.CurrentReplicas == v.Replicas && v.AvailableReplicas == v.Replicas, nil
}

// waitingLine is the progress line --until prints without -w.
func waitingLine(v StatusView, until string) string {
	prefix := fmt.Sprintf("Waiting for %s to be %s: ", deploymentRef(v.Name), until)
	switch {
	case len(v.StaleReasons) > 0:
		return prefix + v.StaleReasons[0]
	case !v.Gray:
		return prefix + fmt.Sprintf("%d of %d replicas updated, %d available", v.UpdatedReplicas, v.Replicas, v.AvailableReplicas)
	case v.Phase == "":
		return prefix + "gray-controller has not reported yet"
	}
	var available int32
	if v.NewAvailableReplicas != nil {
		available = *v.NewAvailableReplicas
	}
	line := prefix + fmt.Sprintf("%s at %d%% (step %s), %d of %d new replicas available", v.Phase, v.Percent, stepText(v), available, v.Target)
	// Why the wait is long shows in a CI log before the progress deadline.
	if v.NotReady != nil && v.NotReady.Top != "" {
		line += "; not ready: " + v.NotReady.Top
	}
	return line
}

// reachedLine is the last line of a successful --until.
func reachedLine(v StatusView, until string) string {
	if until == untilHeld {
		return fmt.Sprintf("%s held at %d%% (step %s, revision %d)", deploymentRef(v.Name), v.Percent, stepText(v), v.Revision)
	}
	return fmt.Sprintf("%s rollout complete (revision %d)", deploymentRef(v.Name), v.Revision)
}
