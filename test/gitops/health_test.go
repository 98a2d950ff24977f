package gitops

import (
	"context"
	"testing"
)

// The shipped files, from this module's directory.
const (
	argoDir   = "../../manifests/argocd"
	fluxFile  = "../../manifests/flux/healthcheckexprs.yaml"
	heldMsg   = "held at 20% (step 1/2): 2 of 10 replicas on revision 2; run kubectl gray resume"
	failedMsg = "revision 2 missed its progress deadline: replica set web-2 has 0 of 2 replicas available"
	abortMsg  = "revision 2 aborted at 20%: " + failedMsg + "; stable revision 1 runs 10 of 10 replicas; kubectl gray retry web or a new template starts again"
	invalid   = `invalid kubegray.io/percent "20,x"`
)

// deployment builds web as the API server serves it: 10 replicas, generation 3 observed, all
// counts at 10 unless changed.
func deployment(opts ...func(d map[string]any)) map[string]any {
	d := map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "web", "namespace": "default", "generation": int64(3),
			"annotations": map[string]any{"deployment.kubernetes.io/revision": "2"}},
		"spec": map[string]any{"replicas": int64(10)},
		"status": map[string]any{"observedGeneration": int64(3), "replicas": int64(10), "updatedReplicas": int64(10),
			"readyReplicas": int64(10), "availableReplicas": int64(10), "conditions": []any{
				map[string]any{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"},
				map[string]any{"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable"},
			}},
	}
	for _, o := range opts {
		o(d)
	}
	return d
}

func field(d map[string]any, path ...string) map[string]any {
	for _, p := range path {
		d = d[p].(map[string]any)
	}
	return d
}

func paused(d map[string]any) { field(d, "spec")["paused"] = true }

func counts(replicas, updated, available int64) func(map[string]any) {
	return func(d map[string]any) {
		s := field(d, "status")
		s["replicas"], s["updatedReplicas"], s["availableReplicas"] = replicas, updated, available
	}
}

func generationAhead(d map[string]any) { field(d, "metadata")["generation"] = int64(4) }

// observedByBuiltin is web after a new template (generation 4) that only the built-in
// controller has seen (alongside mode): it observed the generation and found no ReplicaSet of
// the template, while kubegray.io/status still reports generation 3.
func observedByBuiltin(d map[string]any) {
	field(d, "metadata")["generation"] = int64(4)
	field(d, "status")["observedGeneration"] = int64(4)
	counts(10, 0, 10)(d)
}

func condition(kind, status, reason, message string) func(map[string]any) {
	return func(d map[string]any) {
		s := field(d, "status")
		var kept []any
		for _, c := range s["conditions"].([]any) {
			if c.(map[string]any)["type"] != kind {
				kept = append(kept, c)
			}
		}
		s["conditions"] = append(kept, map[string]any{"type": kind, "status": status, "reason": reason, "message": message})
	}
}

// withoutFields removes fields of the condition of type kind.
func withoutFields(kind string, fields ...string) func(map[string]any) {
	return func(d map[string]any) {
		for _, c := range field(d, "status")["conditions"].([]any) {
			if c := c.(map[string]any); c["type"] == kind {
				for _, f := range fields {
					delete(c, f)
				}
			}
		}
	}
}

// gray annotates web with hold points 20,50 and the status gray-controller wrote for generation 3.
func gray(d map[string]any) {
	a := field(d, "metadata", "annotations")
	a["kubegray.io/percent"] = "20,50"
	a["kubegray.io/status"] = `{"mode":"instead","revision":2,"stableRevision":1,"step":0,"percent":20,"target":2,"phase":"Held","message":"x","observedGeneration":3,"heldAt":"2026-12-02T00:00:00Z"}`
}

// withoutAnnotation removes an annotation of web.
func withoutAnnotation(key string) func(map[string]any) {
	return func(d map[string]any) { delete(field(d, "metadata", "annotations"), key) }
}

// phases builds web in each phase gray-controller reports, as the conditions and counts show it.
func phases(opts ...func(map[string]any)) []func(map[string]any) { return opts }

var (
	held     = phases(gray, paused, counts(10, 2, 10), condition("GrayHeld", "True", "HoldPointReached", heldMsg))
	degraded = phases(gray, paused, counts(10, 2, 8), condition("GrayHeld", "False", "ProgressDeadlineExceeded", failedMsg),
		condition("Stalled", "True", "ProgressDeadlineExceeded", failedMsg))
	// aborted: the canary's ReplicaSet at 0, the template left as Git wrote it.
	aborted = phases(gray, paused, counts(10, 0, 10), condition("GrayHeld", "False", "Aborted", abortMsg),
		condition("Stalled", "True", "Aborted", abortMsg))
	progressing = phases(gray, counts(11, 1, 10), condition("GrayHeld", "False", "Progressing", "rolling revision 2 to 2 of 10 replicas (20%)"))
	complete    = phases(gray, condition("GrayHeld", "False", "Complete", "all 10 replicas run revision 2"))
)

func TestHealth(t *testing.T) {
	argo, err := LoadArgoCD(argoDir)
	if err != nil {
		t.Fatal(err)
	}
	flux, err := LoadFlux(fluxFile)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name            string
		opts            []func(map[string]any)
		argo            Health
		kstatus, fluxIs string
	}{
		// Not gray: exactly Argo CD's built-in check (gitops-engine health_deployment.go).
		{name: "plain, rolled out", argo: Health{Status: "Healthy"}, kstatus: "Current", fluxIs: "Current"},
		{name: "plain, paused", opts: []func(map[string]any){paused},
			argo: Health{Status: "Suspended", Message: "Deployment is paused"}, kstatus: "Current", fluxIs: "Current"},
		{name: "plain, generation not observed", opts: []func(map[string]any){generationAhead},
			argo:    Health{Status: "Progressing", Message: "Waiting for rollout to finish: observed deployment generation less than desired generation"},
			kstatus: "InProgress", fluxIs: "InProgress"},
		{name: "plain, past its progress deadline", opts: []func(map[string]any){counts(10, 3, 9), condition("Progressing", "False", "ProgressDeadlineExceeded", "")},
			argo: Health{Status: "Degraded", Message: `Deployment "web" exceeded its progress deadline`}, kstatus: "Failed", fluxIs: "Failed"},
		{name: "plain, updating", opts: []func(map[string]any){counts(12, 3, 9)},
			argo:    Health{Status: "Progressing", Message: "Waiting for rollout to finish: 3 out of 10 new replicas have been updated..."},
			kstatus: "InProgress", fluxIs: "InProgress"},
		{name: "plain, old replicas terminating", opts: []func(map[string]any){counts(12, 10, 10)},
			argo:    Health{Status: "Progressing", Message: "Waiting for rollout to finish: 2 old replicas are pending termination..."},
			kstatus: "InProgress", fluxIs: "InProgress"},
		{name: "plain, updated not available", opts: []func(map[string]any){counts(10, 10, 8)},
			argo:    Health{Status: "Progressing", Message: "Waiting for rollout to finish: 8 of 10 updated replicas are available..."},
			kstatus: "InProgress", fluxIs: "InProgress"},
		{name: "annotated, not reported on yet", opts: []func(map[string]any){gray, paused},
			argo: Health{Status: "Suspended", Message: "Deployment is paused"}, kstatus: "Current", fluxIs: "Current"},
		// Gray: the conditions first.
		{name: "held", opts: held, argo: Health{Status: "Suspended", Message: heldMsg}, kstatus: "InProgress", fluxIs: "Current"},
		{name: "held, new generation not observed yet", opts: append(append([]func(map[string]any){}, held...), generationAhead),
			argo:    Health{Status: "Progressing", Message: "Waiting for rollout to finish: observed deployment generation less than desired generation"},
			kstatus: "InProgress", fluxIs: "InProgress"},
		{name: "degraded", opts: degraded, argo: Health{Status: "Degraded", Message: "ProgressDeadlineExceeded: " + failedMsg},
			kstatus: "Failed", fluxIs: "Failed"},
		{name: "invalid", opts: []func(map[string]any){gray, paused, condition("GrayHeld", "False", "Invalid", `invalid kubegray.io/percent "20,x"`),
			condition("Stalled", "True", "Invalid", `invalid kubegray.io/percent "20,x"`)},
			argo: Health{Status: "Degraded", Message: `Invalid: invalid kubegray.io/percent "20,x"`}, kstatus: "Failed", fluxIs: "Failed"},
		{name: "progressing to a hold", opts: []func(map[string]any){gray, counts(11, 1, 10), condition("GrayHeld", "False", "Progressing", "rolling revision 2 to 2 of 10 replicas (20%)")},
			argo: Health{Status: "Progressing", Message: "rolling revision 2 to 2 of 10 replicas (20%)"}, kstatus: "InProgress", fluxIs: "InProgress"},
		{name: "aborted", opts: aborted, argo: Health{Status: "Degraded", Message: "Aborted: " + abortMsg}, kstatus: "Failed", fluxIs: "Failed"},
		{name: "aborted, GrayHeld alone", opts: phases(gray, paused, counts(10, 0, 10), condition("GrayHeld", "False", "Aborted", abortMsg)),
			argo: Health{Status: "Degraded", Message: "Aborted: " + abortMsg}, kstatus: "InProgress", fluxIs: "Failed"},
		// A condition's reason and message are optional in the API.
		{name: "stalled without a message", opts: phases(gray, paused, counts(10, 2, 8), condition("GrayHeld", "False", "ProgressDeadlineExceeded", ""),
			condition("Stalled", "True", "ProgressDeadlineExceeded", "")),
			argo: Health{Status: "Degraded", Message: "ProgressDeadlineExceeded"}, kstatus: "Failed", fluxIs: "Failed"},
		{name: "stalled without a reason or message", opts: phases(gray, paused, counts(10, 2, 8), condition("GrayHeld", "False", "", ""),
			condition("Stalled", "True", "", ""), withoutFields("GrayHeld", "reason", "message"), withoutFields("Stalled", "reason", "message")),
			argo: Health{Status: "Degraded"}, kstatus: "Failed", fluxIs: "Failed"},
		{name: "held without a message", opts: append(phases(held...), withoutFields("GrayHeld", "message")),
			argo: Health{Status: "Suspended"}, kstatus: "InProgress", fluxIs: "Current"},
		{name: "progressing without a reason or message", opts: append(phases(progressing...), withoutFields("GrayHeld", "reason", "message")),
			argo: Health{Status: "Progressing"}, kstatus: "InProgress", fluxIs: "InProgress"},
		// Flux reads every optional field as optional: no status annotation, no annotations.
		{name: "held, no status annotation", opts: append(phases(held...), withoutAnnotation("kubegray.io/status")),
			argo: Health{Status: "Suspended", Message: heldMsg}, kstatus: "InProgress", fluxIs: "Current"},
		{name: "held condition, no annotations at all", opts: phases(paused, counts(10, 2, 10), condition("GrayHeld", "True", "HoldPointReached", heldMsg),
			func(d map[string]any) { delete(field(d, "metadata"), "annotations") }),
			argo: Health{Status: "Suspended", Message: "Deployment is paused"}, kstatus: "InProgress", fluxIs: "InProgress"},
		{name: "created, no status yet", opts: phases(gray, func(d map[string]any) { d["status"] = map[string]any{} }),
			argo:    Health{Status: "Progressing", Message: "Waiting for rollout to finish: observed deployment generation less than desired generation"},
			kstatus: "InProgress", fluxIs: "InProgress"},
		// Alongside mode: the built-in controller observed a new template before gray-controller
		// took it over; the hold it carried over is the previous template's.
		{name: "held, a new template observed by the built-in controller only", opts: append(phases(held...), observedByBuiltin),
			argo: Health{Status: "Suspended", Message: heldMsg}, kstatus: "InProgress", fluxIs: "InProgress"},
		{name: "complete, kept paused by eager takeover", opts: []func(map[string]any){gray, paused, condition("GrayHeld", "False", "Complete", "all 10 replicas run revision 2")},
			argo: Health{Status: "Healthy"}, kstatus: "Current", fluxIs: "Current"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := deployment(tt.opts...)
			got, err := argo.Health(d)
			if err != nil || got != tt.argo {
				t.Errorf("Argo CD health = %+v, %v; want %+v", got, err, tt.argo)
			}
			ks, err := KStatus(d)
			if err != nil || ks.Status != tt.kstatus {
				t.Errorf("kstatus = %+v, %v; want %s", ks, err, tt.kstatus)
			}
			fl, err := flux.Health(context.Background(), d)
			if err != nil || fl.Status != tt.fluxIs {
				t.Errorf("Flux healthCheckExprs = %+v, %v; want %s", fl, err, tt.fluxIs)
			}
		})
	}
}
