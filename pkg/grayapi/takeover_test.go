package grayapi

import (
	"maps"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestTakeoverAnnotations(t *testing.T) {
	parsed := func(surge, unavailable string) appsv1.DeploymentStrategy {
		s, u := intstr.Parse(surge), intstr.Parse(unavailable)
		return rolling(&s, &u)
	}
	for _, tc := range []struct {
		name     string
		strategy appsv1.DeploymentStrategy
		paused   bool
		want     map[string]string
	}{
		{"rolling", parsed("25%", "25%"), false, map[string]string{StrategyAnnotation: "RollingUpdate;maxSurge=25%;maxUnavailable=25%"}},
		{"paused by its user", parsed("1", "0"), true,
			map[string]string{StrategyAnnotation: "RollingUpdate;maxSurge=1;maxUnavailable=0", PausedAnnotation: "true"}},
		{"never defaulted", appsv1.DeploymentStrategy{}, false, map[string]string{StrategyAnnotation: "RollingUpdate"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Strategy: tc.strategy, Paused: tc.paused}}
			got, err := TakeoverAnnotations(d)
			if err != nil || !maps.Equal(got, tc.want) {
				t.Errorf("TakeoverAnnotations = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
	bad := &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Strategy: parsed("0", "0")}}
	if _, err := TakeoverAnnotations(bad); err == nil {
		t.Error("TakeoverAnnotations of maxSurge 0 and maxUnavailable 0: no error")
	}
}
