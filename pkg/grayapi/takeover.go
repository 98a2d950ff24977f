package grayapi

import (
	appsv1 "k8s.io/api/apps/v1"
)

// TakeoverAnnotations are the annotations that taking d over for alongside mode adds, as the
// kubegray-takeover admission policy adds them: d's strategy saved in StrategyAnnotation and,
// when its user paused it, PausedAnnotation, since the takeover's own pause would hide theirs.
// The takeover itself then sets spec.paused and strategy Recreate (TakenOverStrategy). An unset
// strategy type counts as RollingUpdate, which the API server defaults it to.
//
//	RollingUpdate 25%/25%, not paused → {strategy: "RollingUpdate;maxSurge=25%;maxUnavailable=25%"}
//	RollingUpdate 1/0, paused         → {strategy: "RollingUpdate;maxSurge=1;maxUnavailable=0", paused: "true"}
func TakeoverAnnotations(d *appsv1.Deployment) (map[string]string, error) {
	strategy := d.Spec.Strategy
	if strategy.Type == "" {
		strategy.Type = appsv1.RollingUpdateDeploymentStrategyType
	}
	saved, err := FormatStrategy(strategy)
	if err != nil {
		return nil, err
	}
	annotations := map[string]string{StrategyAnnotation: saved}
	if d.Spec.Paused {
		annotations[PausedAnnotation] = "true"
	}
	return annotations, nil
}

// TakenOverStrategy is the strategy of a taken-over Deployment: with Recreate, the built-in
// controller's paused sync creates no ReplicaSet and rolls nothing.
func TakenOverStrategy() appsv1.DeploymentStrategy {
	return appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
}
