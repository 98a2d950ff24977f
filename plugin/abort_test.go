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

// withPhase is heldStatus in another phase, not held.
func withPhase(phase grayapi.Phase) *grayapi.Status {
	st := heldStatus(0, 10)
	st.Phase, st.HeldAt = phase, nil
	return st
}

// TestAbortRequest holds abort to the rules it applied before gray-controller listed what it
// serves, which stay for a status of an older gray-controller (refuseUnserved); with a list,
// TestServedAbort decides.
func TestAbortRequest(t *testing.T) {
	stableGone := withPhase(grayapi.PhaseDegraded)
	stableGone.Failure = &grayapi.Failure{Reason: grayapi.ReasonStableReplicaSetGone, Message: "no replica set of revision 1"}
	firstRollout := withPhase(grayapi.PhaseProgressing)
	firstRollout.StableRevision = 0
	noRevision := heldStatus(0, 10)
	noRevision.Revision = 0
	tests := []struct {
		name string
		d    *appsv1.Deployment
		// template is the revision of the ReplicaSet running d's template (0: none).
		template int64
		want     grayapi.Resume
		wantErr  string
	}{
		{name: "held", d: deployment("web", testutil.WithGeneration(4, 4), withOlderGray(t, "10,30", heldStatus(0, 10))),
			want: grayapi.Resume{Revision: 2, Abort: true}},
		{name: "progressing", d: deployment("web", testutil.WithGeneration(4, 4), withOlderGray(t, "10,30", withPhase(grayapi.PhaseProgressing))),
			want: grayapi.Resume{Revision: 2, Abort: true}},
		{name: "degraded", d: deployment("web", testutil.WithGeneration(4, 4), withOlderGray(t, "10,30", withPhase(grayapi.PhaseDegraded))),
			want: grayapi.Resume{Revision: 2, Abort: true}},
		{name: "invalid", d: deployment("web", testutil.WithGeneration(4, 4), withOlderGray(t, "10,30", withPhase(grayapi.PhaseInvalid))),
			want: grayapi.Resume{Revision: 2, Abort: true}},
		{name: "scaled since the report", d: deployment("web", testutil.WithGeneration(5, 5), withOlderGray(t, "10,30", heldStatus(0, 10))), template: 2,
			want: grayapi.Resume{Revision: 2, Abort: true}},
		{name: "revision from the Deployment when the status has none", d: deployment("web", testutil.WithRevision(7), testutil.WithGeneration(4, 4), withOlderGray(t, "20", noRevision)),
			want: grayapi.Resume{Revision: 7, Abort: true}},
		{name: "not gray", d: deployment("web"),
			wantErr: `deployment default/web is not a gray Deployment (no kubegray.io/percent annotation), so there is no gray rollout to abort; make it one with 'kubectl gray set web PERCENT'`},
		{name: "no status yet", d: deployment("web", withOlderGray(t, "20", nil)),
			wantErr: `deployment default/web has no rollout to abort: gray-controller has not reported on it yet; check that gray-controller is running, then 'kubectl gray status web'`},
		{name: "unreadable status", d: deployment("web", testutil.WithAnnotation(grayapi.PercentAnnotation, "20"), testutil.WithAnnotation(grayapi.StatusAnnotation, "held")),
			wantErr: `deployment default/web: cannot tell which rollout to abort: invalid kubegray.io/status "held"`},
		{name: "complete", d: deployment("web", testutil.WithGeneration(4, 4), withOlderGray(t, "20", withPhase(grayapi.PhaseComplete))),
			wantErr: `deployment default/web has no rollout in flight to abort (phase Complete): revision 2 is rolled out; 'kubectl gray undo web' rolls it back`},
		{name: "rolled back", d: deployment("web", testutil.WithGeneration(4, 4), withOlderGray(t, "20", withPhase(grayapi.PhaseRolledBack))),
			wantErr: `deployment default/web has no rollout in flight to abort (phase RolledBack): it is already going back to stable revision 1`},
		{name: "already aborted", d: deployment("web", testutil.WithGeneration(4, 4), withOlderGray(t, "20", withPhase(grayapi.PhaseAborted))),
			wantErr: `deployment default/web is already Aborted (revision 2); 'kubectl gray retry web', or a new template, starts again; 'kubectl gray undo web' writes the stable template back`},
		{name: "new template since the report", d: deployment("web", testutil.WithGeneration(5, 5), withOlderGray(t, "20", withPhase(grayapi.PhaseComplete))), template: 3,
			wantErr: `deployment default/web has a new template since gray-controller reported on revision 2 (phase Complete); wait until it reports on the new rollout ('kubectl gray status web'), then abort it`},
		{name: "new template without its ReplicaSet yet", d: deployment("web", testutil.WithGeneration(5, 5), withOlderGray(t, "20", heldStatus(0, 20))),
			wantErr: `deployment default/web has a new template since gray-controller reported on revision 2 (phase Held)`},
		{name: "stable ReplicaSet gone", d: deployment("web", testutil.WithGeneration(4, 4), withOlderGray(t, "20", stableGone)),
			wantErr: `deployment default/web cannot be aborted: the replica set of its stable revision 1 is gone, so the canary is all there is; finish the rollout with 'kubectl gray resume web --full', or roll back to another revision with 'kubectl gray undo web --to-revision N'`},
		{name: "no stable revision", d: deployment("web", testutil.WithGeneration(4, 4), withOlderGray(t, "20", firstRollout)),
			wantErr: `deployment default/web has no stable revision to go back to (gray-controller reports none for revision 2), so an abort would leave no pods`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			templateRevision := func() (int64, bool, error) { return tt.template, tt.template > 0, nil }
			got, stable, err := abortRequest(tt.d, templateRevision)
			if tt.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
					t.Fatalf("abortRequest() error %v, want one starting %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want || stable != 1 {
				t.Fatalf("abortRequest() = %+v, %d, %v; want %+v, 1", got, stable, err, tt.want)
			}
		})
	}
}

func abortRun(cs *fake.Clientset, args []string, flags func(o *AbortOptions)) (string, error) {
	streams, out, _ := testStreams()
	o := NewAbortOptions(streams)
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

func TestAbort(t *testing.T) {
	tests := []struct {
		name        string
		objects     func(t *testing.T) []runtime.Object
		flags       func(o *AbortOptions)
		wantPatches int
		wantResume  string
	}{
		{name: "held", objects: heldWeb, wantPatches: 1, wantResume: "2:abort"},
		{name: "degraded", objects: degradedWeb, wantPatches: 1, wantResume: "2:abort"},
		{name: "client-dry-run", objects: heldWeb, flags: func(o *AbortOptions) { o.DryRun = "client" }, wantPatches: 0},
		// The fake clientset ignores server dry run: the request shows the patch as sent.
		{name: "server-dry-run", objects: heldWeb, flags: func(o *AbortOptions) { o.DryRun = "server" }, wantPatches: 1, wantResume: "2:abort"},
		{name: "output-name", objects: heldWeb, flags: func(o *AbortOptions) { *o.PrintFlags.OutputFormat = "name" }, wantPatches: 1, wantResume: "2:abort"},
		{
			name: "already-requested",
			objects: func(t *testing.T) []runtime.Object {
				objs := heldWeb(t)
				objs[0].(*appsv1.Deployment).Annotations[grayapi.ResumeAnnotation] = "2:abort"
				return objs
			},
			wantPatches: 0, wantResume: "2:abort",
		},
		{
			// An abort replaces a resume not yet consumed: the last word is the person's.
			name: "replaces-a-pending-resume",
			objects: func(t *testing.T) []runtime.Object {
				objs := heldWeb(t)
				objs[0].(*appsv1.Deployment).Annotations[grayapi.ResumeAnnotation] = "2:next"
				return objs
			},
			wantPatches: 1, wantResume: "2:abort",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := fake.NewClientset(tt.objects(t)...)
			out, err := abortRun(cs, []string{"deploy/web"}, tt.flags)
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, "abort", tt.name, out)
			ps := patches(cs)
			if len(ps) != tt.wantPatches {
				t.Fatalf("sent %d patches, want %d", len(ps), tt.wantPatches)
			}
			for _, p := range ps {
				if rv := patchResourceVersion(t, p); rv != "100" || p.PatchOptions.FieldManager != "kubectl-gray" {
					t.Errorf("patch precondition %q, manager %q", rv, p.PatchOptions.FieldManager)
				}
				if dryRun := strings.Join(p.PatchOptions.DryRun, ","); (tt.name == "server-dry-run") != (dryRun == "All") {
					t.Errorf("patch dryRun %q", dryRun)
				}
				// The template is Git's: an abort never writes it.
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

func TestAbortRefuses(t *testing.T) {
	tests := []struct {
		name    string
		objects func(t *testing.T) []runtime.Object
		want    string
	}{
		{name: "complete", objects: completeWeb,
			want: `deployment default/web has no rollout in flight to abort (phase Complete): revision 2 is rolled out; 'kubectl gray undo web' rolls it back`},
		{name: "aborted", objects: abortedWeb,
			want: `deployment default/web is already Aborted (revision 2); 'kubectl gray retry web', or a new template, starts again; 'kubectl gray undo web' writes the stable template back`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := fake.NewClientset(tt.objects(t)...)
			_, err := abortRun(cs, []string{"web"}, nil)
			if err == nil || err.Error() != tt.want {
				t.Fatalf("err = %v\nwant %s", err, tt.want)
			}
			if len(patches(cs)) != 0 {
				t.Fatal("a patch was sent")
			}
		})
	}
}

func TestAbortArgs(t *testing.T) {
	_, err := abortRun(fake.NewClientset(), nil, nil)
	if err == nil || err.Error() != "give one or more Deployments, or -l SELECTOR, e.g. 'kubectl gray abort web'" {
		t.Fatalf("err = %v", err)
	}
	_, err = abortRun(fake.NewClientset(), []string{"web"}, func(o *AbortOptions) { o.DryRun = "maybe" })
	if err == nil || err.Error() != `invalid --dry-run "maybe": must be "none", "client" or "server"` {
		t.Fatalf("err = %v", err)
	}
}
