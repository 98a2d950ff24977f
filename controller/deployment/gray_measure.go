package deployment

// A metric gate's measurements are taken off the sync path (controller/measure): a sync asks for
// the ones due, the pool queries the provider and queues the Deployment, and the next sync
// records what it found (controller/gray: DecideGates).

import (
	"context"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/kubegray/kubectl-gray/controller/gates"
	"github.com/kubegray/kubectl-gray/controller/gray"
	"github.com/kubegray/kubectl-gray/controller/measure"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// measured is the latest measurement taken of each of n's metric gates on Deployment uid.
func (dc *DeploymentController) measured(uid types.UID, n namedGates) map[string]gates.Measurement {
	out := map[string]gates.Measurement{}
	for name := range n.providers {
		if m, ok := dc.measurer.Latest(measure.Key{Deployment: uid, Gate: name}); ok {
			out[name] = m
		}
	}
	return out
}

// askMeasurements has the measurements requested taken, for the hold st of d whose canary is
// canaryRS and stable revision stableRS.
func (dc *DeploymentController) askMeasurements(d *appsv1.Deployment, st grayapi.Status, canaryRS, stableRS *appsv1.ReplicaSet, n namedGates, requests []gray.GateRequest) {
	if len(requests) == 0 {
		return
	}
	name, err := cache.MetaNamespaceKeyFunc(d)
	if err != nil {
		return
	}
	vars := gates.QueryVars{Namespace: d.Namespace, Deployment: d.Name, CanaryHash: podTemplateHash(canaryRS), StableHash: podTemplateHash(stableRS)}
	for _, r := range requests {
		def, provider, opened := r.Gate, n.providers[r.Gate.Name], r.Opened
		dc.measurer.Submit(measure.Job{Key: measure.Key{Deployment: d.UID, Gate: def.Name}, Name: name, Provider: provider,
			Revision: st.Revision, Step: st.Step, Due: r.Due,
			Measure: func(ctx context.Context, at time.Time) (grayapi.GateOutcome, string, string) {
				v := vars
				v.Window = at.Sub(opened)
				hashes := []string{""}
				if def.Compare {
					hashes = []string{v.CanaryHash, v.StableHash}
				}
				var readings []gates.Reading
				for _, hash := range hashes {
					query, err := def.Render(v, hash, provider.NamespaceLabel)
					if err != nil {
						readings = append(readings, gates.Reading{Err: err})
						continue
					}
					readings = append(readings, measure.Query(ctx, dc.httpClient, provider, query, at))
				}
				return def.JudgeMetric(readings...)
			}})
	}
}

// podTemplateHash is rs's pod-template-hash label (empty without a ReplicaSet).
func podTemplateHash(rs *appsv1.ReplicaSet) string {
	if rs == nil {
		return ""
	}
	return rs.Labels[appsv1.DefaultDeploymentUniqueLabelKey]
}
