package gitops

import (
	"strings"
	"testing"
)

// TestArgoCDActionsDiscovery pins which gray actions Argo CD offers in each phase: each is
// enabled only where gray-controller would carry the request out, and disabled elsewhere.
func TestArgoCDActionsDiscovery(t *testing.T) {
	argo, err := LoadArgoCD(argoDir)
	if err != nil {
		t.Fatal(err)
	}
	none := map[string]bool{"gray-resume": false, "gray-resume-full": false, "gray-undo": false, "gray-abort": false, "gray-retry": false}
	with := func(enabled ...string) map[string]bool {
		want := map[string]bool{}
		for name := range none {
			want[name] = false
		}
		for _, name := range enabled {
			want[name] = true
		}
		return want
	}
	tests := []struct {
		name string
		opts []func(map[string]any)
		want map[string]bool
	}{
		{name: "plain", want: map[string]bool{}},
		{name: "annotated, not reported on yet", opts: phases(gray), want: map[string]bool{}},
		{name: "gray, no revision to name", opts: append(phases(held...), withoutAnnotation("deployment.kubernetes.io/revision")), want: map[string]bool{}},
		{name: "held", opts: held, want: with("gray-resume", "gray-resume-full", "gray-undo", "gray-abort")},
		{name: "progressing", opts: progressing, want: with("gray-undo", "gray-abort")},
		{name: "degraded", opts: degraded, want: with("gray-undo", "gray-abort")},
		{name: "degraded, stable revision gone: nothing to go back to", opts: phases(gray, counts(10, 2, 8),
			condition("GrayHeld", "False", "StableReplicaSetGone", "x"), condition("Stalled", "True", "StableReplicaSetGone", "x")), want: none},
		{name: "aborted", opts: aborted, want: with("gray-retry")},
		{name: "aborted, GrayHeld alone", opts: phases(gray, paused, counts(10, 0, 10), condition("GrayHeld", "False", "Aborted", abortMsg)),
			want: with("gray-retry")},
		{name: "invalid with a rollout in flight", opts: phases(gray, paused, counts(10, 2, 10),
			condition("GrayHeld", "False", "Invalid", invalid), condition("Stalled", "True", "Invalid", invalid)), want: with("gray-undo", "gray-abort")},
		{name: "invalid rolling to the end", opts: phases(gray, counts(12, 10, 10),
			condition("GrayHeld", "False", "Invalid", invalid), condition("Stalled", "True", "Invalid", invalid)), want: with("gray-undo", "gray-abort")},
		{name: "invalid, complete", opts: phases(gray, condition("GrayHeld", "False", "Invalid", invalid),
			condition("Stalled", "True", "Invalid", invalid)), want: none},
		{name: "invalid, aborted before", opts: phases(gray, counts(10, 0, 10), condition("GrayHeld", "False", "Invalid", invalid),
			condition("Stalled", "True", "Invalid", invalid)), want: none},
		{name: "complete", opts: complete, want: none},
		{name: "rolled back", opts: phases(gray, counts(12, 8, 10), condition("GrayHeld", "False", "RolledBack", "rolling back to stable revision 1")),
			want: none},
		{name: "conditions without reason or message", opts: append(phases(held...), withoutFields("GrayHeld", "reason", "message")),
			want: with("gray-resume", "gray-resume-full", "gray-undo", "gray-abort")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := argo.Actions(deployment(tt.opts...))
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("actions %v, want %v", got, tt.want)
			}
			for name, enabled := range tt.want {
				if e, ok := got[name]; !ok || e != enabled {
					t.Errorf("action %s enabled %t (offered %t), want %t (all: %v)", name, e, ok, enabled, got)
				}
			}
		})
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
