package alongside

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// A saved strategy is restored as the API server would have defaulted it, and described in the
// kubegray.io/strategy format. Expected values are written out by hand.
func TestSavedStrategyRestored(t *testing.T) {
	one, half := intstr.FromInt32(1), intstr.FromString("50%")
	rolling := func(surge, unavailable *intstr.IntOrString) appsv1.DeploymentStrategy {
		s := appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType}
		if surge != nil || unavailable != nil {
			s.RollingUpdate = &appsv1.RollingUpdateDeployment{MaxSurge: surge, MaxUnavailable: unavailable}
		}
		return s
	}
	for _, tc := range []struct {
		name  string
		saved appsv1.DeploymentStrategy
		want  string
	}{
		{"RollingUpdate alone is 25%/25%", rolling(nil, nil), "RollingUpdate;maxSurge=25%;maxUnavailable=25%"},
		{"maxSurge alone keeps it, unavailable defaulted", rolling(&one, nil), "RollingUpdate;maxSurge=1;maxUnavailable=25%"},
		{"maxUnavailable alone keeps it, surge defaulted", rolling(nil, &half), "RollingUpdate;maxSurge=25%;maxUnavailable=50%"},
		{"both kept", rolling(&one, &half), "RollingUpdate;maxSurge=1;maxUnavailable=50%"},
		{"Recreate is left as it is", appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}, "Recreate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := describeStrategy(tc.saved)
			if got := describeStrategy(withStrategyDefaults(tc.saved)); got != tc.want {
				t.Errorf("restored %s, want %s", got, tc.want)
			}
			if after := describeStrategy(tc.saved); after != before {
				t.Errorf("the saved strategy was changed in place: %s, was %s", after, before)
			}
		})
	}
}

// A strategy that cannot be written in the annotation's format is still named in messages.
func TestDescribeStrategyOfAnUnsavableStrategy(t *testing.T) {
	if got := describeStrategy(appsv1.DeploymentStrategy{Type: "Canary"}); got != "Canary" {
		t.Errorf("described %q, want the type alone", got)
	}
}
