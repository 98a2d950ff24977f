package gitops

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// grayActions names the action Argo CD offers for each request a status serves: kubegray.io/resume
// requests as actions of ours, the unpause as Argo CD's built-in resume.
var grayActions = map[grayapi.Request]string{
	next: "gray-resume", full: "gray-resume-full", abort: "gray-abort", undo: "gray-undo", retry: "gray-retry", unpause: "resume",
}

// offering is what discovery returns for a gray Deployment (revision known) whose status serves
// the requests: every gray action and the built-in resume, enabled exactly for those requests.
func offering(serves ...grayapi.Request) map[string]bool {
	want := map[string]bool{}
	for _, r := range grayapi.Requests {
		want[grayActions[r]] = slices.Contains(serves, r)
	}
	return want
}

// TestArgoCDActionsDiscovery pins which actions Argo CD's discovery offers in each phase: what
// kubegray.io/status serves for the Deployment's generation, nothing for another generation or a
// status without serves, and nothing of ours (no resume entry either) on a Deployment that is not
// gray.
func TestArgoCDActionsDiscovery(t *testing.T) {
	argo, err := LoadArgoCD(argoDir)
	if err != nil {
		t.Fatal(err)
	}
	invalidInFlight := phases(gray, paused, recorded(grayapi.PhaseInvalid, 20, 2, 0, false, abort), counts(10, 2, 10),
		condition("GrayHeld", "False", "Invalid", invalid), condition("Stalled", "True", "Invalid", invalid))
	tests := []struct {
		name string
		opts []func(map[string]any)
		want map[string]bool
	}{
		{name: "plain", want: map[string]bool{}},
		{name: "plain, paused", opts: phases(paused), want: map[string]bool{}},
		{name: "gray, no revision to name: only the built-in resume, gated", opts: append(phases(held...), withoutAnnotation("deployment.kubernetes.io/revision")),
			want: map[string]bool{"resume": false}},
		{name: "held", opts: held, want: offering(next, full, abort, undo)},
		{name: "held, our hold left by an unpause (instead mode)", opts: append(phases(held...), recorded(grayapi.PhaseHeld, 20, 2, 0, true, next, full, abort, undo, unpause)),
			want: offering(next, full, abort, undo, unpause)},
		{name: "progressing", opts: progressing, want: offering(abort, undo)},
		{name: "degraded", opts: degraded, want: offering(abort, undo)},
		{name: "degraded, stable revision gone: nothing to go back to", opts: phases(gray, paused, recorded(grayapi.PhaseDegraded, 20, 2, 0, false, full),
			counts(10, 2, 8), condition("GrayHeld", "False", "StableReplicaSetGone", "x"), condition("Stalled", "True", "StableReplicaSetGone", "x")),
			want: offering(full)},
		{name: "aborted", opts: aborted, want: offering(undo, retry)},
		{name: "invalid with a rollout in flight", opts: invalidInFlight, want: offering(abort)},
		{name: "complete", opts: complete, want: offering()},
		{name: "complete, paused by its user", opts: append(phases(complete...), paused, recorded(grayapi.PhaseComplete, 100, 10, 0, false, unpause)),
			want: offering(unpause)},
		// unpause served but not paused: the built-in resume has nothing to end.
		{name: "unpause served, not paused", opts: append(phases(complete...), recorded(grayapi.PhaseComplete, 100, 10, 0, false, unpause)),
			want: offering()},
		// A template gray-controller has not reported on: the generation moved on (a new template,
		// or the pause's own write), the status is the one before.
		{name: "held, a new generation not reported on", opts: append(phases(held...), recorded(grayapi.PhaseHeld, 20, 2, 0, true, next, full, abort, undo, unpause),
			generationAhead), want: offering()},
		// The generation is matched whole, not as a prefix of another number.
		{name: "status of generation 31, Deployment at 3", opts: append(phases(held...), recorded(grayapi.PhaseHeld, 20, 2, 31, true, next)), want: offering()},
		{name: "status of generation 3, Deployment at 31", opts: append(phases(held...), func(d map[string]any) { field(d, "metadata")["generation"] = int64(31) }),
			want: offering()},
		{name: "status written before serves existed", opts: append(phases(held...), legacyStatus), want: offering()},
		{name: "status not JSON", opts: append(phases(held...), func(d map[string]any) { field(d, "metadata", "annotations")["kubegray.io/status"] = "{" }),
			want: offering()},
		{name: "annotated, no status yet", opts: append(phases(held...), withoutAnnotation("kubegray.io/status")), want: offering()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := argo.Actions(deployment(tt.opts...))
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(got, tt.want) {
				t.Fatalf("actions %v, want %v", got, tt.want)
			}
		})
	}
}

// TestArgoCDActionsOfferEveryServesForm runs discovery on a status of each of the 64 lists
// serves can hold, written by grayapi.FormatStatus as gray-controller writes it, at a generation
// of one digit and of several: each offers exactly its list, so the Lua's reading of the prefix
// and Go's writing of it agree.
func TestArgoCDActionsOfferEveryServesForm(t *testing.T) {
	argo, err := LoadArgoCD(argoDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(grayapi.Requests) != 6 {
		t.Fatalf("grayapi has %d requests; the discovery script enumerates the forms of six", len(grayapi.Requests))
	}
	for _, generation := range []int64{3, 1234567} {
		for form := range 1 << len(grayapi.Requests) {
			var serves []grayapi.Request
			for i, r := range grayapi.Requests {
				if form&(1<<i) != 0 {
					serves = append(serves, r)
				}
			}
			t.Run(fmt.Sprintf("generation %d, %s", generation, grayapi.Serves(serves)), func(t *testing.T) {
				d := deployment(append(phases(held...), func(d map[string]any) { field(d, "metadata")["generation"] = generation },
					recorded(grayapi.PhaseHeld, 20, 2, 0, true, serves...))...)
				if status := field(d, "metadata", "annotations")["kubegray.io/status"].(string); !strings.HasPrefix(status, `{"serves":[`) {
					t.Fatalf("FormatStatus wrote %s, which does not start with serves", status)
				}
				got, err := argo.Actions(d)
				if err != nil {
					t.Fatal(err)
				}
				if want := offering(serves...); !maps.Equal(got, want) {
					t.Fatalf("actions %v, want %v", got, want)
				}
			})
		}
	}
}

// TestArgoCDActionsWrite pins the request each action writes: kubegray.io/resume for the
// revision in flight, every other annotation kept.
func TestArgoCDActionsWrite(t *testing.T) {
	argo, err := LoadArgoCD(argoDir)
	if err != nil {
		t.Fatal(err)
	}
	for action, want := range map[string]string{"gray-resume": "2:next", "gray-resume-full": "2:full", "gray-undo": "2:undo",
		"gray-abort": "2:abort", "gray-retry": "2:retry"} {
		out, err := argo.RunAction(deployment(held...), action)
		if err != nil {
			t.Fatalf("%s: %v", action, err)
		}
		annotations := field(out, "metadata", "annotations")
		if got := annotations["kubegray.io/resume"]; got != want {
			t.Errorf("%s wrote kubegray.io/resume=%v, want %q", action, got, want)
		}
		if annotations["kubegray.io/percent"] != "20,50" || annotations["deployment.kubernetes.io/revision"] != "2" {
			t.Errorf("%s lost the other annotations: %v", action, annotations)
		}
		// Run on a Deployment without a revision, the action fails naming the Deployment.
		_, err = argo.RunAction(deployment(append(phases(held...), withoutAnnotation("deployment.kubernetes.io/revision"))...), action)
		if err == nil || !strings.Contains(err.Error(), "deployment default/web has no deployment.kubernetes.io/revision") {
			t.Errorf("%s without a revision: %v, want an error naming default/web", action, err)
		}
	}
}
