package plugin

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubegray/kubectl-gray/internal/testutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// heldWeb is "web" held at the first of three hold points: 1 of 10 replicas
// on revision 2 (nginx:1.27), 9 on the stable revision 1 (nginx:1.26).
func heldWeb(t *testing.T) []runtime.Object {
	d := deployment("web",
		testutil.WithImage("nginx:1.27"), testutil.WithRevision(2), testutil.WithGeneration(4, 4), testutil.WithPaused(),
		withCounts(10, 1, 10, 10),
		withGray(t, "10,30,60", &grayapi.Status{
			Serves: servesHeld, Mode: grayapi.ModeInstead, Revision: 2, StableRevision: 1, Step: 0, Percent: 10, Target: 1,
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
	// Alongside, an unpause is the takeover's to refuse, not a way on.
	st.Mode, st.TakenOver, st.Serves = grayapi.ModeAlongside, true, servesHeld[:4]
	withGray(t, "10,30,60", &st)(d)
	d.Annotations[grayapi.StrategyAnnotation] = "RollingUpdate;maxSurge=25%;maxUnavailable=25%"
	d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	return objs
}

// progressingWeb is "web" rolling to its second hold point, 30%: 2 of 3
// new pods ready, one restarting.
func progressingWeb(t *testing.T) []runtime.Object {
	d := deployment("web",
		testutil.WithImage("nginx:1.27"), testutil.WithRevision(2), testutil.WithGeneration(4, 4),
		withCounts(11, 3, 10, 10),
		withGray(t, "10,30,60", &grayapi.Status{
			Serves: servesInFlight, Mode: grayapi.ModeInstead, Revision: 2, StableRevision: 1, Step: 1, Percent: 30, Target: 3,
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
		testutil.WithImage("nginx:1.27"), testutil.WithRevision(2), testutil.WithGeneration(5, 5),
		withCounts(10, 10, 10, 10),
		withGray(t, "20", &grayapi.Status{
			Serves: grayapi.Serves{}, Mode: grayapi.ModeInstead, Revision: 2, StableRevision: 2, Step: 1, Percent: 100, Target: 10,
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
	d := deployment("web", testutil.WithReplicas(14), testutil.WithImage("nginx:1.27"), testutil.WithRevision(2), testutil.WithGeneration(4, 4),
		withCounts(14, 1, 14, 14),
		withGray(t, "5", &grayapi.Status{Serves: servesHeld, Revision: 2, StableRevision: 1, Percent: 5, Target: 1, Phase: grayapi.PhaseHeld, ObservedGeneration: 4, HeldAt: heldAt(time.Hour)}))
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
	o.Getter = testNames()
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
		{name: "held-json", objects: heldWeb, args: []string{"web"}, flags: func(o *StatusOptions) { *o.PrintFlags.OutputFormat = "json" }},
		{name: "held-yaml", objects: heldWeb, args: []string{"web"}, flags: func(o *StatusOptions) { *o.PrintFlags.OutputFormat = "yaml" }},
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
				d := deployment("web", testutil.WithImage("nginx:1.27"), testutil.WithRevision(2), testutil.WithGeneration(4, 4), withGray(t, "30,10", &grayapi.Status{
					Serves: servesInFlight, Revision: 2, StableRevision: 1, Phase: grayapi.PhaseInvalid, ObservedGeneration: 4,
					Message: `invalid kubegray.io/percent "30,10": hold points must be strictly increasing integers 0-99, each with an optional hold duration of 1s to 744h, e.g. "10,30,60" or "10@5m,50@30m"; 10 does not come after 30`,
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

func TestStatusTable(t *testing.T) {
	objs := heldWeb(t)
	prog := progressingWeb(t)[0].(*appsv1.Deployment)
	prog.Name, prog.UID = "api", "uid-api2"
	inOther := deployment("shop", withGray(t, "50@30m", nil))
	inOther.Namespace = "team-b"
	objs = append(objs, prog, inOther, deployment("db"))
	cs := fake.NewClientset(objs...)

	for _, tt := range []struct {
		name  string
		flags func(o *StatusOptions)
	}{
		{name: "table"},
		{name: "table-all-namespaces", flags: func(o *StatusOptions) { o.AllNamespaces = true }},
		{name: "table-json", flags: func(o *StatusOptions) { *o.PrintFlags.OutputFormat = "json" }},
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

func TestStatusValidate(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		flags   func(o *StatusOptions)
		wantErr string
	}{
		{name: "bad until", args: []string{"web"}, flags: func(o *StatusOptions) { o.Until = "paused" }, wantErr: `invalid --until "paused": use "held" or "complete"`},
		{name: "until without name", flags: func(o *StatusOptions) { o.Until = "held" }, wantErr: `--until needs a Deployment, e.g. 'kubectl gray status web --until held'`},
		{name: "bad output", args: []string{"web"}, flags: func(o *StatusOptions) { *o.PrintFlags.OutputFormat = "xml" }, wantErr: `invalid -o "xml": use one of `},
		{name: "all namespaces and name", args: []string{"web"}, flags: func(o *StatusOptions) { o.AllNamespaces = true }, wantErr: `-A lists every namespace; use -n NAMESPACE with a Deployment name`},
		{name: "timeout alone", args: []string{"web"}, flags: func(o *StatusOptions) { o.Timeout = time.Minute }, wantErr: `--timeout only applies with --until or -w`},
		{name: "until with two names", args: []string{"web", "api"}, flags: func(o *StatusOptions) { o.Until = "held" }, wantErr: `--until waits for one Deployment; give one name, not 2`},
		{name: "until with a selector", flags: func(o *StatusOptions) { o.Until = "held"; o.Selector = "tier=front" }, wantErr: `--until waits for one Deployment; give one name instead of -l tier=front`},
		{name: "watch two names", args: []string{"web", "api"}, flags: func(o *StatusOptions) { o.Watch = true }, wantErr: `-w follows one Deployment, or the table of gray Deployments (-l chooses among them); give one name, not 2`},
		{name: "names and selector", args: []string{"web"}, flags: func(o *StatusOptions) { o.Selector = "tier=front" }, wantErr: `give Deployment names or -l tier=front, not both`},
		{name: "all namespaces and names", args: []string{"web", "api"}, flags: func(o *StatusOptions) { o.AllNamespaces = true }, wantErr: `-A lists every namespace; use -n NAMESPACE with a Deployment name`},
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

// TestStatusSeveral pins status of several names, as kubectl get prints several: one table of
// those found, in the order named (-o json: a GrayStatusList of them), and the others'
// failures, each naming its Deployment.
func TestStatusSeveral(t *testing.T) {
	objs := heldWeb(t)
	prog := progressingWeb(t)[0].(*appsv1.Deployment)
	prog.Name, prog.UID = "api", "uid-api2"
	cs := fake.NewClientset(append(objs, prog, deployment("db"))...)
	for _, tt := range []struct {
		name  string
		flags func(o *StatusOptions)
	}{
		{name: "several"},
		{name: "several-wide", flags: func(o *StatusOptions) { *o.PrintFlags.OutputFormat = "wide" }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, _, err := statusRun(context.Background(), cs, []string{"web", "nope", "deploy/api"}, tt.flags)
			if err == nil || err.Error() != nopeNotFound {
				t.Fatalf("err = %v, want %q", err, nopeNotFound)
			}
			checkGolden(t, "status", tt.name, out)
		})
	}
}

// TestStatusSelector pins status -l: the table of the gray Deployments the selector matches,
// as kubectl get -l filters a list.
func TestStatusSelector(t *testing.T) {
	objs := heldWeb(t)
	objs[0].(*appsv1.Deployment).Labels = map[string]string{"tier": "front"}
	prog := progressingWeb(t)[0].(*appsv1.Deployment)
	prog.Name, prog.UID, prog.Labels = "api", "uid-api2", map[string]string{"tier": "back"}
	cs := fake.NewClientset(append(objs, prog, deployment("db"))...)
	out, _, err := statusRun(context.Background(), cs, nil, func(o *StatusOptions) { o.Selector = "tier=front" })
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "status", "selector", out)
}
