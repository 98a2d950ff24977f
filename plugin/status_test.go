package plugin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// heldWeb is "web" held at the first of three hold points: 1 of 10 replicas
// on revision 2 (nginx:1.27), 9 on the stable revision 1 (nginx:1.26).
func heldWeb(t *testing.T) []runtime.Object {
	d := deployment("web",
		withImage("nginx:1.27"), withRevision("2"), withGeneration(4, 4), withPaused(),
		withCounts(10, 1, 10, 10),
		withGray(t, "10,30,60", &grayapi.Status{
			Mode: grayapi.ModeInstead, Revision: 2, StableRevision: 1, Step: 0, Percent: 10, Target: 1,
			Phase: grayapi.PhaseHeld, Message: "held at 10%: 1 of 10 replicas on revision 2", ObservedGeneration: 4, HeldAt: heldAt(5 * time.Minute),
		}),
		withCondition(appsv1.DeploymentAvailable, corev1.ConditionTrue, "MinimumReplicasAvailable", "Deployment has minimum availability.", 48*time.Hour),
		withCondition(appsv1.DeploymentProgressing, corev1.ConditionUnknown, "DeploymentPaused", "Deployment is paused", 5*time.Minute),
		withCondition(grayapi.ConditionGrayHeld, corev1.ConditionTrue, grayapi.ReasonGrayHeld, "held at 10%: 1 of 10 replicas on revision 2", 5*time.Minute),
	)
	newRS := replicaSet(d, "2", "7c9d5f8b6", "nginx:1.27", 1, 1, 8*time.Minute)
	stableRS := replicaSet(d, "1", "5f7d8c6b9", "nginx:1.26", 9, 9, 48*time.Hour)
	objs := []runtime.Object{d, newRS, stableRS, pod(newRS, "abcde", true, 0, 7*time.Minute)}
	for i := range 9 {
		objs = append(objs, pod(stableRS, fmt.Sprintf("s%d", i), true, 0, 47*time.Hour))
	}
	other := deployment("api")
	return append(objs,
		grayEvent(d, "e1", corev1.EventTypeNormal, "ScalingReplicaSet", "Scaled up replica set web-7c9d5f8b6 from 0 to 1", 1, 8*time.Minute),
		grayEvent(d, "e2", corev1.EventTypeNormal, grayapi.ReasonGrayHeld, "held at 10%: 1 of 10 replicas on revision 2", 1, 5*time.Minute),
		grayEvent(other, "e3", corev1.EventTypeNormal, grayapi.ReasonGrayHeld, "an event of another Deployment", 1, time.Minute),
	)
}

// heldAlongsideWeb is heldWeb as an alongside gray-controller holds it: taken
// over (paused on Recreate, strategy saved), the hold recorded in the status.
func heldAlongsideWeb(t *testing.T) []runtime.Object {
	objs := heldWeb(t)
	d := objs[0].(*appsv1.Deployment)
	st, err := grayapi.ParseStatus(d.Annotations[grayapi.StatusAnnotation])
	if err != nil {
		t.Fatal(err)
	}
	st.Mode, st.TakenOver = grayapi.ModeAlongside, true
	withGray(t, "10,30,60", &st)(d)
	d.Annotations[grayapi.StrategyAnnotation] = "RollingUpdate;maxSurge=25%;maxUnavailable=25%"
	d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	return objs
}

// progressingWeb is "web" rolling to its second hold point, 30%: 2 of 3
// new pods ready, one restarting.
func progressingWeb(t *testing.T) []runtime.Object {
	d := deployment("web",
		withImage("nginx:1.27"), withRevision("2"), withGeneration(4, 4),
		withCounts(11, 3, 10, 10),
		withGray(t, "10,30,60", &grayapi.Status{
			Mode: grayapi.ModeInstead, Revision: 2, StableRevision: 1, Step: 1, Percent: 30, Target: 3,
			Phase: grayapi.PhaseProgressing, Message: "rolling to 30%: 2 of 3 new replicas available", ObservedGeneration: 4,
		}),
		withCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, "ReplicaSetUpdated", `ReplicaSet "web-7c9d5f8b6" is progressing.`, time.Minute),
	)
	newRS := replicaSet(d, "2", "7c9d5f8b6", "nginx:1.27", 3, 2, 20*time.Minute)
	stableRS := replicaSet(d, "1", "5f7d8c6b9", "nginx:1.26", 8, 8, 48*time.Hour)
	objs := []runtime.Object{d, newRS, stableRS,
		pod(newRS, "aaaaa", true, 0, 19*time.Minute),
		pod(newRS, "bbbbb", true, 0, 2*time.Minute),
		pod(newRS, "ccccc", false, 2, time.Minute),
	}
	for i := range 8 {
		objs = append(objs, pod(stableRS, fmt.Sprintf("s%d", i), true, 1, 47*time.Hour))
	}
	return append(objs, grayEvent(d, "e1", corev1.EventTypeNormal, grayapi.ReasonGrayResumed, "resumed to 30% by 2:next", 1, 2*time.Minute))
}

// completeWeb is "web" after a gray rollout with one hold point, 20%, ran to
// the end: all 10 replicas on revision 2 (nginx:1.27), which is now also the
// stable revision; revision 1 is scaled to 0.
func completeWeb(t *testing.T) []runtime.Object {
	d := deployment("web",
		withImage("nginx:1.27"), withRevision("2"), withGeneration(5, 5),
		withCounts(10, 10, 10, 10),
		withGray(t, "20", &grayapi.Status{
			Mode: grayapi.ModeInstead, Revision: 2, StableRevision: 2, Step: 1, Percent: 100, Target: 10,
			Phase: grayapi.PhaseComplete, Message: "all 10 replicas run revision 2", ObservedGeneration: 5,
		}),
		withCondition(appsv1.DeploymentAvailable, corev1.ConditionTrue, "MinimumReplicasAvailable", "Deployment has minimum availability.", 48*time.Hour),
		withCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, "NewReplicaSetAvailable", `ReplicaSet "web-7c9d5f8b6" has successfully progressed.`, 3*time.Minute),
	)
	newRS := replicaSet(d, "2", "7c9d5f8b6", "nginx:1.27", 10, 10, 30*time.Minute)
	oldRS := replicaSet(d, "1", "5f7d8c6b9", "nginx:1.26", 0, 0, 48*time.Hour)
	objs := []runtime.Object{d, newRS, oldRS}
	for i := range 10 {
		objs = append(objs, pod(newRS, fmt.Sprintf("n%d", i), true, 0, 20*time.Minute))
	}
	return append(objs, grayEvent(d, "e1", corev1.EventTypeNormal, grayapi.ReasonGrayComplete, "Revision 2 complete: all 10 replicas updated", 1, 3*time.Minute))
}

// bigWeb has more stable pods than the tree lists.
func bigWeb(t *testing.T) []runtime.Object {
	d := deployment("web", withReplicas(14), withImage("nginx:1.27"), withRevision("2"), withGeneration(4, 4),
		withCounts(14, 1, 14, 14),
		withGray(t, "5", &grayapi.Status{Revision: 2, StableRevision: 1, Percent: 5, Target: 1, Phase: grayapi.PhaseHeld, ObservedGeneration: 4, HeldAt: heldAt(time.Hour)}))
	newRS := replicaSet(d, "2", "7c9d5f8b6", "nginx:1.27", 1, 1, 2*time.Hour)
	stableRS := replicaSet(d, "1", "5f7d8c6b9", "nginx:1.26", 13, 13, 48*time.Hour)
	objs := []runtime.Object{d, newRS, stableRS, pod(newRS, "abcde", true, 0, time.Hour)}
	for i := range 13 {
		objs = append(objs, pod(stableRS, fmt.Sprintf("s%02d", i), true, 0, 47*time.Hour))
	}
	return objs
}

func statusRun(ctx context.Context, cs *fake.Clientset, args []string, flags func(o *StatusOptions)) (string, string, error) {
	streams, out, errOut := testStreams()
	o := NewStatusOptions(streams)
	o.Now, o.Namespace, o.Client = clock, ns, cs
	if flags != nil {
		flags(o)
	}
	err := o.complete(args)
	if err == nil {
		err = o.Validate()
	}
	if err == nil {
		err = o.Run(ctx)
	}
	return out.String(), errOut.String(), err
}

func TestStatusOutput(t *testing.T) {
	tests := []struct {
		name    string
		objects func(t *testing.T) []runtime.Object
		args    []string
		flags   func(o *StatusOptions)
	}{
		{name: "held", objects: heldWeb, args: []string{"web"}},
		{name: "progressing", objects: progressingWeb, args: []string{"deploy/web"}},
		{name: "many-pods", objects: bigWeb, args: []string{"web"}},
		{name: "held-json", objects: heldWeb, args: []string{"web"}, flags: func(o *StatusOptions) { o.Output = "json" }},
		{name: "held-yaml", objects: heldWeb, args: []string{"web"}, flags: func(o *StatusOptions) { o.Output = "yaml" }},
		{name: "held-alongside", objects: heldAlongsideWeb, args: []string{"web"}},
		{name: "complete", objects: completeWeb, args: []string{"web"}},
		{
			name: "not-gray",
			objects: func(t *testing.T) []runtime.Object {
				d := deployment("web")
				return []runtime.Object{d, replicaSet(d, "1", "5f7d8c6b9", "nginx:1.26", 10, 10, time.Hour)}
			},
			args: []string{"web"},
		},
		{
			name: "pending",
			objects: func(t *testing.T) []runtime.Object {
				return []runtime.Object{deployment("web", withGray(t, "20", nil))}
			},
			args: []string{"web"},
		},
		{
			name: "invalid",
			objects: func(t *testing.T) []runtime.Object {
				d := deployment("web", withImage("nginx:1.27"), withRevision("2"), withGeneration(4, 4), withGray(t, "30,10", &grayapi.Status{
					Revision: 2, StableRevision: 1, Phase: grayapi.PhaseInvalid, ObservedGeneration: 4,
					Message: `invalid kubegray.io/percent "30,10": hold points must be strictly increasing integers 0-99, e.g. "10,30,60"; 10 does not come after 30`,
				}))
				return []runtime.Object{d, replicaSet(d, "1", "5f7d8c6b9", "nginx:1.26", 10, 10, time.Hour)}
			},
			args: []string{"web"},
		},
		{
			name: "stale",
			objects: func(t *testing.T) []runtime.Object {
				objs := heldWeb(t)
				d := objs[0].(*appsv1.Deployment)
				d.Annotations[grayapi.ResumeAnnotation] = "2:next"
				d.Generation, d.Status.ObservedGeneration = 5, 5
				return objs
			},
			args: []string{"web"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := fake.NewClientset(tt.objects(t)...)
			out, errOut, err := statusRun(context.Background(), cs, tt.args, tt.flags)
			if err != nil {
				t.Fatal(err)
			}
			if errOut != "" {
				t.Errorf("unexpected stderr %q", errOut)
			}
			if strings.Contains(out, "\x1b[") {
				t.Errorf("colour codes in output with colour off")
			}
			checkGolden(t, "status", tt.name, out)
		})
	}
}

func TestStatusColour(t *testing.T) {
	cs := fake.NewClientset(heldWeb(t)...)
	out, _, err := statusRun(context.Background(), cs, []string{"web"}, func(o *StatusOptions) { o.Color = true })
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"\x1b[33mHeld\x1b[0m", "\x1b[32mready\x1b[0m", "\x1b[1mweb\x1b[0m"} {
		if !strings.Contains(out, want) {
			t.Errorf("coloured output lacks %q", want)
		}
	}
}

func TestWantColor(t *testing.T) {
	tests := []struct {
		name     string
		terminal bool
		noColor  string
		want     bool
	}{
		{name: "terminal", terminal: true, want: true},
		{name: "terminal with NO_COLOR", terminal: true, noColor: "1", want: false},
		{name: "pipe", terminal: false, want: false},
		{name: "pipe with NO_COLOR", terminal: false, noColor: "1", want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := wantColor(tt.terminal, tt.noColor); got != tt.want {
				t.Fatalf("wantColor(%v, %q) = %v, want %v", tt.terminal, tt.noColor, got, tt.want)
			}
		})
	}
}

func TestStatusTable(t *testing.T) {
	objs := heldWeb(t)
	prog := progressingWeb(t)[0].(*appsv1.Deployment)
	prog.Name, prog.UID = "api", "uid-api2"
	inOther := deployment("shop", withGray(t, "50", nil))
	inOther.Namespace = "team-b"
	objs = append(objs, prog, inOther, deployment("db"))
	cs := fake.NewClientset(objs...)

	for _, tt := range []struct {
		name  string
		flags func(o *StatusOptions)
	}{
		{name: "table"},
		{name: "table-all-namespaces", flags: func(o *StatusOptions) { o.AllNamespaces = true }},
		{name: "table-json", flags: func(o *StatusOptions) { o.Output = "json" }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, _, err := statusRun(context.Background(), cs, nil, tt.flags)
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, "status", tt.name, out)
		})
	}
	t.Run("empty", func(t *testing.T) {
		out, errOut, err := statusRun(context.Background(), fake.NewClientset(deployment("db")), nil, nil)
		if err != nil || out != "" || errOut != "No gray Deployments found in default namespace.\n" {
			t.Fatalf("got %q, %q, %v", out, errOut, err)
		}
	})
}

// TestStatusJSONSchema checks -o json against the documented StatusView:
// every key printed is a field of the type (decoding rejects unknown keys),
// every field without omitempty is printed, and every field of the view
// types has a doc comment.
func TestStatusJSONSchema(t *testing.T) {
	// degradedWeb fills the failure view, timedHoldWeb the policy.
	for name, objects := range map[string]func(*testing.T) []runtime.Object{
		"held": heldWeb, "degraded": degradedWeb, "timed hold": timedHoldWeb("10m", time.Minute),
	} {
		t.Run(name, func(t *testing.T) {
			cs := fake.NewClientset(objects(t)...)
			out, _, err := statusRun(context.Background(), cs, []string{"web"}, func(o *StatusOptions) { o.Output = "json" })
			if err != nil {
				t.Fatal(err)
			}
			dec := json.NewDecoder(strings.NewReader(out))
			dec.DisallowUnknownFields()
			var v StatusView
			if err := dec.Decode(&v); err != nil {
				t.Fatalf("output does not match StatusView: %v", err)
			}
			if v.Kind != "GrayStatus" || v.APIVersion != "kubectl-gray/v1" {
				t.Errorf("kind/apiVersion = %q/%q", v.Kind, v.APIVersion)
			}
			var raw map[string]any
			if err := json.Unmarshal([]byte(out), &raw); err != nil {
				t.Fatal(err)
			}
			checkRequiredKeys(t, "", reflect.TypeOf(StatusView{}), raw)
		})
	}

	documented := map[string]bool{"StatusView": true, "ConditionView": true, "RevisionView": true, "PodView": true, "EventView": true, "StatusViewList": true, "ContainerImage": true,
		"PolicyView": true, "FailureView": true, "NotReadyView": true, "PodReasonView": true}
	for _, file := range []string{"statusview.go", "deployments.go", "policy.go", "failure.go"} {
		f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSpec)
			if !ok || !documented[ts.Name.Name] {
				return true
			}
			delete(documented, ts.Name.Name)
			for _, field := range ts.Type.(*ast.StructType).Fields.List {
				if field.Doc == nil || strings.TrimSpace(field.Doc.Text()) == "" {
					t.Errorf("%s.%s has no doc comment", ts.Name.Name, field.Names[0].Name)
				}
			}
			return false
		})
	}
	for name := range documented {
		t.Errorf("type %s not found", name)
	}
}

// checkRequiredKeys asserts that every field of typ without omitempty is a
// key of obj, recursing into nested view objects and the first list item.
func checkRequiredKeys(t *testing.T, path string, typ reflect.Type, obj map[string]any) {
	t.Helper()
	for i := range typ.NumField() {
		f := typ.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		val, present := obj[name]
		if !present {
			if !strings.Contains(opts, "omitempty") {
				t.Errorf("key %s%s is missing from the output", path, name)
			}
			continue
		}
		ft := f.Type
		if ft.Kind() == reflect.Pointer && ft.Elem().Kind() == reflect.Struct {
			if m, ok := val.(map[string]any); ok {
				checkRequiredKeys(t, path+name+".", ft.Elem(), m)
			}
		}
		if ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct {
			if items, _ := val.([]any); len(items) > 0 {
				if m, ok := items[0].(map[string]any); ok {
					checkRequiredKeys(t, path+name+"[0].", ft.Elem(), m)
				}
			}
		}
	}
}

func TestUntilReached(t *testing.T) {
	gray := func(phase grayapi.Phase, stale bool) StatusView {
		v := StatusView{Namespace: ns, Name: "web", Gray: true, Phase: phase, Revision: 2, Message: "the message", Stale: stale}
		return v
	}
	plain := func(replicas, current, updated, available int32, stale bool) StatusView {
		return StatusView{Namespace: ns, Name: "web", Replicas: replicas, CurrentReplicas: current, UpdatedReplicas: updated, AvailableReplicas: available, Stale: stale, Conditions: []ConditionView{}}
	}
	tests := []struct {
		name     string
		view     StatusView
		until    string
		wantDone bool
		wantErr  string
	}{
		{name: "held reached", view: gray(grayapi.PhaseHeld, false), until: "held", wantDone: true},
		{name: "held but stale", view: gray(grayapi.PhaseHeld, true), until: "held"},
		{name: "progressing", view: gray(grayapi.PhaseProgressing, false), until: "held"},
		{name: "no report yet", view: gray("", false), until: "held"},
		{name: "held while waiting for complete", view: gray(grayapi.PhaseHeld, false), until: "complete"},
		{name: "rolled back, on its way to complete", view: gray(grayapi.PhaseRolledBack, false), until: "complete"},
		{name: "complete reached", view: gray(grayapi.PhaseComplete, false), until: "complete", wantDone: true},
		{name: "complete while waiting for held", view: gray(grayapi.PhaseComplete, false), until: "held",
			wantErr: "deployment default/web is Complete: revision 2 rolled out without a hold; start a gray rollout with 'kubectl gray set web PERCENT --image CONTAINER=IMAGE'"},
		{name: "degraded", view: gray(grayapi.PhaseDegraded, false), until: "complete",
			wantErr: "deployment default/web is Degraded: the message; see 'kubectl gray status web' and roll back with 'kubectl gray undo web'"},
		{name: "invalid", view: gray(grayapi.PhaseInvalid, false), until: "held",
			wantErr: "deployment default/web is Invalid: the message; fix it with 'kubectl gray set web PERCENT'"},
		{name: "invalid but stale", view: gray(grayapi.PhaseInvalid, true), until: "held"},
		{name: "invalid policy", view: func() StatusView {
			v := gray(grayapi.PhaseInvalid, false)
			v.Policy = &PolicyView{OnFailure: "hold", HoldForError: "bad"}
			return v
		}(), until: "complete",
			wantErr: "deployment default/web is Invalid: the message; fix it with 'kubectl gray set web PERCENT --hold-for DURATION'"},
		{name: "plain deployment never holds", view: plain(3, 3, 3, 3, false), until: "held",
			wantErr: "deployment default/web is not a gray Deployment, so it never holds; make it one with 'kubectl gray set web PERCENT'"},
		{name: "plain deployment complete", view: plain(3, 3, 3, 3, false), until: "complete", wantDone: true},
		{name: "plain deployment with old pods", view: plain(3, 4, 3, 3, false), until: "complete"},
		{name: "plain deployment not available", view: plain(3, 3, 3, 2, false), until: "complete"},
		{name: "plain deployment not observed", view: plain(3, 3, 3, 3, true), until: "complete"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			done, err := untilReached(tt.view, tt.until)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("untilReached() = %v, %v; want error %q", done, err, tt.wantErr)
				}
				return
			}
			if err != nil || done != tt.wantDone {
				t.Fatalf("untilReached() = %v, %v; want %v", done, err, tt.wantDone)
			}
		})
	}
}

func TestPlainRolloutDeadline(t *testing.T) {
	v := StatusView{Namespace: ns, Name: "web", Conditions: []ConditionView{{Type: "Progressing", Status: "False", Reason: "ProgressDeadlineExceeded"}}}
	if _, err := untilReached(v, "complete"); err == nil || err.Error() != "deployment default/web exceeded its progress deadline" {
		t.Fatalf("err = %v", err)
	}
}

func TestStaleReasons(t *testing.T) {
	held := grayapi.Status{Phase: grayapi.PhaseHeld, Step: 0, Percent: 10, ObservedGeneration: 4}
	invalid := grayapi.Status{Phase: grayapi.PhaseInvalid, ObservedGeneration: 4}
	tests := []struct {
		name       string
		d          *appsv1.Deployment
		st         grayapi.Status
		points     []int32
		percentErr error
		want       []string
	}{
		{name: "current", d: deployment("web", withGeneration(4, 4)), st: held, points: []int32{10, 30}},
		{name: "new generation", d: deployment("web", withGeneration(5, 5)), st: held, points: []int32{10, 30},
			want: []string{"gray-controller has not yet observed generation 5 (status is for 4)"}},
		{name: "pending resume", d: deployment("web", withGeneration(4, 4), withAnnotation(grayapi.ResumeAnnotation, "2:next")), st: held, points: []int32{10, 30},
			want: []string{`resume request "2:next" is not yet consumed`}},
		{name: "hold points changed while held", d: deployment("web", withGeneration(4, 4)), st: held, points: []int32{20, 30},
			want: []string{"hold points changed to 20,30 since the hold at 10%"}},
		{name: "hold points changed while progressing is not judged", d: deployment("web", withGeneration(4, 4)),
			st: grayapi.Status{Phase: grayapi.PhaseProgressing, Percent: 10, ObservedGeneration: 4}, points: []int32{20, 30}},
		{name: "invalid and still invalid", d: deployment("web", withGeneration(4, 4)), st: invalid, points: []int32{}, percentErr: errString("bad")},
		{name: "invalid then fixed", d: deployment("web", withGeneration(4, 4)), st: invalid, points: []int32{20},
			want: []string{"hold points (20) and policy are valid since gray-controller reported Invalid"}},
		{name: "invalid, hold points fine, policy still invalid", d: deployment("web", withGeneration(4, 4), withAnnotation(grayapi.OnFailureAnnotation, "yes")),
			st: invalid, points: []int32{20}},
		{name: "held then policy broken", d: deployment("web", withGeneration(4, 4), withAnnotation(grayapi.HoldForAnnotation, "10")), st: held, points: []int32{10, 30},
			want: []string{"the policy became invalid since gray-controller reported"}},
		{name: "held then broken", d: deployment("web", withGeneration(4, 4)), st: held, points: []int32{}, percentErr: errString("bad"),
			want: []string{"hold points became invalid since gray-controller reported"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := staleReasons(tt.d, tt.st, tt.points, tt.percentErr)
			if strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Fatalf("staleReasons() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestProgressBar(t *testing.T) {
	tests := []struct {
		name        string
		done, total int32
		want        string
	}{
		{name: "empty", done: 0, total: 4, want: "[--------]"},
		{name: "three quarters", done: 3, total: 4, want: "[######--]"},
		{name: "full", done: 4, total: 4, want: "[########]"},
		{name: "over is capped", done: 6, total: 4, want: "[########]"},
		{name: "hold at zero", done: 0, total: 0, want: "[########]"},
		{name: "one of three rounds down", done: 1, total: 3, want: "[##------]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := progressBar(tt.done, tt.total, 8); got != tt.want {
				t.Fatalf("progressBar(%d, %d, 8) = %q, want %q", tt.done, tt.total, got, tt.want)
			}
		})
	}
}

func TestStatusValidate(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		flags   func(o *StatusOptions)
		wantErr string
	}{
		{name: "bad until", args: []string{"web"}, flags: func(o *StatusOptions) { o.Until = "paused" }, wantErr: `invalid --until "paused": use "held" or "complete"`},
		{name: "until without name", flags: func(o *StatusOptions) { o.Until = "held" }, wantErr: `--until needs a Deployment, e.g. 'kubectl gray status web --until held'`},
		{name: "bad output", args: []string{"web"}, flags: func(o *StatusOptions) { o.Output = "wide" }, wantErr: `invalid --output "wide": use json or yaml (or nothing for text)`},
		{name: "all namespaces and name", args: []string{"web"}, flags: func(o *StatusOptions) { o.AllNamespaces = true }, wantErr: `-A lists every namespace; use -n NAMESPACE with a Deployment name`},
		{name: "timeout alone", args: []string{"web"}, flags: func(o *StatusOptions) { o.Timeout = time.Minute }, wantErr: `--timeout only applies with --until or -w`},
		{name: "two names", args: []string{"web", "api"}, wantErr: `give at most one Deployment, e.g. 'kubectl gray status web'`},
		{name: "not found", args: []string{"nope"}, wantErr: `deployment default/nope not found`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := statusRun(context.Background(), fake.NewClientset(), tt.args, tt.flags)
			if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
				t.Fatalf("error %v, want one starting %q", err, tt.wantErr)
			}
		})
	}
}

// notifyBuffer is a goroutine-safe output that reports every write.
type notifyBuffer struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	writes chan struct{}
}

func newNotifyBuffer() *notifyBuffer { return &notifyBuffer{writes: make(chan struct{}, 100)} }

func (b *notifyBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n, err := b.buf.Write(p)
	b.writes <- struct{}{}
	return n, err
}

func (b *notifyBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// watchOpened makes the fake clientset report each Deployment watch once it
// is registered with the tracker, so a test changes objects only when the
// command can see the change.
func watchOpened(cs *fake.Clientset) <-chan struct{} {
	opened := make(chan struct{}, 10)
	cs.PrependWatchReactor("deployments", func(action k8stesting.Action) (bool, watch.Interface, error) {
		a := action.(k8stesting.WatchActionImpl)
		w, err := cs.Tracker().Watch(a.GetResource(), a.GetNamespace(), a.ListOptions)
		opened <- struct{}{}
		return true, w, err
	})
	return opened
}

// waitFor fails the test if ch does not deliver within a generous bound; the
// bound only guards against a hang, it does not pace the test.
func waitFor[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
	var zero T
	return zero
}

func updateDeployment(t *testing.T, cs *fake.Clientset, name string, change func(d *appsv1.Deployment)) {
	t.Helper()
	d := getDeployment(t, cs, name)
	change(d)
	if err := cs.Tracker().Update(appsv1.SchemeGroupVersion.WithResource("deployments"), d, ns); err != nil {
		t.Fatal(err)
	}
}

// runStatusAsync starts status in the background with a notifying output.
func runStatusAsync(ctx context.Context, cs *fake.Clientset, args []string, flags func(o *StatusOptions)) (*notifyBuffer, <-chan error) {
	streams, _, _ := testStreams()
	out := newNotifyBuffer()
	streams.Out = out
	o := NewStatusOptions(streams)
	o.Now, o.Namespace, o.Client = clock, ns, cs
	flags(o)
	done := make(chan error, 1)
	go func() {
		err := o.complete(args)
		if err == nil {
			err = o.Validate()
		}
		if err == nil {
			err = o.Run(ctx)
		}
		done <- err
	}()
	return out, done
}

func TestStatusUntilHeldFollowsWatch(t *testing.T) {
	objs := progressingWeb(t)
	cs := fake.NewClientset(objs...)
	opened := watchOpened(cs)
	out, done := runStatusAsync(context.Background(), cs, []string{"web"}, func(o *StatusOptions) { o.Until = "held" })

	waitFor(t, opened, "the Deployment watch")
	updateDeployment(t, cs, "web", func(d *appsv1.Deployment) {
		st := grayapi.Status{Mode: grayapi.ModeInstead, Revision: 2, StableRevision: 1, Step: 1, Percent: 30, Target: 3,
			Phase: grayapi.PhaseHeld, ObservedGeneration: 4, HeldAt: heldAt(0)}
		s, _ := grayapi.FormatStatus(st)
		d.Annotations[grayapi.StatusAnnotation] = s
		d.ResourceVersion = "101"
	})
	if err := waitFor(t, done, "status to return"); err != nil {
		t.Fatalf("status --until held: %v", err)
	}
	checkGolden(t, "status", "until-held", out.String())
}

func TestStatusUntilDegradedExitsOne(t *testing.T) {
	objs := progressingWeb(t)
	cs := fake.NewClientset(objs...)
	opened := watchOpened(cs)
	_, done := runStatusAsync(context.Background(), cs, []string{"web"}, func(o *StatusOptions) { o.Until = "complete" })
	waitFor(t, opened, "the Deployment watch")
	updateDeployment(t, cs, "web", func(d *appsv1.Deployment) {
		s, _ := grayapi.FormatStatus(grayapi.Status{Revision: 2, Phase: grayapi.PhaseDegraded, ObservedGeneration: 4, Message: `ReplicaSet "web-7c9d5f8b6" has timed out progressing.`})
		d.Annotations[grayapi.StatusAnnotation] = s
	})
	err := waitFor(t, done, "status to return")
	want := `deployment default/web is Degraded: ReplicaSet "web-7c9d5f8b6" has timed out progressing.; not ready: 1 pod NotReady (container app is running but not ready), 2 restarts; see 'kubectl gray status web' and roll back with 'kubectl gray undo web'`
	if err == nil || err.Error() != want || ExitCode(err) != ExitFailure {
		t.Fatalf("err = %v (exit %d), want %q (exit 1)", err, ExitCode(err), want)
	}
}

func TestStatusUntilTimeoutExitsTwo(t *testing.T) {
	cs := fake.NewClientset(progressingWeb(t)...)
	_, _, err := statusRun(context.Background(), cs, []string{"web"}, func(o *StatusOptions) {
		o.Until, o.Timeout = "held", 50*time.Millisecond
	})
	want := "timed out after 50ms waiting for deployment default/web to be held (phase Progressing)"
	if err == nil || err.Error() != want || ExitCode(err) != ExitTimeout {
		t.Fatalf("err = %v (exit %d), want %q (exit 2)", err, ExitCode(err), want)
	}
}

func TestStatusUntilAlreadyReached(t *testing.T) {
	cs := fake.NewClientset(heldWeb(t)...)
	out, _, err := statusRun(context.Background(), cs, []string{"web"}, func(o *StatusOptions) { o.Until = "held" })
	if err != nil || out != "deployment.apps/web held at 10% (step 1/3, revision 2)\n" {
		t.Fatalf("got %q, %v", out, err)
	}
	for _, a := range cs.Actions() {
		if a.GetVerb() == "watch" {
			t.Errorf("watched although the phase was already reached")
		}
	}
}

func TestStatusWatchRedraws(t *testing.T) {
	cs := fake.NewClientset(heldWeb(t)...)
	opened := watchOpened(cs)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out, done := runStatusAsync(ctx, cs, []string{"web"}, func(o *StatusOptions) { o.Watch = true })
	waitFor(t, out.writes, "the first drawing")
	waitFor(t, opened, "the Deployment watch")
	updateDeployment(t, cs, "web", func(d *appsv1.Deployment) {
		s, _ := grayapi.FormatStatus(grayapi.Status{Mode: grayapi.ModeInstead, Revision: 2, StableRevision: 1, Step: 1, Percent: 30, Target: 3,
			Phase: grayapi.PhaseProgressing, ObservedGeneration: 4, Message: "rolling to 30%"})
		d.Annotations[grayapi.StatusAnnotation] = s
		delete(d.Annotations, grayapi.ResumeAnnotation)
	})
	waitFor(t, out.writes, "the second drawing")
	cancel()
	if err := waitFor(t, done, "status to return"); err != nil {
		t.Fatalf("status -w ended with %v, want nil on interrupt", err)
	}
	checkGolden(t, "status", "watch", out.String())
}

func TestWatchFeedRestartsAfterWatchError(t *testing.T) {
	cs := fake.NewClientset(heldWeb(t)...)
	var fw *watch.FakeWatcher
	opened := make(chan struct{}, 10)
	cs.PrependWatchReactor("deployments", func(k8stesting.Action) (bool, watch.Interface, error) {
		fw = watch.NewFake()
		opened <- struct{}{}
		return true, fw, nil
	})
	reloads := 0
	ctx := context.Background()
	errCh := make(chan error, 1)
	specs := []watchSpec{{what: "deployment", resourceVersion: "100", open: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
		return cs.AppsV1().Deployments(ns).Watch(ctx, opts)
	}}}
	go func() {
		errCh <- watchLoop(ctx, specs, func() (bool, []watchSpec, error) {
			reloads++
			return reloads == 2, specs, nil
		})
	}()
	waitFor(t, opened, "the first watch")
	fw.Error(&metav1.Status{Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired, Message: "too old resource version"})
	waitFor(t, opened, "the watch reopened after the error")
	fw.Modify(deployment("web"))
	if err := waitFor(t, errCh, "the loop to end"); err != nil {
		t.Fatal(err)
	}
	if reloads != 2 {
		t.Fatalf("reloads = %d, want 2 (after the error, after the change)", reloads)
	}
}

func TestWatchOpenErrorIsFatal(t *testing.T) {
	forbidden := errors.New("forbidden")
	err := watchLoop(context.Background(), []watchSpec{{what: "deployment default/web", resourceVersion: "1", open: func(context.Context, metav1.ListOptions) (watch.Interface, error) {
		return nil, forbidden
	}}}, func() (bool, []watchSpec, error) { t.Fatal("reload called"); return false, nil, nil })
	if !errors.Is(err, forbidden) || err.Error() != "watching deployment default/web: forbidden" {
		t.Fatalf("err = %v", err)
	}
}
