package gitops

import (
	"context"
	"fmt"
	"os"

	kustomizeapi "github.com/fluxcd/pkg/apis/kustomize"
	fluxcel "github.com/fluxcd/pkg/runtime/cel"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/yaml"
)

// Flux evaluates the healthCheckExprs of manifests/flux for apps/v1 Deployments with Flux's own
// evaluator.
type Flux struct {
	evaluator *fluxcel.StatusEvaluator
}

// LoadFlux reads the snippet at path and compiles its Deployment expressions.
func LoadFlux(path string) (*Flux, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var snippet struct {
		HealthCheckExprs []kustomizeapi.CustomHealthCheck `json:"healthCheckExprs"`
	}
	if err := yaml.UnmarshalStrict(raw, &snippet); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for _, hc := range snippet.HealthCheckExprs {
		if hc.APIVersion == "apps/v1" && hc.Kind == "Deployment" {
			evaluator, err := fluxcel.NewStatusEvaluator(&hc.HealthCheckExpressions)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", path, err)
			}
			return &Flux{evaluator: evaluator}, nil
		}
	}
	return nil, fmt.Errorf("%s has no healthCheckExprs for apps/v1 Deployment", path)
}

// Health is the status Flux gives obj with the snippet: Current, InProgress or Failed.
func (f *Flux) Health(ctx context.Context, obj map[string]any) (Health, error) {
	result, err := f.evaluator.Evaluate(ctx, &unstructured.Unstructured{Object: obj})
	if err != nil {
		return Health{}, err
	}
	return Health{Status: string(result.Status), Message: result.Message}, nil
}

// KStatus is what kstatus (status.Compute), Flux's default health check, says of obj.
func KStatus(obj map[string]any) (Health, error) {
	result, err := status.Compute(&unstructured.Unstructured{Object: obj})
	if err != nil {
		return Health{}, err
	}
	return Health{Status: string(result.Status), Message: result.Message}, nil
}
