package plugin

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubegray/kubectl-gray/internal/testutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// TestDeploymentName resolves arguments as the verbs do, through resource.Builder and the
// discovery of testNames.
func TestDeploymentName(t *testing.T) {
	tests := []struct {
		name    string
		arg     string
		want    string
		wantErr string
	}{
		{name: "bare", arg: "web", want: "web"},
		{name: "short name", arg: "deploy/web", want: "web"},
		{name: "kind", arg: "deployment/web", want: "web"},
		{name: "resource", arg: "deployments/web", want: "web"},
		{name: "group", arg: "deployment.apps/web", want: "web"},
		{name: "group and version", arg: "deployments.v1.apps/web", want: "web"},
		{name: "upper case type", arg: "Deployment/web", want: "web"},
		{name: "other kind", arg: "statefulset/db", wantErr: `"statefulset/db" is not a Deployment (it names a StatefulSet.apps): kubectl gray works on Deployments only (NAME, deploy/NAME or deployment.apps/NAME)`},
		{name: "other kind by its short name", arg: "sts/db", wantErr: `"sts/db" is not a Deployment (it names a StatefulSet.apps)`},
		{name: "a group the server does not serve", arg: "deployment.extensions/web", wantErr: `"deployment.extensions/web" is not a Deployment: the server doesn't have a resource type "deployment" in group "extensions"`},
		{name: "no name", arg: "deploy/", wantErr: `"deploy/" is not a Deployment name; use NAME or deployment/NAME`},
		{name: "no type", arg: "/web", wantErr: `"/web" is not a Deployment name`},
		{name: "too many slashes", arg: "deploy/web/x", wantErr: `"deploy/web/x" is not a Deployment name`},
		{name: "empty", arg: "", wantErr: `"" is not a Deployment name`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := deploymentName(testNames(), ns, tt.arg)
			if tt.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
					t.Fatalf("deploymentName(%q) = %q, %v; want error starting %q", tt.arg, got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("deploymentName(%q) = %q, %v; want %q", tt.arg, got, err, tt.want)
			}
		})
	}
}

// setRun builds SetOptions as Complete would, with a fake clientset.
func setRun(cs *fake.Clientset, args []string, flags func(o *SetOptions)) (string, string, error) {
	streams, out, errOut := testStreams()
	o := NewSetOptions(streams)
	if flags != nil {
		flags(o)
	}
	o.Namespace, o.Client = ns, cs
	server := deploymentLister(cs)
	defer server.Close()
	getter := testGetter(server.URL)
	o.Getter = getter
	err := o.complete(args)
	if err == nil {
		err = o.Validate()
	}
	if err == nil {
		err = o.Run(context.Background())
	}
	return out.String(), errOut.String(), err
}

func getDeployment(t *testing.T, cs *fake.Clientset, name string) *appsv1.Deployment {
	t.Helper()
	d, err := cs.AppsV1().Deployments(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestSet(t *testing.T) {
	tests := []struct {
		name        string
		existing    *appsv1.Deployment
		args        []string
		flags       func(o *SetOptions)
		wantPatches int
		wantPercent string
		wantImage   string
		wantDryRun  []string
	}{
		{
			name:        "hold points",
			existing:    deployment("web"),
			args:        []string{"web", "10,30,60"},
			wantPatches: 1, wantPercent: "10,30,60", wantImage: "nginx:1.26",
		},
		{
			name:        "hold points with image",
			existing:    deployment("web"),
			args:        []string{"deploy/web", " 20% "},
			flags:       func(o *SetOptions) { o.Images = []string{"app=nginx:1.27"} },
			wantPatches: 1, wantPercent: "20", wantImage: "nginx:1.27",
		},
		{
			name:        "unchanged",
			existing:    deployment("web", testutil.WithAnnotation(grayapi.PercentAnnotation, "10,30,60")),
			args:        []string{"deployment.apps/web", "10%,30%,60%"},
			wantPatches: 0, wantPercent: "10,30,60", wantImage: "nginx:1.26",
		},
		{
			// The durations are kept, each in its shortest form, beside the normalized shares.
			name:        "hold points with durations",
			existing:    deployment("web"),
			args:        []string{"web", " 10%@90s , 50@30m0s,60"},
			wantPatches: 1, wantPercent: "10@1m30s,50@30m,60", wantImage: "nginx:1.26",
		},
		{
			name:        "client dry run",
			existing:    deployment("web"),
			args:        []string{"web", "25"},
			flags:       func(o *SetOptions) { o.DryRun = "client"; o.Images = []string{"app=nginx:1.27"} },
			wantPatches: 0, wantPercent: "", wantImage: "nginx:1.26",
		},
		{
			name:        "server dry run",
			existing:    deployment("web"),
			args:        []string{"web", "25"},
			flags:       func(o *SetOptions) { o.DryRun = "server" },
			wantPatches: 1, wantDryRun: []string{metav1.DryRunAll},
			// The fake clientset ignores dry run, so the stored object is not checked.
		},
		{
			name:        "output name",
			existing:    deployment("web"),
			args:        []string{"web", "50"},
			flags:       func(o *SetOptions) { *o.PrintFlags.OutputFormat = "name" },
			wantPatches: 1, wantPercent: "50", wantImage: "nginx:1.26",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := fake.NewClientset(tt.existing)
			out, errOut, err := setRun(cs, tt.args, tt.flags)
			if err != nil {
				t.Fatalf("set: %v", err)
			}
			if errOut != "" {
				t.Errorf("unexpected stderr: %q", errOut)
			}
			checkGolden(t, "set", strings.ReplaceAll(tt.name, " ", "-"), out)
			ps := patches(cs)
			if len(ps) != tt.wantPatches {
				t.Fatalf("sent %d patches, want %d", len(ps), tt.wantPatches)
			}
			for _, p := range ps {
				if p.PatchOptions.FieldManager != "kubectl-gray" {
					t.Errorf("field manager %q, want kubectl-gray", p.PatchOptions.FieldManager)
				}
				if got := patchResourceVersion(t, p); got != "100" {
					t.Errorf("patch resourceVersion precondition %q, want 100", got)
				}
				if strings.Join(p.PatchOptions.DryRun, ",") != strings.Join(tt.wantDryRun, ",") {
					t.Errorf("dry run %v, want %v", p.PatchOptions.DryRun, tt.wantDryRun)
				}
			}
			if tt.wantDryRun != nil {
				return
			}
			d := getDeployment(t, cs, "web")
			if got := d.Annotations[grayapi.PercentAnnotation]; got != tt.wantPercent {
				t.Errorf("%s = %q, want %q", grayapi.PercentAnnotation, got, tt.wantPercent)
			}
			if got := d.Spec.Template.Spec.Containers[0].Image; got != tt.wantImage {
				t.Errorf("image %q, want %q", got, tt.wantImage)
			}
		})
	}
}

func TestSetImageAndPercentInOnePatch(t *testing.T) {
	d := deployment("web")
	d.Spec.Template.Spec.InitContainers = nil
	d.Spec.Template.Spec.Containers = append(d.Spec.Template.Spec.Containers, d.Spec.Template.Spec.Containers[0])
	d.Spec.Template.Spec.Containers[1].Name, d.Spec.Template.Spec.Containers[1].Image = "sidecar", "envoy:1.30"
	cs := fake.NewClientset(d)
	out, _, err := setRun(cs, []string{"web", "10,50"}, func(o *SetOptions) {
		o.Images = []string{"sidecar=envoy:1.31", "app=nginx:1.27"}
	})
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "set", "two-images", out)
	ps := patches(cs)
	if len(ps) != 1 || ps[0].PatchType != types.StrategicMergePatchType {
		t.Fatalf("want one strategic merge patch, got %d: %+v", len(ps), ps)
	}
	var patch struct {
		Metadata struct {
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
		Spec struct {
			Template struct {
				Spec struct {
					Containers []struct{ Name, Image string } `json:"containers"`
				} `json:"spec"`
			} `json:"template"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(ps[0].Patch, &patch); err != nil {
		t.Fatal(err)
	}
	if patch.Metadata.Annotations[grayapi.PercentAnnotation] != "10,50" {
		t.Errorf("patch annotations %v lack the hold points", patch.Metadata.Annotations)
	}
	images := map[string]string{}
	for _, c := range patch.Spec.Template.Spec.Containers {
		images[c.Name] = c.Image
	}
	if images["app"] != "nginx:1.27" || images["sidecar"] != "envoy:1.31" {
		t.Errorf("patch images %v, want app=nginx:1.27 and sidecar=envoy:1.31", images)
	}
}

func TestSetSelector(t *testing.T) {
	front := map[string]string{"tier": "frontend"}
	cs := fake.NewClientset(
		deployment("web", withObjectLabels(front)),
		deployment("api", withObjectLabels(front)),
		deployment("db", withObjectLabels(map[string]string{"tier": "backend"})),
	)
	out, _, err := setRun(cs, []string{"30"}, func(o *SetOptions) { o.Selector = "tier=frontend" })
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "set", "selector", out)
	for name, want := range map[string]string{"web": "30", "api": "30", "db": ""} {
		if got := getDeployment(t, cs, name).Annotations[grayapi.PercentAnnotation]; got != want {
			t.Errorf("deployment %s: percent %q, want %q", name, got, want)
		}
	}
}

func TestSetRetriesOnConflict(t *testing.T) {
	cs := fake.NewClientset(deployment("web"))
	// Another writer changes the Deployment between our read and our patch.
	enforceResourceVersion(t, cs, func() {
		obj, err := cs.Tracker().Get(appsv1.SchemeGroupVersion.WithResource("deployments"), ns, "web")
		if err != nil {
			t.Fatal(err)
		}
		d := obj.(*appsv1.Deployment).DeepCopy()
		d.Annotations["team"] = "blue"
		d.ResourceVersion = "101"
		if err := cs.Tracker().Update(appsv1.SchemeGroupVersion.WithResource("deployments"), d, ns); err != nil {
			t.Fatal(err)
		}
	})
	out, _, err := setRun(cs, []string{"web", "20"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if out != "deployment.apps/web gray set to 20\n" {
		t.Errorf("output %q", out)
	}
	ps := patches(cs)
	if len(ps) != 2 {
		t.Fatalf("sent %d patches, want 2 (one conflict, one retry)", len(ps))
	}
	if a, b := patchResourceVersion(t, ps[0]), patchResourceVersion(t, ps[1]); a != "100" || b != "101" {
		t.Errorf("preconditions %q then %q, want 100 then 101", a, b)
	}
	d := getDeployment(t, cs, "web")
	if d.Annotations["team"] != "blue" || d.Annotations[grayapi.PercentAnnotation] != "20" {
		t.Errorf("annotations %v: want the concurrent change kept and ours applied", d.Annotations)
	}
}

func TestSetErrors(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		flags   func(o *SetOptions)
		reactor k8stesting.ReactionFunc
		wantErr string
	}{
		{
			name:    "invalid percent",
			args:    []string{"web", "30,10"},
			wantErr: `invalid kubegray.io/percent "30,10": hold points must be strictly increasing integers 0-99, each with an optional hold duration of 1s to 744h, e.g. "10,30,60" or "10@5m,50@30m"; 10 does not come after 30`,
		},
		{
			name:    "hold point duration without a unit",
			args:    []string{"web", "10@5m,50@30"},
			wantErr: `invalid kubegray.io/percent "10@5m,50@30": hold points must be strictly increasing integers 0-99, each with an optional hold duration of 1s to 744h, e.g. "10,30,60" or "10@5m,50@30m"; hold point 50: "30": missing unit in duration "30"`,
		},
		{
			name:    "hold point duration out of bounds",
			args:    []string{"web", "10@800h"},
			wantErr: `invalid kubegray.io/percent "10@800h": hold points must be strictly increasing integers 0-99, each with an optional hold duration of 1s to 744h, e.g. "10,30,60" or "10@5m,50@30m"; hold point 10: 800h0m0s is longer than 744h0m0s`,
		},
		{
			name:    "percent out of range",
			args:    []string{"web", "150"},
			wantErr: `invalid kubegray.io/percent "150": hold points must be strictly increasing integers 0-99, each with an optional hold duration of 1s to 744h, e.g. "10,30,60" or "10@5m,50@30m"; "150" is out of range`,
		},
		{name: "missing percent", args: []string{"web"}, wantErr: `give a Deployment and hold points, e.g. 'kubectl gray set web 10,30,60'`},
		{name: "selector and name", args: []string{"web", "20"}, flags: func(o *SetOptions) { o.Selector = "app=web" }, wantErr: `with -l, give only the hold points, e.g. 'kubectl gray set -l app=web 10,30,60'`},
		{name: "not a deployment", args: []string{"sts/web", "20"}, wantErr: `"sts/web" is not a Deployment`},
		{name: "bad image", args: []string{"web", "20"}, flags: func(o *SetOptions) { o.Images = []string{"nginx:1.27"} }, wantErr: `invalid --image "nginx:1.27": use CONTAINER=IMAGE, e.g. --image app=nginx:1.27`},
		{name: "image twice", args: []string{"web", "20"}, flags: func(o *SetOptions) { o.Images = []string{"app=a", "app=b"} }, wantErr: `--image names container "app" twice`},
		{name: "bad dry run", args: []string{"web", "20"}, flags: func(o *SetOptions) { o.DryRun = "yes" }, wantErr: `invalid --dry-run "yes": must be "none", "client" or "server"`},
		{name: "bad output", args: []string{"web", "20"}, flags: func(o *SetOptions) { *o.PrintFlags.OutputFormat = "wide" }, wantErr: `invalid -o "wide": use one of json, kyaml, name, yaml`},
		{name: "unknown container", args: []string{"web", "20"}, flags: func(o *SetOptions) { o.Images = []string{"sidecar=envoy:1"} }, wantErr: `deployment default/web has no container "sidecar"; its containers are: app`},
		{name: "not found", args: []string{"nope", "20"}, wantErr: `deployment default/nope not found: check the name and the namespace (-n), or list them with 'kubectl get deployments -n default'`},
		{name: "no match for selector", args: []string{"20"}, flags: func(o *SetOptions) { o.Selector = "app=none" }, wantErr: `no Deployments in namespace default match selector "app=none"`},
		{
			name: "forbidden",
			args: []string{"web", "20"},
			reactor: func(k8stesting.Action) (bool, runtime.Object, error) {
				return true, nil, apierrors.NewForbidden(appsv1.Resource("deployments"), "web", errString(`User "dev" cannot patch resource "deployments"`))
			},
			wantErr: `deployment default/web: you may not patch deployments.apps in namespace default; ask for RBAC permission (check with 'kubectl auth can-i patch deployments.apps -n default'): deployments.apps "web" is forbidden`,
		},
		{
			name: "conflicts until the retries run out",
			args: []string{"web", "20"},
			reactor: func(k8stesting.Action) (bool, runtime.Object, error) {
				return true, nil, apierrors.NewConflict(appsv1.Resource("deployments"), "web", errConcurrentWrite)
			},
			wantErr: `deployment default/web kept changing while kubectl gray wrote it; run the command again: Operation cannot be fulfilled on deployments.apps "web"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := fake.NewClientset(deployment("web"))
			if tt.reactor != nil {
				cs.PrependReactor("patch", "deployments", tt.reactor)
			}
			out, _, err := setRun(cs, tt.args, tt.flags)
			if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
				t.Fatalf("error %v, want one starting %q", err, tt.wantErr)
			}
			if out != "" {
				t.Errorf("unexpected output %q", out)
			}
			if tt.reactor == nil && len(patches(cs)) != 0 {
				t.Errorf("a patch was sent despite the error")
			}
		})
	}
}

func TestSetImageTakesOver(t *testing.T) {
	rolling := func(d *appsv1.Deployment) {
		d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
			RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: ptrIntOrString(intstr.FromInt32(1)), MaxUnavailable: ptrIntOrString(intstr.FromString("10%"))}}
	}
	status := func(mode grayapi.Mode) func(d *appsv1.Deployment) {
		return func(d *appsv1.Deployment) {
			d.Annotations[grayapi.StatusAnnotation] = `{"mode":"` + string(mode) + `","revision":1,"stableRevision":1,"step":1,"percent":100,"target":10,"phase":"Complete","observedGeneration":3}`
		}
	}
	// owns records in managedFields, as the API server does, that manager
	// owns fields (a fieldsV1 set) through subresource ("" for the main
	// resource).
	owns := func(manager, subresource, fields string) func(d *appsv1.Deployment) {
		return func(d *appsv1.Deployment) {
			t := ago(time.Minute)
			d.ManagedFields = append(d.ManagedFields, metav1.ManagedFieldsEntry{
				Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, Subresource: subresource, Time: &t,
				FieldsV1: metav1.NewFieldsV1(fields),
			})
		}
	}
	// The fields each writer owns: a controller syncing the Deployment, and
	// gray-controller's patch of its own status parts in alongside mode.
	const syncedStatus = `{"f:status":{"f:conditions":{},"f:observedGeneration":{},"f:replicas":{}}}`
	const grayStatusParts = `{"f:metadata":{"f:annotations":{"f:kubegray.io/status":{}}},"f:status":{"f:conditions":{"k:{\"type\":\"GrayHeld\"}":{}}}}`
	tests := []struct {
		name     string
		setup    []func(d *appsv1.Deployment)
		image    string
		takeover string
		// wantSaved is the kubegray.io/strategy the patch must write; "" means no takeover.
		wantSaved string
		wantOut   string
	}{
		{
			name: "auto, never run by gray-controller", setup: []func(*appsv1.Deployment){rolling}, image: "app=nginx:1.27",
			wantSaved: "RollingUpdate;maxSurge=1;maxUnavailable=10%",
			wantOut:   "deployment.apps/web gray set to 20 (app: nginx:1.26 -> nginx:1.27), taken over by kubectl gray (strategy RollingUpdate;maxSurge=1;maxUnavailable=10% saved)\n",
		},
		{
			name: "auto, alongside status", setup: []func(*appsv1.Deployment){rolling, status(grayapi.ModeAlongside)}, image: "app=nginx:1.27",
			wantSaved: "RollingUpdate;maxSurge=1;maxUnavailable=10%",
		},
		{
			name: "auto, instead status", setup: []func(*appsv1.Deployment){rolling, status(grayapi.ModeInstead)}, image: "app=nginx:1.27",
			wantOut: "deployment.apps/web gray set to 20 (app: nginx:1.26 -> nginx:1.27)\n",
		},
		{
			// Instead mode: gray-controller syncs every Deployment, gray or not.
			name:  "auto, no gray status, gray-controller syncs it",
			setup: []func(*appsv1.Deployment){rolling, owns("kubectl-create", "", `{"f:spec":{"f:replicas":{}}}`), owns("gray-controller", "status", syncedStatus)},
			image: "app=nginx:1.27", wantOut: "deployment.apps/web gray set to 20 (app: nginx:1.26 -> nginx:1.27)\n",
		},
		{
			// Alongside mode: the built-in controller syncs a Deployment that is not gray.
			name:      "auto, no gray status, kube-controller-manager syncs it",
			setup:     []func(*appsv1.Deployment){rolling, owns("kube-controller-manager", "status", syncedStatus)},
			image:     "app=nginx:1.27",
			wantSaved: "RollingUpdate;maxSurge=1;maxUnavailable=10%",
		},
		{
			// Alongside mode, gray before: the status parts gray-controller
			// patched (even the latest write) do not make it the syncing controller.
			name: "auto, no gray status, gray-controller patched only its own status parts",
			setup: []func(*appsv1.Deployment){rolling, owns("gray-controller", "status", grayStatusParts),
				owns("gray-controller", "", `{"f:spec":{"f:paused":{}}}`), owns("kube-controller-manager", "status", syncedStatus)},
			image:     "app=nginx:1.27",
			wantSaved: "RollingUpdate;maxSurge=1;maxUnavailable=10%",
		},
		{
			// The gray status outranks managedFields.
			name:      "auto, alongside status, gray-controller syncs it",
			setup:     []func(*appsv1.Deployment){rolling, status(grayapi.ModeAlongside), owns("gray-controller", "status", syncedStatus)},
			image:     "app=nginx:1.27",
			wantSaved: "RollingUpdate;maxSurge=1;maxUnavailable=10%",
		},
		{
			name: "always, instead status", setup: []func(*appsv1.Deployment){rolling, status(grayapi.ModeInstead)}, image: "app=nginx:1.27", takeover: "always",
			wantSaved: "RollingUpdate;maxSurge=1;maxUnavailable=10%",
		},
		{name: "never", setup: []func(*appsv1.Deployment){rolling}, image: "app=nginx:1.27", takeover: "never"},
		{name: "same image: no new revision", setup: []func(*appsv1.Deployment){rolling}, image: "app=nginx:1.26"},
		{
			name: "Recreate has no gray rollout", image: "app=nginx:1.27",
			setup: []func(*appsv1.Deployment){func(d *appsv1.Deployment) {
				d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
			}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := deployment("web")
			for _, f := range tt.setup {
				f(d)
			}
			cs := fake.NewClientset(d)
			out, _, err := setRun(cs, []string{"web", "20"}, func(o *SetOptions) {
				o.Images = []string{tt.image}
				if tt.takeover != "" {
					o.Takeover = tt.takeover
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			if tt.wantOut != "" && out != tt.wantOut {
				t.Errorf("output %q, want %q", out, tt.wantOut)
			}
			ps := patches(cs)
			if len(ps) != 1 {
				t.Fatalf("want one patch, got %d", len(ps))
			}
			after := getDeployment(t, cs, "web")
			saved, taken := after.Annotations[grayapi.StrategyAnnotation]
			if tt.wantSaved == "" {
				if taken || after.Spec.Paused {
					t.Fatalf("taken over (saved %q, paused %t), want not", saved, after.Spec.Paused)
				}
				return
			}
			if saved != tt.wantSaved || !after.Spec.Paused || after.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType || after.Spec.Strategy.RollingUpdate != nil {
				t.Fatalf("after set: saved %q paused %t strategy %+v, want saved %q, paused, Recreate without rollingUpdate",
					saved, after.Spec.Paused, after.Spec.Strategy, tt.wantSaved)
			}
			if !strings.Contains(string(ps[0].Patch), `"paused":true`) || !strings.Contains(string(ps[0].Patch), `"nginx:1.27"`) {
				t.Fatalf("the takeover and the image are not in the same patch: %s", ps[0].Patch)
			}
		})
	}
}

func ptrIntOrString(v intstr.IntOrString) *intstr.IntOrString { return &v }

func TestSetRejectsUnknownTakeover(t *testing.T) {
	cs := fake.NewClientset(deployment("web"))
	_, _, err := setRun(cs, []string{"web", "20"}, func(o *SetOptions) { o.Takeover = "maybe" })
	want := `invalid --patch-takeover "maybe": must be "auto", "always" or "never"`
	if err == nil || err.Error() != want {
		t.Fatalf("error = %v, want %q", err, want)
	}
}

// TestSetSelectorFailures pins set -l when some Deployments refuse: the others are set, and
// the failures print one a line, each naming its Deployment, as the other verbs print them.
func TestSetSelectorFailures(t *testing.T) {
	front := map[string]string{"tier": "frontend"}
	renamed := func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Name = "main" }
	cs := fake.NewClientset(
		deployment("api", withObjectLabels(front), renamed),
		deployment("shop", withObjectLabels(front), renamed),
		deployment("web", withObjectLabels(front)),
	)
	out, _, err := setRun(cs, []string{"30"}, func(o *SetOptions) { o.Selector = "tier=frontend"; o.Images = []string{"app=nginx:1.27"} })
	want := "deployment default/api has no container \"app\"; its containers are: main\n" +
		"error: deployment default/shop has no container \"app\"; its containers are: main"
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v, want %q", err, want)
	}
	if !strings.HasPrefix(out, "deployment.apps/web gray set to 30 (app: nginx:1.26 -> nginx:1.27)") || strings.Count(out, "\n") != 1 {
		t.Errorf("stdout %q, want web's line only", out)
	}
}
