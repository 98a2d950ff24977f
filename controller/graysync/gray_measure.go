package graysync

// Metric and webhook gates' measurements are taken off the sync path (controller/measure): a
// sync asks for the ones due, the pool queries Prometheus or calls the webhook and queues the
// Deployment, and the next sync records what it found (controller/gray: decideGates).

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/kubegray/kubectl-gray/controller/gray"
	"github.com/kubegray/kubectl-gray/controller/measure"
	"github.com/kubegray/kubectl-gray/pkg/gates"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
	"github.com/kubegray/kubectl-gray/pkg/promquery"
)

// measured is the latest measurement taken of each of n's metric gates on Deployment uid.
func (gs *Controller) measured(uid types.UID, n namedGates) map[string]gates.Measurement {
	out := map[string]gates.Measurement{}
	for name := range n.providers {
		if m, ok := gs.measurer.Latest(measure.Key{Deployment: uid, Gate: name}); ok {
			out[name] = m
		}
	}
	return out
}

// askMeasurements has the measurements requested taken, for the hold st of d whose canary is
// canaryRS and stable revision stableRS.
func (gs *Controller) askMeasurements(d *appsv1.Deployment, st grayapi.Status, canaryRS, stableRS *appsv1.ReplicaSet, n namedGates, requests []gray.GateRequest) {
	if len(requests) == 0 {
		return
	}
	name, err := cache.MetaNamespaceKeyFunc(d)
	if err != nil {
		return
	}
	vars := gates.QueryVars{Namespace: d.Namespace, Deployment: d.Name, CanaryHash: podTemplateHash(canaryRS), StableHash: podTemplateHash(stableRS)}
	call := gates.WebhookCall{Namespace: d.Namespace, Name: d.Name, UID: string(d.UID), Revision: st.Revision, StableRevision: st.StableRevision,
		Step: st.Step, Percent: st.Percent, CanaryHash: vars.CanaryHash, StableHash: vars.StableHash}
	for _, r := range requests {
		def, provider, opened := r.Gate, n.providers[r.Gate.Name], r.Opened
		job := measure.Job{Key: measure.Key{Deployment: d.UID, Gate: def.Name}, Name: name, Provider: provider,
			Revision: st.Revision, Step: st.Step, Due: r.Due}
		switch def.Kind {
		case gates.KindWebhook:
			c := call
			c.Gate, c.SettledAt = def.Name, opened
			job.Measure = func(ctx context.Context, at time.Time) (grayapi.GateOutcome, string, string) {
				c.SentAt = at
				return gs.callWebhook(ctx, def, provider, c)
			}
		default:
			job.Measure = func(ctx context.Context, at time.Time) (grayapi.GateOutcome, string, string) {
				v := vars
				v.Window = at.Sub(opened)
				return gs.queryPrometheus(ctx, def, provider, v, at)
			}
		}
		gs.measurer.Submit(job)
	}
}

// queryPrometheus runs a metric gate's query (once per revision when compared) at at and judges
// what it returned.
func (gs *Controller) queryPrometheus(ctx context.Context, def *gates.Definition, provider *gates.Provider, v gates.QueryVars, at time.Time) (grayapi.GateOutcome, string, string) {
	hashes := []string{""}
	if def.Compare {
		hashes = []string{v.CanaryHash, v.StableHash}
	}
	client, err := gs.providerClient(ctx, provider)
	if err != nil {
		return def.JudgeMetric(gates.Reading{Err: err})
	}
	var readings []gates.Reading
	for _, hash := range hashes {
		query, err := def.Render(v, hash, provider.NamespaceLabel)
		if err != nil {
			readings = append(readings, gates.Reading{Err: err})
			continue
		}
		readings = append(readings, promquery.Query(ctx, client, provider, query, at))
	}
	return def.JudgeMetric(readings...)
}

// callWebhook calls a webhook gate's provider, signed with the key of its signing Secret (from
// gray-controller's namespace, read again every measure.SecretTTL), and judges the answer.
func (gs *Controller) callWebhook(ctx context.Context, def *gates.Definition, provider *gates.Provider, c gates.WebhookCall) (grayapi.GateOutcome, string, string) {
	body, err := json.Marshal(c)
	if err != nil {
		return def.JudgeWebhook(0, nil, err)
	}
	var key []byte
	if provider.SigningSecret != "" {
		if key, _, err = gs.secretValue(ctx, provider, provider.SigningSecret, gates.SigningKey); err != nil {
			return def.JudgeWebhook(0, nil, err)
		}
	}
	client, err := gs.providerClient(ctx, provider)
	if err != nil {
		return def.JudgeWebhook(0, nil, err)
	}
	status, answer, err := measure.Call(ctx, client, provider, key, body)
	return def.JudgeWebhook(status, answer, err)
}

// providerClient is the HTTP client of provider: the shared one, or one with its CAs and bearer
// token from its Secrets, kept while those Secrets are unchanged.
func (gs *Controller) providerClient(ctx context.Context, provider *gates.Provider) (*http.Client, error) {
	if provider.CASecret == "" && provider.BearerTokenSecret == "" && !provider.InsecureSkipVerify {
		return gs.httpClient, nil
	}
	var ca, token []byte
	version := fmt.Sprintf("%s %s %t", provider.Name, provider.URL, provider.InsecureSkipVerify)
	for _, s := range []struct {
		name, key string
		into      *[]byte
	}{{provider.CASecret, gates.CAKey, &ca}, {provider.BearerTokenSecret, gates.TokenKey, &token}} {
		if s.name == "" {
			continue
		}
		value, rv, err := gs.secretValue(ctx, provider, s.name, s.key)
		if err != nil {
			return nil, err
		}
		*s.into, version = value, version+" "+s.name+"@"+rv
	}
	gs.providerClientsMu.Lock()
	defer gs.providerClientsMu.Unlock()
	if c, ok := gs.providerClients[provider.Name]; ok && c.version == version {
		return c.client, nil
	}
	client, err := measure.NewClient(ca, provider.InsecureSkipVerify, string(token), provider.URL)
	if err != nil {
		return nil, fmt.Errorf("provider %s: CA Secret %s/%s: %w", provider.Name, gs.gates.namespace, provider.CASecret, err)
	}
	gs.providerClients[provider.Name] = versionedClient{version: version, client: client}
	return client, nil
}

// versionedClient is a provider's client, built from the Secrets' versions in version.
type versionedClient struct {
	version string
	client  *http.Client
}

// secretValue reads key of Secret name in gray-controller's namespace (as read within
// measure.SecretTTL), for provider, and the Secret's resourceVersion.
func (gs *Controller) secretValue(ctx context.Context, provider *gates.Provider, name, key string) ([]byte, string, error) {
	secret, err := gs.secrets.Get(ctx, name)
	if err != nil {
		return nil, "", fmt.Errorf("provider %s: Secret %s/%s: %w", provider.Name, gs.gates.namespace, name, err)
	}
	value := secret.Data[key]
	if len(value) == 0 {
		return nil, "", fmt.Errorf("provider %s: Secret %s/%s has no key %q", provider.Name, gs.gates.namespace, name, key)
	}
	return value, secret.ResourceVersion, nil
}

// podTemplateHash is rs's pod-template-hash label (empty without a ReplicaSet).
func podTemplateHash(rs *appsv1.ReplicaSet) string {
	if rs == nil {
		return ""
	}
	return rs.Labels[appsv1.DefaultDeploymentUniqueLabelKey]
}
