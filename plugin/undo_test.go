package plugin

import (
	"context"
	"encoding/json"
	"maps"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubegray/kubectl-gray/internal/testutil"
	"github.com/kubegray/kubectl-gray/pkg/deployutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// undoWeb is heldWeb with annotations that show which side each comes from.
func undoWeb(t *testing.T) []runtime.Object {
	objs := heldWeb(t)
	d := objs[0].(*appsv1.Deployment)
	d.Annotations["kubernetes.io/change-cause"] = "roll out 1.27"
	d.Annotations["team"] = "blue"
	stable := objs[2].(*appsv1.ReplicaSet)
	stable.Annotations["kubernetes.io/change-cause"] = "roll out 1.26"
	stable.Annotations["deployment.kubernetes.io/desired-replicas"] = "10"
	stable.Annotations[grayapi.PercentAnnotation] = "50"
	return objs
}

func undoRun(cs *fake.Clientset, args []string, flags func(o *UndoOptions)) (string, string, error) {
	streams, out, errOut := testStreams()
	o := NewUndoOptions(streams)
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
	return out.String(), errOut.String(), err
}

func TestUndoToStableWhileHeld(t *testing.T) {
	objs := undoWeb(t)
	held := objs[0].(*appsv1.Deployment)
	cs := fake.NewClientset(objs...)
	out, errOut, err := undoRun(cs, []string{"web"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if errOut != "" {
		t.Errorf("unexpected stderr %q", errOut)
	}
	checkGolden(t, "undo", "to-stable", out)

	ps := patches(cs)
	if len(ps) != 1 || ps[0].PatchType != types.JSONPatchType {
		t.Fatalf("want one JSON patch, got %d", len(ps))
	}
	var ops []jsonPatchOp
	if err := json.Unmarshal(ps[0].Patch, &ops); err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, op := range ops {
		paths = append(paths, op.Op+" "+op.Path)
	}
	if got := strings.Join(paths, ", "); got != "replace /metadata/resourceVersion, replace /spec/template, add /metadata/annotations" {
		t.Errorf("patch operations: %s", got)
	}

	d := getDeployment(t, cs, "web")
	if !d.Spec.Paused {
		t.Error("undo unpaused the Deployment; it must only change the template and annotations")
	}
	wantTemplate := podTemplate("nginx:1.26")
	if !deployutil.EqualIgnoreHash(&d.Spec.Template, &wantTemplate) || d.Spec.Template.Labels["pod-template-hash"] != "" {
		t.Errorf("template = %+v, want the stable template without pod-template-hash", d.Spec.Template)
	}
	wantAnnotations := map[string]string{
		// Kept from the Deployment: owned by the Deployment controller or the gray API.
		"deployment.kubernetes.io/revision": "2",
		grayapi.PercentAnnotation:           "10,30,60",
		grayapi.StatusAnnotation:            held.Annotations[grayapi.StatusAnnotation],
		// Taken from the ReplicaSet.
		"kubernetes.io/change-cause": "roll out 1.26",
	}
	if !maps.Equal(d.Annotations, wantAnnotations) {
		t.Errorf("annotations\n got %v\nwant %v", d.Annotations, wantAnnotations)
	}
}

func TestUndo(t *testing.T) {
	tests := []struct {
		name        string
		objects     func(t *testing.T) []runtime.Object
		flags       func(o *UndoOptions)
		wantPatches int
		wantImage   string
	}{
		{name: "to-revision", objects: undoWeb, flags: func(o *UndoOptions) { o.ToRevision = 1 }, wantPatches: 1, wantImage: "nginx:1.26"},
		{name: "already-matches", objects: undoWeb, flags: func(o *UndoOptions) { o.ToRevision = 2 }, wantPatches: 0, wantImage: "nginx:1.27"},
		{name: "client-dry-run-yaml", objects: undoWeb, flags: func(o *UndoOptions) { o.DryRun = "client"; *o.PrintFlags.OutputFormat = "yaml" }, wantPatches: 0, wantImage: "nginx:1.27"},
		{name: "server-dry-run", objects: undoWeb, flags: func(o *UndoOptions) { o.DryRun = "server" }, wantPatches: 1, wantImage: "nginx:1.26"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := fake.NewClientset(tt.objects(t)...)
			out, _, err := undoRun(cs, []string{"deployment/web"}, tt.flags)
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, "undo", tt.name, out)
			if got := len(patches(cs)); got != tt.wantPatches {
				t.Fatalf("sent %d patches, want %d", got, tt.wantPatches)
			}
			// The fake clientset ignores server dry run, so the image shows the patch landed as sent.
			if got := getDeployment(t, cs, "web").Spec.Template.Spec.Containers[0].Image; got != tt.wantImage {
				t.Errorf("image %q, want %q", got, tt.wantImage)
			}
		})
	}
}

func TestUndoWarnsAboutApply(t *testing.T) {
	objs := undoWeb(t)
	objs[0].(*appsv1.Deployment).Annotations[corev1.LastAppliedConfigAnnotation] = "{}"
	cs := fake.NewClientset(objs...)
	_, errOut, err := undoRun(cs, []string{"web"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "undo", "apply-warning", errOut)
	if got := getDeployment(t, cs, "web").Annotations[corev1.LastAppliedConfigAnnotation]; got != "{}" {
		t.Errorf("last-applied-configuration = %q, want it kept", got)
	}
}

func TestUndoRetriesOnConflict(t *testing.T) {
	cs := fake.NewClientset(undoWeb(t)...)
	enforceResourceVersion(t, cs, func() {
		obj, err := cs.Tracker().Get(appsv1.SchemeGroupVersion.WithResource("deployments"), ns, "web")
		if err != nil {
			t.Fatal(err)
		}
		d := obj.(*appsv1.Deployment).DeepCopy()
		replicas := int32(20)
		d.Spec.Replicas, d.ResourceVersion = &replicas, "101"
		if err := cs.Tracker().Update(appsv1.SchemeGroupVersion.WithResource("deployments"), d, ns); err != nil {
			t.Fatal(err)
		}
	})
	if _, _, err := undoRun(cs, []string{"web"}, nil); err != nil {
		t.Fatal(err)
	}
	ps := patches(cs)
	if len(ps) != 2 || patchResourceVersion(t, ps[0]) != "100" || patchResourceVersion(t, ps[1]) != "101" {
		t.Fatalf("want a conflicting patch at 100 and a retry at 101, got %d patches", len(ps))
	}
	d := getDeployment(t, cs, "web")
	if *d.Spec.Replicas != 20 || d.Spec.Template.Spec.Containers[0].Image != "nginx:1.26" {
		t.Errorf("replicas %d image %s: want the concurrent scale kept and the rollback applied", *d.Spec.Replicas, d.Spec.Template.Spec.Containers[0].Image)
	}
}

func TestUndoErrors(t *testing.T) {
	noStable := func(t *testing.T) []runtime.Object {
		objs := undoWeb(t)
		delete(objs[0].(*appsv1.Deployment).Annotations, grayapi.StatusAnnotation)
		return objs
	}
	firstRollout := func(t *testing.T) []runtime.Object {
		d := deployment("web", testutil.WithGeneration(4, 4), withGray(t, "20", &grayapi.Status{Revision: 1, Phase: grayapi.PhaseComplete, ObservedGeneration: 4}))
		return []runtime.Object{d, replicaSet(d, "1", "5f7d8c6b9", "nginx:1.26", 10, 10, time.Hour)}
	}
	tests := []struct {
		name    string
		objects func(t *testing.T) []runtime.Object
		args    []string
		flags   func(o *UndoOptions)
		wantErr string
	}{
		{name: "no such revision", objects: undoWeb, args: []string{"web"}, flags: func(o *UndoOptions) { o.ToRevision = 5 },
			wantErr: `deployment default/web has no revision 5 (it has 1, 2); see 'kubectl gray history web'`},
		{name: "no status", objects: noStable, args: []string{"web"},
			wantErr: `deployment default/web has no kubegray.io/status annotation to take the stable revision from; choose one with --to-revision N (see 'kubectl gray history web')`},
		{name: "no stable revision", objects: firstRollout, args: []string{"web"},
			wantErr: `deployment default/web has no stable revision yet; choose one with --to-revision N (see 'kubectl gray history web')`},
		{name: "not found", objects: undoWeb, args: []string{"nope"}, wantErr: `deployment default/nope not found`},
		{name: "negative revision", objects: undoWeb, args: []string{"web"}, flags: func(o *UndoOptions) { o.ToRevision = -1 },
			wantErr: `invalid --to-revision -1: revisions start at 1`},
		{name: "no name", objects: undoWeb, wantErr: `give one or more Deployments, or -l SELECTOR, e.g. 'kubectl gray undo web'`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := fake.NewClientset(tt.objects(t)...)
			_, _, err := undoRun(cs, tt.args, tt.flags)
			if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
				t.Fatalf("error %v, want one starting %q", err, tt.wantErr)
			}
			if len(patches(cs)) != 0 {
				t.Error("a patch was sent")
			}
		})
	}
}

// A held rollout whose stable ReplicaSet was deleted has nothing to go back to: undo says so
// and names the ways on, and writes nothing.
func TestUndoWhenTheStableReplicaSetIsGone(t *testing.T) {
	var objs []runtime.Object
	for _, o := range heldWeb(t) {
		if rs, ok := o.(*appsv1.ReplicaSet); ok && rs.Annotations[deployutil.RevisionAnnotation] == "1" {
			continue
		}
		objs = append(objs, o)
	}
	cs := fake.NewClientset(objs...)
	_, _, err := undoRun(cs, []string{"web"}, nil)
	want := "deployment default/web: the replica set of its stable revision 1 is gone (deleted), so there is nothing to roll back to; " +
		"finish the rollout with 'kubectl gray resume web --full', or roll back to another revision with --to-revision N (it has 2;"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v, want one containing %q", err, want)
	}
	if ps := patches(cs); len(ps) != 0 {
		t.Fatalf("undo without a stable replica set sent %d patches", len(ps))
	}
}

// The stable revision is found by the ReplicaSet that had it before a rollback renumbered it.
func TestUndoFindsARenumberedRevision(t *testing.T) {
	objs := heldWeb(t)
	for _, o := range objs {
		if rs, ok := o.(*appsv1.ReplicaSet); ok && rs.Annotations[deployutil.RevisionAnnotation] == "1" {
			rs.Annotations[deployutil.RevisionAnnotation] = "3"
			rs.Annotations[deployutil.RevisionHistoryAnnotation] = "1"
		}
	}
	cs := fake.NewClientset(objs...)
	if _, _, err := undoRun(cs, []string{"web"}, nil); err != nil {
		t.Fatal(err)
	}
	if len(patches(cs)) != 1 {
		t.Fatalf("want the rollback patch, got %d patches", len(patches(cs)))
	}
}
