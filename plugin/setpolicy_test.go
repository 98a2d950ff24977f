package plugin

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubegray/kubectl-gray/internal/testutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

func TestSetPolicy(t *testing.T) {
	given := func(value string) optionalString {
		var s optionalString
		_ = s.Set(value)
		return s
	}
	tests := []struct {
		name          string
		existing      *appsv1.Deployment
		onFailure     *optionalString
		holdFor       *optionalString
		wantOut       string
		wantOnFailure string // "-" for absent
		wantHoldFor   string // "-" for absent
	}{
		{
			name: "both", existing: deployment("web"),
			onFailure: ptr(given("abort")), holdFor: ptr(given(" 10m ")),
			wantOut:       "deployment.apps/web gray set to 20, on-failure abort, hold-for 10m\n",
			wantOnFailure: "abort", wantHoldFor: "10m",
		},
		{
			name: "rollback, the earlier name, is written as abort", existing: deployment("web"),
			onFailure:     ptr(given("rollback")),
			wantOut:       "deployment.apps/web gray set to 20, on-failure abort\n",
			wantOnFailure: "abort", wantHoldFor: "-",
		},
		{
			name:      "hold is written, not left to the default",
			existing:  deployment("web", testutil.WithAnnotation(grayapi.OnFailureAnnotation, "rollback")),
			onFailure: ptr(given("hold")),
			wantOut:   "deployment.apps/web gray set to 20, on-failure hold\n", wantOnFailure: "hold", wantHoldFor: "-",
		},
		{
			name:     "hold-for 0 removes it",
			existing: deployment("web", testutil.WithAnnotation(grayapi.HoldForAnnotation, "10m"), testutil.WithAnnotation(grayapi.PercentAnnotation, "20")),
			holdFor:  ptr(given("0")),
			wantOut:  "deployment.apps/web gray set to 20, hold-for removed\n", wantOnFailure: "-", wantHoldFor: "-",
		},
		{
			name:      "empty values remove them",
			existing:  deployment("web", testutil.WithAnnotation(grayapi.HoldForAnnotation, "10m"), testutil.WithAnnotation(grayapi.OnFailureAnnotation, "rollback")),
			onFailure: ptr(given("")), holdFor: ptr(given("")),
			wantOut:       "deployment.apps/web gray set to 20, on-failure removed, hold-for removed\n",
			wantOnFailure: "-", wantHoldFor: "-",
		},
		{
			name:     "flags left out leave the annotations alone",
			existing: deployment("web", testutil.WithAnnotation(grayapi.HoldForAnnotation, "10m"), testutil.WithAnnotation(grayapi.OnFailureAnnotation, "rollback")),
			wantOut:  "deployment.apps/web gray set to 20\n", wantOnFailure: "rollback", wantHoldFor: "10m",
		},
		{
			name:     "unchanged",
			existing: deployment("web", testutil.WithAnnotation(grayapi.PercentAnnotation, "20"), testutil.WithAnnotation(grayapi.HoldForAnnotation, "10m")),
			holdFor:  ptr(given("10m")),
			wantOut:  "deployment.apps/web gray unchanged at 20, hold-for 10m\n", wantOnFailure: "-", wantHoldFor: "10m",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := fake.NewClientset(tt.existing)
			out, _, err := setRun(cs, []string{"web", "20"}, func(o *SetOptions) {
				if tt.onFailure != nil {
					o.OnFailure = *tt.onFailure
				}
				if tt.holdFor != nil {
					o.HoldFor = *tt.holdFor
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			if out != tt.wantOut {
				t.Errorf("output %q, want %q", out, tt.wantOut)
			}
			if n := len(patches(cs)); n > 1 {
				t.Errorf("sent %d patches, want the hold points and the policy in one", n)
			}
			d := getDeployment(t, cs, "web")
			for key, want := range map[string]string{grayapi.OnFailureAnnotation: tt.wantOnFailure, grayapi.HoldForAnnotation: tt.wantHoldFor} {
				got, ok := d.Annotations[key]
				if !ok {
					got = "-"
				}
				if got != want {
					t.Errorf("%s = %q, want %q", key, got, want)
				}
			}
		})
	}
}

func TestSetPolicyInTheImagePatch(t *testing.T) {
	cs := fake.NewClientset(deployment("web"))
	_, _, err := setRun(cs, []string{"web", "10,50"}, func(o *SetOptions) {
		o.Images = []string{"app=nginx:1.27"}
		_ = o.OnFailure.Set("abort")
		_ = o.HoldFor.Set("10m")
	})
	if err != nil {
		t.Fatal(err)
	}
	ps := patches(cs)
	if len(ps) != 1 {
		t.Fatalf("sent %d patches, want 1", len(ps))
	}
	for _, want := range []string{`"kubegray.io/on-failure":"abort"`, `"kubegray.io/hold-for":"10m"`, `"kubegray.io/percent":"10,50"`, `"nginx:1.27"`} {
		if !strings.Contains(string(ps[0].Patch), want) {
			t.Errorf("patch %s lacks %s", ps[0].Patch, want)
		}
	}
}

func TestSetPolicyErrors(t *testing.T) {
	tests := []struct {
		name    string
		flags   func(o *SetOptions)
		wantErr string
	}{
		{name: "on-failure", flags: func(o *SetOptions) { _ = o.OnFailure.Set("Rollback") },
			wantErr: `--on-failure: invalid kubegray.io/on-failure "Rollback": must be "hold" or "abort" ("rollback" is read as "abort")`},
		{name: "hold-for without a unit", flags: func(o *SetOptions) { _ = o.HoldFor.Set("10") },
			wantErr: `--hold-for: invalid kubegray.io/hold-for "10": must be a Go duration from 1s to 744h, e.g. "10m" or "1h30m"; missing unit in duration "10"`},
		{name: "hold-for 0s is not 0", flags: func(o *SetOptions) { _ = o.HoldFor.Set("0s") },
			wantErr: `--hold-for: invalid kubegray.io/hold-for "0s": must be a Go duration from 1s to 744h, e.g. "10m" or "1h30m"; 0s is shorter than 1s`},
		{name: "hold-for too long", flags: func(o *SetOptions) { _ = o.HoldFor.Set("800h") },
			wantErr: `--hold-for: invalid kubegray.io/hold-for "800h": must be a Go duration from 1s to 744h, e.g. "10m" or "1h30m"; 800h0m0s is longer than 744h0m0s`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := fake.NewClientset(deployment("web"))
			_, _, err := setRun(cs, []string{"web", "20"}, tt.flags)
			if err == nil || err.Error() != tt.wantErr {
				t.Fatalf("error %v\nwant %s", err, tt.wantErr)
			}
			if len(cs.Actions()) != 0 {
				t.Errorf("talked to the API server despite the bad value: %v", cs.Actions())
			}
		})
	}
}

// TestSetPolicyFlags runs the real command line: an explicit empty value is
// told from a flag left out.
func TestSetPolicyFlags(t *testing.T) {
	streams, _, _ := testStreams()
	cmd := NewCmdSet(nil, streams)
	if err := cmd.ParseFlags([]string{"--hold-for=", "--on-failure", "rollback"}); err != nil {
		t.Fatal(err)
	}
	fs := cmd.Flags()
	for _, name := range []string{"hold-for", "on-failure"} {
		if !fs.Changed(name) {
			t.Errorf("--%s not seen", name)
		}
	}
	hold := fs.Lookup("hold-for").Value.(*optionalString)
	onFailure := fs.Lookup("on-failure").Value.(*optionalString)
	if !hold.set || hold.value != "" || !onFailure.set || onFailure.value != "rollback" {
		t.Errorf("hold-for %+v, on-failure %+v", *hold, *onFailure)
	}
}

func ptr[T any](v T) *T { return &v }

func TestTakeoverText(t *testing.T) {
	deployment := func(annotations map[string]string) *appsv1.Deployment {
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Annotations: annotations}}
	}
	const saved = "RollingUpdate;maxSurge=25%;maxUnavailable=25%"
	eagerStatus := `{"mode":"alongside","takeover":"eager","revision":2,"stableRevision":1,"step":0,"percent":20,"target":2,"phase":"Held","observedGeneration":3}`
	tests := []struct {
		name          string
		took          bool
		before, after map[string]string
		want          string
	}{
		{name: "our own patch", took: true, before: nil, after: map[string]string{grayapi.StrategyAnnotation: saved},
			want: ", taken over by kubectl gray (strategy " + saved + " saved)"},
		{name: "the admission policy in the same write", before: nil, after: map[string]string{grayapi.StrategyAnnotation: saved},
			want: ", taken over by the kubegray-takeover admission policy (strategy " + saved + " saved)"},
		{name: "eager controller", before: map[string]string{grayapi.StrategyAnnotation: saved},
			after: map[string]string{grayapi.StrategyAnnotation: saved, grayapi.StatusAnnotation: eagerStatus},
			want:  ", taken over by gray-controller --takeover=eager while annotated"},
		{name: "not taken over", before: nil, after: map[string]string{}, want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := takeoverText(tt.took, deployment(tt.before), deployment(tt.after)); got != tt.want {
				t.Fatalf("takeoverText = %q, want %q", got, tt.want)
			}
		})
	}
}
