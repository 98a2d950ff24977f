package gitops

import (
	"context"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// The shipped files, from this module's directory.
const (
	argoDir   = "../../manifests/argocd"
	fluxFile  = "../../manifests/flux/healthcheckexprs.yaml"
	heldMsg   = "held at 20% (step 1/2): 2 of 10 replicas on revision 2; run kubectl gray resume"
	held0Msg  = "held at 0% (step 1/2): 0 of 10 replicas on revision 2; run kubectl gray resume"
	userMsg   = "paused by the user while rolling revision 2 to 2 of 10 replicas (20%)"
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

// The requests a status serves, for short.
const (
	next    = grayapi.RequestNext
	full    = grayapi.RequestFull
	abort   = grayapi.RequestAbort
	undo    = grayapi.RequestUndo
	retry   = grayapi.RequestRetry
	unpause = grayapi.RequestUnpause
)

// gray annotates web with hold points 20,50 and the status gray-controller writes for generation
// 3 held at 20%, serving next, full, abort and undo.
func gray(d map[string]any) {
	field(d, "metadata", "annotations")["kubegray.io/percent"] = "20,50"
	recorded(grayapi.PhaseHeld, 20, 2, 3, true, next, full, abort, undo)(d)
}

// recorded replaces the kubegray.io/status of gray with one gray-controller wrote in phase at
// percent (target of 10), for generation (0: the Deployment's current one), with heldAt while
// its hold stands, serving serves. It is grayapi.FormatStatus's, the controller's own writer, so
// the scripts are tested against the JSON gray-controller writes.
func recorded(phase grayapi.Phase, percent, target int32, generation int64, holding bool, serves ...grayapi.Request) func(map[string]any) {
	return func(d map[string]any) {
		st := grayapi.Status{Serves: grayapi.ServesOf(func(r grayapi.Request) bool { return slices.Contains(serves, r) }),
			ObservedGeneration: generation, Mode: grayapi.ModeInstead, Revision: 2, StableRevision: 1, Percent: percent, Target: target,
			Phase: phase, Message: "x"}
		if generation == 0 {
			st.ObservedGeneration = field(d, "metadata")["generation"].(int64)
		}
		if holding {
			at := metav1.NewTime(time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC))
			st.HeldAt, st.SettledAt = &at, &at
		}
		value, err := grayapi.FormatStatus(st)
		if err != nil {
			panic(err)
		}
		field(d, "metadata", "annotations")["kubegray.io/status"] = value
	}
}

// legacyStatus replaces the kubegray.io/status of gray with a held one written before serves
// existed, for generation 3.
func legacyStatus(d map[string]any) {
	field(d, "metadata", "annotations")["kubegray.io/status"] = `{"observedGeneration":3,"mode":"instead","revision":2,"stableRevision":1,"step":0,"percent":20,"target":2,"phase":"Held","message":"x","heldAt":"2026-12-02T00:00:00Z"}`
}

// percent sets kubegray.io/percent.
func percent(points string) func(map[string]any) {
	return func(d map[string]any) { field(d, "metadata", "annotations")["kubegray.io/percent"] = points }
}

// takenOver is web as alongside mode's takeover leaves it: paused, on Recreate, its own strategy
// saved in kubegray.io/strategy.
func takenOver(d map[string]any) {
	field(d, "spec")["paused"] = true
	field(d, "spec")["strategy"] = map[string]any{"type": "Recreate"}
	field(d, "metadata", "annotations")["kubegray.io/strategy"] = "RollingUpdate;maxSurge=25%;maxUnavailable=25%"
}

// pausedByItsUser is the user's own pause of a taken-over Deployment (alongside mode), which the
// takeover's pause would hide.
func pausedByItsUser(d map[string]any) {
	field(d, "metadata", "annotations")["kubegray.io/paused"] = "true"
}

// pausedAsServed is the Progressing condition the Deployment controller gives a paused
// Deployment with a progress deadline (the API's default is 600 s), which kstatus reads.
func pausedAsServed(d map[string]any) {
	field(d, "spec")["progressDeadlineSeconds"] = int64(600)
	condition("Progressing", "Unknown", "DeploymentPaused", "Deployment is paused")(d)
}

// withoutAnnotation removes an annotation of web.
func withoutAnnotation(key string) func(map[string]any) {
	return func(d map[string]any) { delete(field(d, "metadata", "annotations"), key) }
}

// phases builds web in each phase gray-controller reports, as the conditions and counts show it.
func phases(opts ...func(map[string]any)) []func(map[string]any) { return opts }

var (
	held     = phases(gray, paused, counts(10, 2, 10), condition("GrayHeld", "True", "HoldPointReached", heldMsg))
	degraded = phases(gray, paused, recorded(grayapi.PhaseDegraded, 20, 2, 0, false, abort, undo), counts(10, 2, 8),
		condition("GrayHeld", "False", "ProgressDeadlineExceeded", failedMsg), condition("Stalled", "True", "ProgressDeadlineExceeded", failedMsg))
	// aborted: the canary's ReplicaSet at 0, the template left as Git wrote it.
	aborted = phases(gray, paused, recorded(grayapi.PhaseAborted, 20, 2, 0, false, undo, retry), counts(10, 0, 10),
		condition("GrayHeld", "False", "Aborted", abortMsg), condition("Stalled", "True", "Aborted", abortMsg))
	progressing = phases(gray, recorded(grayapi.PhaseProgressing, 20, 2, 0, false, abort, undo), counts(11, 1, 10),
		condition("GrayHeld", "False", "Progressing", "rolling revision 2 to 2 of 10 replicas (20%)"))
	complete = phases(gray, recorded(grayapi.PhaseComplete, 100, 10, 0, false), condition("GrayHeld", "False", "Complete", "all 10 replicas run revision 2"))
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
		// Without kubegray.io/status nothing says the hold is of this template, or that the pause
		// is ours.
		{name: "held, no status annotation", opts: append(phases(held...), withoutAnnotation("kubegray.io/status")),
			argo: Health{Status: "Suspended", Message: heldMsg}, kstatus: "InProgress", fluxIs: "InProgress"},
		{name: "held condition, no annotations at all", opts: phases(paused, counts(10, 2, 10), condition("GrayHeld", "True", "HoldPointReached", heldMsg),
			func(d map[string]any) { delete(field(d, "metadata"), "annotations") }),
			argo: Health{Status: "Suspended", Message: "Deployment is paused"}, kstatus: "InProgress", fluxIs: "InProgress"},
		{name: "created, no status yet", opts: phases(gray, func(d map[string]any) { d["status"] = map[string]any{} }),
			argo:    Health{Status: "Progressing", Message: "Waiting for rollout to finish: observed deployment generation less than desired generation"},
			kstatus: "InProgress", fluxIs: "InProgress"},
		// Alongside mode: the built-in controller observed a new template before gray-controller
		// took it over; the hold it carried over is the previous template's, as the generation at
		// the start of kubegray.io/status says.
		{name: "held, a new template observed by the built-in controller only", opts: append(phases(held...), observedByBuiltin),
			argo: Health{Status: "Progressing", Message: "Waiting for rollout to finish: gray-controller has not reported on generation 4 yet"}, kstatus: "InProgress", fluxIs: "InProgress"},
		// A status written before serves existed does not say it in a form the script can read.
		{name: "held, a new template observed by the built-in controller only, status without serves", opts: append(phases(held...), legacyStatus, observedByBuiltin),
			argo: Health{Status: "Suspended", Message: heldMsg}, kstatus: "InProgress", fluxIs: "InProgress"},
		// The generation is matched whole, not as the start of a longer number.
		{name: "held, status of generation 31", opts: append(phases(held...), recorded(grayapi.PhaseHeld, 20, 2, 31, true, next, full, abort, undo)),
			argo:    Health{Status: "Progressing", Message: "Waiting for rollout to finish: gray-controller has not reported on generation 3 yet"},
			kstatus: "InProgress", fluxIs: "InProgress"},
		{name: "held, status without serves", opts: append(phases(held...), legacyStatus),
			argo: Health{Status: "Suspended", Message: heldMsg}, kstatus: "InProgress", fluxIs: "InProgress"},
		{name: "complete, kept paused by eager takeover", opts: phases(gray, takenOver, recorded(grayapi.PhaseComplete, 100, 10, 0, false),
			condition("GrayHeld", "False", "Complete", "all 10 replicas run revision 2")),
			argo: Health{Status: "Healthy"}, kstatus: "Current", fluxIs: "Current"},
		// A hold at 0% is a hold: the canary's ReplicaSet stands at 0, so no replica is updated.
		{name: "held at 0%", opts: phases(gray, percent("0,50"), paused, recorded(grayapi.PhaseHeld, 0, 0, 0, true, next, full, abort, undo), counts(10, 0, 10),
			condition("GrayHeld", "True", "HoldPointReached", held0Msg)),
			argo: Health{Status: "Suspended", Message: held0Msg}, kstatus: "InProgress", fluxIs: "Current"},
		{name: "held at 0%, taken over", opts: phases(gray, percent("0,50"), takenOver, recorded(grayapi.PhaseHeld, 0, 0, 0, true, next, full, abort, undo), counts(10, 0, 10),
			condition("GrayHeld", "True", "HoldPointReached", held0Msg)),
			argo: Health{Status: "Suspended", Message: held0Msg}, kstatus: "InProgress", fluxIs: "Current"},
		// A new template while held that gray-controller has not seen: kubegray.io/status still
		// reports the generation before. In alongside mode the built-in controller has observed
		// the generation already and carried GrayHeld over; a revert finds its ReplicaSet with
		// pods, so the replica counts do not tell. The generation at the start of the status
		// does: a rollout, from the write that applied it.
		{name: "held, a revert observed by the built-in controller only", opts: append(phases(held...), takenOver,
			recorded(grayapi.PhaseHeld, 20, 2, 3, true, next, full, abort, undo), observedByBuiltin, counts(10, 8, 10)),
			argo: Health{Status: "Progressing", Message: "Waiting for rollout to finish: gray-controller has not reported on generation 4 yet"}, kstatus: "InProgress", fluxIs: "InProgress"},
		{name: "held at 0%, a new template observed by the built-in controller only", opts: phases(gray, percent("0,50"), takenOver,
			recorded(grayapi.PhaseHeld, 0, 0, 3, true, next, full, abort, undo), observedByBuiltin, condition("GrayHeld", "True", "HoldPointReached", held0Msg)),
			argo: Health{Status: "Progressing", Message: "Waiting for rollout to finish: gray-controller has not reported on generation 4 yet"}, kstatus: "InProgress", fluxIs: "InProgress"},
		// The user's own pause reads as each tool reads a paused Deployment: Argo CD Suspended,
		// Flux as kstatus (the Deployment controller's Progressing condition says DeploymentPaused,
		// which kstatus takes for not done). Alongside mode keeps it in kubegray.io/paused; in
		// instead mode it is spec.paused, which gray-controller does not serve "next" for.
		{name: "paused by its user mid-step, taken over", opts: phases(gray, takenOver, pausedByItsUser, recorded(grayapi.PhaseProgressing, 20, 2, 0, false, abort, undo),
			counts(10, 1, 10), pausedAsServed, condition("GrayHeld", "False", "Progressing", userMsg)),
			argo: Health{Status: "Suspended", Message: userMsg}, kstatus: "InProgress", fluxIs: "InProgress"},
		// In instead mode a hold taken but not settled is spec.paused with GrayHeld Progressing too;
		// it serves "next", the user's pause does not.
		{name: "paused by its user mid-step, instead mode", opts: phases(gray, paused, recorded(grayapi.PhaseProgressing, 20, 2, 0, false, abort, undo, unpause),
			counts(10, 1, 10), pausedAsServed, condition("GrayHeld", "False", "Progressing", userMsg)),
			argo: Health{Status: "Suspended", Message: userMsg}, kstatus: "InProgress", fluxIs: "InProgress"},
		{name: "hold taken, not settled yet, instead mode", opts: phases(gray, paused, recorded(grayapi.PhaseProgressing, 20, 2, 0, false, next, full, abort, undo, unpause),
			counts(10, 2, 9), condition("GrayHeld", "False", "Progressing", "rolling revision 2 to 2 of 10 replicas (20%)")),
			argo: Health{Status: "Progressing", Message: "rolling revision 2 to 2 of 10 replicas (20%)"}, kstatus: "InProgress", fluxIs: "InProgress"},
		// The pause is a write of its own: until gray-controller reports on its generation, or
		// from a status without serves, the script cannot tell, and shows Progressing.
		{name: "paused by its user mid-step, instead mode, not reported on yet", opts: phases(gray, paused,
			recorded(grayapi.PhaseProgressing, 20, 2, 0, false, abort, undo), generationAhead, func(d map[string]any) { field(d, "status")["observedGeneration"] = int64(4) },
			counts(10, 1, 10), pausedAsServed, condition("GrayHeld", "False", "Progressing", userMsg)),
			argo: Health{Status: "Progressing", Message: userMsg}, kstatus: "InProgress", fluxIs: "InProgress"},
		{name: "paused by its user while held, taken over", opts: append(phases(held...), takenOver, pausedByItsUser, pausedAsServed),
			argo: Health{Status: "Suspended", Message: heldMsg}, kstatus: "InProgress", fluxIs: "InProgress"},
		// After Complete no hold stands: spec.paused is the user's (instead mode, or alongside
		// after the release handed the pause back), or kubegray.io/paused under eager takeover.
		{name: "paused by its user after Complete", opts: phases(gray, paused, recorded(grayapi.PhaseComplete, 100, 10, 0, false), pausedAsServed,
			condition("GrayHeld", "False", "Complete", "all 10 replicas run revision 2")),
			argo: Health{Status: "Suspended", Message: "Deployment is paused"}, kstatus: "InProgress", fluxIs: "InProgress"},
		{name: "paused by its user after Complete, kept taken over", opts: phases(gray, takenOver, pausedByItsUser, recorded(grayapi.PhaseComplete, 100, 10, 0, false),
			pausedAsServed, condition("GrayHeld", "False", "Complete", "all 10 replicas run revision 2")),
			argo: Health{Status: "Suspended", Message: "Deployment is paused"}, kstatus: "InProgress", fluxIs: "InProgress"},
		{name: "plain, paused", opts: phases(paused, pausedAsServed),
			argo: Health{Status: "Suspended", Message: "Deployment is paused"}, kstatus: "InProgress", fluxIs: "InProgress"},
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
