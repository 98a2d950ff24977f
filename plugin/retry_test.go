package plugin

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubegray/kubectl-gray/internal/testutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// TestRetryRequest holds retry to the rules it applied before gray-controller listed what it
// serves, which stay for a status of an older gray-controller (refuseUnserved); with a list,
// TestServedRetry decides.
func TestRetryRequest(t *testing.T) {
	tests := []struct {
		name string
		d    *appsv1.Deployment
		// template is the revision of the ReplicaSet running d's template (0: none).
		template  int64
		want      grayapi.Resume
		wantFirst int32
		wantErr   string
	}{
		{name: "aborted", d: deployment("web", testutil.WithGeneration(4, 4), withOlderGray(t, "10,30", withPhase(grayapi.PhaseAborted))),
			want: grayapi.Resume{Revision: 2, Retry: true}, wantFirst: 10},
		{name: "aborted, hold points changed since", d: deployment("web", testutil.WithGeneration(4, 4), withOlderGray(t, "25%,50%", withPhase(grayapi.PhaseAborted))),
			want: grayapi.Resume{Revision: 2, Retry: true}, wantFirst: 25},
		{name: "aborted, scaled since", d: deployment("web", testutil.WithGeneration(5, 5), withOlderGray(t, "10", withPhase(grayapi.PhaseAborted))), template: 2,
			want: grayapi.Resume{Revision: 2, Retry: true}, wantFirst: 10},
		{name: "not gray", d: deployment("web"),
			wantErr: `deployment default/web is not a gray Deployment (no kubegray.io/percent annotation), so there is no gray rollout to retry; make it one with 'kubectl gray set web PERCENT'`},
		{name: "no status yet", d: deployment("web", withOlderGray(t, "20", nil)),
			wantErr: `deployment default/web has no rollout to retry: gray-controller has not reported on it yet`},
		{name: "held", d: deployment("web", testutil.WithGeneration(4, 4), withOlderGray(t, "20", heldStatus(0, 20))),
			wantErr: `deployment default/web is not Aborted (phase Held, revision 2); only an aborted rollout can be retried, see 'kubectl gray status web'`},
		{name: "degraded", d: deployment("web", testutil.WithGeneration(4, 4), withOlderGray(t, "20", withPhase(grayapi.PhaseDegraded))),
			wantErr: `deployment default/web is not Aborted (phase Degraded, revision 2)`},
		{name: "complete", d: deployment("web", testutil.WithGeneration(4, 4), withOlderGray(t, "20", withPhase(grayapi.PhaseComplete))),
			wantErr: `deployment default/web is not Aborted (phase Complete, revision 2)`},
		{name: "new template since the abort", d: deployment("web", testutil.WithGeneration(5, 5), withOlderGray(t, "20", withPhase(grayapi.PhaseAborted))), template: 3,
			wantErr: `deployment default/web has a new template since gray-controller reported on revision 2 (phase Aborted); its rollout starts by itself, follow it with 'kubectl gray status web'`},
		{name: "invalid hold points", d: deployment("web", testutil.WithGeneration(4, 4), withOlderGray(t, "50,20", withPhase(grayapi.PhaseAborted))),
			wantErr: `deployment default/web: invalid kubegray.io/percent "50,20"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			templateRevision := func() (int64, bool, error) { return tt.template, tt.template > 0, nil }
			got, first, err := retryRequest(tt.d, templateRevision)
			if tt.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
					t.Fatalf("retryRequest() error %v, want one starting %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want || first != tt.wantFirst {
				t.Fatalf("retryRequest() = %+v, %d, %v; want %+v, %d", got, first, err, tt.want, tt.wantFirst)
			}
		})
	}
}

func retryRun(cs *fake.Clientset, args []string, flags func(o *RetryOptions)) (string, error) {
	streams, out, _ := testStreams()
	o := NewRetryOptions(streams)
	if flags != nil {
		flags(o)
	}
	o.Namespace, o.Client = ns, cs
	server := deploymentLister(cs)
	defer server.Close()
	o.Getter = testGetter(server.URL)
	err := o.complete(args)
	if err == nil {
		err = o.Validate()
	}
	if err == nil {
		err = o.Run(context.Background())
	}
	return out.String(), err
}

func TestRetry(t *testing.T) {
	tests := []struct {
		name        string
		objects     func(t *testing.T) []runtime.Object
		flags       func(o *RetryOptions)
		wantPatches int
		wantResume  string
	}{
		{name: "aborted", objects: abortedWeb, wantPatches: 1, wantResume: "2:retry"},
		{name: "aborted-by-hand", objects: abortedByHandWeb, wantPatches: 1, wantResume: "2:retry"},
		{name: "client-dry-run", objects: abortedWeb, flags: func(o *RetryOptions) { o.DryRun = "client" }, wantPatches: 0},
		{name: "output-name", objects: abortedWeb, flags: func(o *RetryOptions) { *o.PrintFlags.OutputFormat = "name" }, wantPatches: 1, wantResume: "2:retry"},
		{
			name: "already-requested",
			objects: func(t *testing.T) []runtime.Object {
				objs := abortedWeb(t)
				objs[0].(*appsv1.Deployment).Annotations[grayapi.ResumeAnnotation] = "2:retry"
				return objs
			},
			wantPatches: 0, wantResume: "2:retry",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := fake.NewClientset(tt.objects(t)...)
			out, err := retryRun(cs, []string{"deploy/web"}, tt.flags)
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, "retry", tt.name, out)
			ps := patches(cs)
			if len(ps) != tt.wantPatches {
				t.Fatalf("sent %d patches, want %d", len(ps), tt.wantPatches)
			}
			for _, p := range ps {
				if rv := patchResourceVersion(t, p); rv != "100" || p.PatchOptions.FieldManager != "kubectl-gray" {
					t.Errorf("patch precondition %q, manager %q", rv, p.PatchOptions.FieldManager)
				}
				if strings.Contains(string(p.Patch), `"template"`) {
					t.Errorf("patch %s changes the template", p.Patch)
				}
			}
			if got := getDeployment(t, cs, "web").Annotations[grayapi.ResumeAnnotation]; got != tt.wantResume {
				t.Errorf("%s = %q, want %q", grayapi.ResumeAnnotation, got, tt.wantResume)
			}
		})
	}
}

func TestRetryRefusesWhenNotAborted(t *testing.T) {
	cs := fake.NewClientset(degradedWeb(t)...)
	_, err := retryRun(cs, []string{"web"}, nil)
	want := `deployment default/web is not Aborted (phase Degraded, revision 2); only an aborted rollout can be retried, see 'kubectl gray status web'`
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v, want %q", err, want)
	}
	if len(patches(cs)) != 0 {
		t.Fatal("a patch was sent")
	}
}

func TestRetryArgs(t *testing.T) {
	_, err := retryRun(fake.NewClientset(), nil, nil)
	if err == nil || err.Error() != "give one or more Deployments, or -l SELECTOR, e.g. 'kubectl gray retry web'" {
		t.Fatalf("err = %v", err)
	}
}
