package plugin

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubegray/kubectl-gray/internal/testutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

func heldStatus(step, percent int32) *grayapi.Status {
	return &grayapi.Status{Mode: grayapi.ModeInstead, Revision: 2, StableRevision: 1, Step: step, Percent: percent, Target: 1,
		Phase: grayapi.PhaseHeld, ObservedGeneration: 4, HeldAt: heldAt(time.Minute)}
}

// TestResumeRequest holds resume to the rules it applied before gray-controller listed what it
// serves, which stay for a status of an older gray-controller (refuseUnserved); with a list,
// TestServedResume decides.
func TestResumeRequest(t *testing.T) {
	progressing := heldStatus(0, 10)
	progressing.Phase = grayapi.PhaseProgressing
	progressing.HeldAt = nil
	absorbing := heldStatus(0, 20)
	absorbing.Phase = grayapi.PhaseProgressing
	aborted := heldStatus(0, 20)
	aborted.Phase, aborted.HeldAt = grayapi.PhaseAborted, nil
	invalid := heldStatus(0, 20)
	invalid.Phase, invalid.Message = grayapi.PhaseInvalid, `invalid kubegray.io/percent "abc"`
	noRevision := heldStatus(0, 10)
	noRevision.Revision = 0
	tests := []struct {
		name string
		d    *appsv1.Deployment
		// template is the revision of the ReplicaSet running d's template (0: none).
		template int64
		full     bool
		want     grayapi.Resume
		wantNext int32
		wantErr  string
	}{
		{name: "first of three", d: deployment("web", testutil.WithRevision(2), testutil.WithGeneration(4, 4), withOlderGray(t, "10,30,60", heldStatus(0, 10))),
			want: grayapi.Resume{Revision: 2}, wantNext: 30},
		{name: "last hold goes to the end", d: deployment("web", testutil.WithRevision(2), testutil.WithGeneration(4, 4), withOlderGray(t, "10,30,60", heldStatus(2, 60))),
			want: grayapi.Resume{Revision: 2}, wantNext: 100},
		{name: "full", d: deployment("web", testutil.WithRevision(2), testutil.WithGeneration(4, 4), withOlderGray(t, "10,30,60", heldStatus(0, 10))), full: true,
			want: grayapi.Resume{Revision: 2, Full: true}, wantNext: 100},
		{name: "revision from the Deployment when the status has none", d: deployment("web", testutil.WithRevision(7), testutil.WithGeneration(4, 4), withOlderGray(t, "20", noRevision)),
			want: grayapi.Resume{Revision: 7}, wantNext: 100},
		{name: "not gray", d: deployment("web"),
			wantErr: `deployment default/web is not a gray Deployment (no kubegray.io/percent annotation), so there is no hold to resume; make it one with 'kubectl gray set web PERCENT'`},
		{name: "no status yet", d: deployment("web", withOlderGray(t, "20", nil)),
			wantErr: `deployment default/web is not held: gray-controller has not reported on it yet; check that gray-controller is running, then 'kubectl gray status web'`},
		{name: "progressing before the hold", d: deployment("web", testutil.WithGeneration(4, 4), withOlderGray(t, "20", progressing)),
			wantErr: `deployment default/web is not held (phase Progressing); only a rollout that has reached its hold point can be resumed, wait for the hold with 'kubectl gray status web --until held'`},
		{name: "scaled since the hold", d: deployment("web", testutil.WithGeneration(5, 5), withOlderGray(t, "20", heldStatus(0, 20))), template: 2,
			want: grayapi.Resume{Revision: 2}, wantNext: 100},
		{name: "absorbing a scale", d: deployment("web", testutil.WithGeneration(5, 5), withOlderGray(t, "20,50", absorbing)), template: 2,
			want: grayapi.Resume{Revision: 2}, wantNext: 50},
		{name: "new template since the hold", d: deployment("web", testutil.WithGeneration(5, 5), withOlderGray(t, "20", heldStatus(0, 20))), template: 3,
			wantErr: `deployment default/web has a new template since gray-controller reported the hold of revision 2; its rollout holds at the first point first, wait for it with 'kubectl gray status web --until held'`},
		{name: "new template without its ReplicaSet yet", d: deployment("web", testutil.WithGeneration(5, 5), withOlderGray(t, "20", heldStatus(0, 20))),
			wantErr: `deployment default/web has a new template since gray-controller reported the hold of revision 2`},
		{name: "invalid", d: deployment("web", testutil.WithGeneration(4, 4), withOlderGray(t, "20", invalid)),
			wantErr: `deployment default/web is Invalid: invalid kubegray.io/percent "abc"; fix it with 'kubectl gray set web PERCENT'`},
		{name: "aborted", d: deployment("web", testutil.WithGeneration(4, 4), withOlderGray(t, "20", aborted)),
			wantErr: `deployment default/web is Aborted (revision 2), so there is no hold to resume; 'kubectl gray retry web', or a new template, starts again; 'kubectl gray undo web' writes the stable template back`},
		{name: "unreadable status", d: deployment("web", testutil.WithAnnotation(grayapi.PercentAnnotation, "20"), testutil.WithAnnotation(grayapi.StatusAnnotation, "held")),
			wantErr: `deployment default/web: cannot tell whether it is held: invalid kubegray.io/status "held"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			templateRevision := func() (int64, bool, error) { return tt.template, tt.template > 0, nil }
			got, next, err := resumeRequest(tt.d, templateRevision, tt.full)
			if tt.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
					t.Fatalf("resumeRequest() error %v, want one starting %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want || next != tt.wantNext {
				t.Fatalf("resumeRequest() = %+v, %d, %v; want %+v, %d", got, next, err, tt.want, tt.wantNext)
			}
		})
	}
}

func resumeRun(cs *fake.Clientset, args []string, flags func(o *ResumeOptions)) (string, error) {
	streams, out, _ := testStreams()
	o := NewResumeOptions(streams)
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

func TestResume(t *testing.T) {
	tests := []struct {
		name        string
		objects     func(t *testing.T) []runtime.Object
		flags       func(o *ResumeOptions)
		wantPatches int
		wantResume  string
	}{
		{name: "next", objects: heldWeb, wantPatches: 1, wantResume: "2:next"},
		{name: "full", objects: heldWeb, flags: func(o *ResumeOptions) { o.Full = true }, wantPatches: 1, wantResume: "2:full"},
		{name: "client-dry-run", objects: heldWeb, flags: func(o *ResumeOptions) { o.DryRun = "client" }, wantPatches: 0},
		{name: "output-name", objects: heldWeb, flags: func(o *ResumeOptions) { *o.PrintFlags.OutputFormat = "name" }, wantPatches: 1, wantResume: "2:next"},
		{
			name: "already-requested",
			objects: func(t *testing.T) []runtime.Object {
				objs := heldWeb(t)
				objs[0].(*appsv1.Deployment).Annotations[grayapi.ResumeAnnotation] = "2:next"
				return objs
			},
			wantPatches: 0, wantResume: "2:next",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := fake.NewClientset(tt.objects(t)...)
			out, err := resumeRun(cs, []string{"deploy/web"}, tt.flags)
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, "resume", tt.name, out)
			ps := patches(cs)
			if len(ps) != tt.wantPatches {
				t.Fatalf("sent %d patches, want %d", len(ps), tt.wantPatches)
			}
			for _, p := range ps {
				if rv := patchResourceVersion(t, p); rv != "100" || p.PatchOptions.FieldManager != "kubectl-gray" {
					t.Errorf("patch precondition %q, manager %q", rv, p.PatchOptions.FieldManager)
				}
			}
			if got := getDeployment(t, cs, "web").Annotations[grayapi.ResumeAnnotation]; got != tt.wantResume {
				t.Errorf("%s = %q, want %q", grayapi.ResumeAnnotation, got, tt.wantResume)
			}
		})
	}
}

func TestResumeRefusesWhenNotHeld(t *testing.T) {
	cs := fake.NewClientset(progressingWeb(t)...)
	_, err := resumeRun(cs, []string{"web"}, nil)
	want := `deployment default/web is not held (phase Progressing); only a rollout that has reached its hold point can be resumed, wait for the hold with 'kubectl gray status web --until held'`
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v, want %q", err, want)
	}
	if len(patches(cs)) != 0 {
		t.Fatal("a patch was sent")
	}
}

func TestResumeArgs(t *testing.T) {
	_, err := resumeRun(fake.NewClientset(), nil, nil)
	if err == nil || err.Error() != "give one or more Deployments, or -l SELECTOR, e.g. 'kubectl gray resume web'" {
		t.Fatalf("err = %v", err)
	}
}
