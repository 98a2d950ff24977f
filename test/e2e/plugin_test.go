package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/kubegray/kubectl-gray/internal/testutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
	"github.com/kubegray/kubectl-gray/plugin"
	"github.com/kubegray/kubectl-gray/test/cluster"
)

// TestPlugin drives kubectl gray through the real kubectl against a real
// control plane run by gray-controller in instead mode, and checks the
// cluster with client-go after each command. Numbers are written by hand from
// the target rule T = ceil(R·P/100): 20% of 10 is 2, 50% of 10 is 5, 50% of
// 4 is 2.
func TestPlugin(t *testing.T) {
	c := cluster.StartForTest(t, cluster.Options{Controllers: cluster.WithoutDeploymentController, Audit: true})
	startGrayController(t, c, "--mode=instead")
	e := newGrayEnv(t, c, "plugin")
	u := newPluginUser(t, c, e.ns)
	held, complete := grayapi.PhaseHeld, grayapi.PhaseComplete

	if out := u.must("gray", "version", "--short"); strings.TrimSpace(out) == "" {
		t.Fatalf("kubectl gray version --short printed nothing")
	}

	// Three plain Deployments, rolled out by gray-controller as upstream would.
	e.do(createDeployment(testutil.Deployment("web", testutil.WithImage("nginx:1.25"), testutil.WithReplicas(10))))
	e.do(createDeployment(testutil.Deployment("api", testutil.WithImage("nginx:1.25"), testutil.WithReplicas(4))))
	e.do(createDeployment(testutil.Deployment("shop", testutil.WithImage("nginx:1.25"), testutil.WithReplicas(10))))
	for _, name := range []string{"web", "api", "shop"} {
		waitRolledOut(t, e.client, e.ns, name, 60*time.Second)
	}

	// A server dry run goes through admission but persists nothing.
	before := e.get("web")
	out := u.must("gray", "set", "web", "20", "--image", "app=nginx:1.26", "--dry-run=server")
	wantOutput(t, "set --dry-run=server", out, "deployment.apps/web gray set to 20 (app: nginx:1.25 -> nginx:1.26) (server dry run)\n")
	u.wantWrites(t, "set --dry-run=server", "patch deployments/web dryRun=All&fieldManager=kubectl-gray")
	d := e.get("web")
	if _, ok := d.Annotations[grayapi.PercentAnnotation]; ok || d.Generation != before.Generation || d.Spec.Template.Spec.Containers[0].Image != "nginx:1.25" {
		t.Fatalf("server dry run changed the Deployment: generation %d→%d, annotations %v, image %s",
			before.Generation, d.Generation, d.Annotations, d.Spec.Template.Spec.Containers[0].Image)
	}

	// One command makes web gray and starts the rollout: one write carries
	// both the hold points and the image.
	out = u.must("gray", "set", "web", "20", "--image", "app=nginx:1.26")
	wantOutput(t, "set", out, "deployment.apps/web gray set to 20 (app: nginx:1.25 -> nginx:1.26)\n")
	u.wantWrites(t, "set", "patch deployments/web fieldManager=kubectl-gray")
	d = e.get("web")
	if got := d.Annotations[grayapi.PercentAnnotation]; got != "20" {
		t.Errorf("kubegray.io/percent = %q, want \"20\"", got)
	}
	if got := d.Spec.Template.Spec.Containers[0].Image; got != "nginx:1.26" {
		t.Errorf("image = %s, want nginx:1.26", got)
	}
	if !slices.ContainsFunc(d.ManagedFields, func(m metav1.ManagedFieldsEntry) bool { return m.Manager == "kubectl-gray" }) {
		t.Errorf("no managedFields entry of field manager kubectl-gray: %+v", d.ManagedFields)
	}

	out = u.must("gray", "status", "web", "--until", "held", "--timeout", "60s")
	wantOutput(t, "status --until held", lastLine(out), "deployment.apps/web held at 20% (step 1/1, revision 2)")
	e.settledNow("web", grayState{phase: held, newSpec: 2, oldTotal: 8, paused: true})
	e.wantSizes("web", map[string]int32{"1": 8, "2": 2}, map[string]string{"1": "nginx:1.25", "2": "nginx:1.26"})

	// -o json is the documented StatusView, nothing more. The GrayHeld event
	// is written asynchronously, so wait for it.
	var v plugin.StatusView
	eventually(t, 15*time.Second, "GrayHeld event in kubectl gray status -o json", func() (bool, string) {
		out := u.must("gray", "status", "web", "-o", "json")
		v = plugin.StatusView{}
		decodeStrict(t, out, &v)
		return slices.ContainsFunc(v.Events, func(ev plugin.EventView) bool { return ev.Reason == grayapi.ReasonGrayHeld }), out
	})
	checkHeldView(t, e.ns, v)

	out = u.must("gray", "status", "web")
	for _, want := range []string{
		"Name:        web\n",
		"Namespace:   " + e.ns + "\n",
		"Hold points: 20% (step 1 of 1)\n",
		"Phase:       Held at 20% for ",
		"Message:     held at 2 of 10 replicas (20%) on revision 2; run kubectl gray resume\n",
		"Target:      [####################] 2/2 new replicas available (20% of 10)\n",
		"Replicas:    10 desired, 10 current, 2 updated, 10 ready, 10 available\n",
		"Revisions:   2 (current), 1 (stable)\n",
		"Images:      app=nginx:1.26\n",
		"Paused:      yes\n",
		"\ndeployment.apps/web\n",
		"├── revision 2 (new)  replicaset.apps/",
		"└── revision 1 (stable)  replicaset.apps/",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl gray status web lacks %q:\n%s", want, out)
		}
	}
	if n := strings.Count(out, "  Running  1/1 ready  0 restarts  "); n != 10 {
		t.Errorf("kubectl gray status web shows %d running ready pods, want 10:\n%s", n, out)
	}
	if strings.Contains(out, "\x1b[") {
		t.Errorf("colour codes in output to a pipe:\n%q", out)
	}

	// api becomes gray without a new template: nothing to roll out, so it is
	// Complete at once and there is no hold to resume.
	out = u.must("gray", "set", "deploy/api", "50", "-o", "name")
	wantOutput(t, "set -o name", out, "deployment.apps/api\n")
	u.wantWrites(t, "set -o name", "patch deployments/api fieldManager=kubectl-gray")
	if got := e.get("api").Annotations[grayapi.PercentAnnotation]; got != "50" {
		t.Errorf("api kubegray.io/percent = %q, want \"50\"", got)
	}
	e.expect("api", grayState{phase: complete, newSpec: 4})
	u.fails(plugin.ExitFailure, []string{"deployment " + e.ns + "/api is not held (phase Complete)", "kubectl gray status api --until held"},
		"gray", "resume", "api")
	u.wantWrites(t, "refused resume")
	if _, ok := e.get("api").Annotations[grayapi.ResumeAnnotation]; ok {
		t.Errorf("a refused resume wrote %s", grayapi.ResumeAnnotation)
	}
	u.fails(plugin.ExitFailure, []string{"deployment " + e.ns + "/api is Complete: revision 1 rolled out without a hold"},
		"gray", "status", "api", "--until", "held", "--timeout", "10s")
	wantOutput(t, "status api --until complete", lastLine(u.must("gray", "status", "api", "--until", "complete", "--timeout", "10s")),
		"deployment.apps/api rollout complete (revision 1)")

	// The table lists the gray Deployments of the kubeconfig's namespace.
	header, rows := tableRows(t, u.must("gray", "status"))
	wantHeader := []string{"NAME", "PHASE", "STEP", "HOLD-POINTS", "TARGET", "UPDATED", "AVAILABLE", "REPLICAS", "REVISION", "HELD"}
	if !slices.Equal(header, wantHeader) {
		t.Errorf("table header %v, want %v", header, wantHeader)
	}
	if len(rows) != 2 {
		t.Fatalf("table has %d rows, want api and web: %v", len(rows), rows)
	}
	if want := []string{"api", "Complete", "1/1+", "50", "4", "4", "4", "4", "1", "-"}; !slices.Equal(rows[0], want) {
		t.Errorf("table row %v, want %v", rows[0], want)
	}
	// The HELD cell is an age; the rest is fixed.
	if want := []string{"web", "Held", "1/1", "20", "2", "2", "10", "10", "2"}; len(rows[1]) != 10 || !slices.Equal(rows[1][:9], want) || rows[1][9] == "-" {
		t.Errorf("table row %v, want %v and a held age", rows[1], want)
	}
	header, rows = tableRows(t, u.must("gray", "status", "-A"))
	if header[0] != "NAMESPACE" || len(rows) != 2 || rows[0][0] != e.ns || rows[1][0] != e.ns {
		t.Errorf("kubectl gray status -A: header %v rows %v, want both rows in %s", header, rows, e.ns)
	}

	// The views print with kubectl get's printers: -o name, a jsonpath over
	// the GrayStatus, the wide table's columns.
	wantOutput(t, "status -o name", u.must("gray", "status", "-o", "name"), "deployment.apps/api\ndeployment.apps/web\n")

	// kubectl's habits. Several names make one table, in the order named; a name not found is
	// an error on stderr naming it, after the others' rows, and exit 1.
	wantOutput(t, "status web api -o name", u.must("gray", "status", "web", "api", "-o", "name"), "deployment.apps/web\ndeployment.apps/api\n")
	r := u.fails(plugin.ExitFailure, []string{"error: deployment " + e.ns + "/nope not found"}, "gray", "status", "web", "nope", "-o", "name")
	wantOutput(t, "status web nope -o name", r.stdout, "deployment.apps/web\n")
	// --dry-run alone is a client dry run: nothing is sent.
	wantOutput(t, "resume --dry-run", u.must("gray", "resume", "--dry-run", "web"), "deployment.apps/web gray resumed to 100% (revision 2) (dry run)\n")
	u.wantWrites(t, "resume --dry-run")
	// A bad flag is refused before the server is asked; a server nobody listens on says so.
	closed := []string{"gray", "--server", "https://127.0.0.1:1"}
	u.fails(plugin.ExitFailure, []string{`error: invalid --until "ready": use "held" or "complete"`}, append(closed, "status", "web", "--until", "ready")...)
	u.fails(plugin.ExitFailure, []string{"error: cannot reach the API server at https://127.0.0.1:1: connect: connection refused"}, append(closed, "status", "web")...)
	wantOutput(t, "status web -o jsonpath", u.must("gray", "status", "web", "-o", "jsonpath={.phase} {.percent} {.stableRevision}"), "Held 20 1")
	header, rows = tableRows(t, u.must("gray", "status", "-o", "wide"))
	if want := append(slices.Clone(wantHeader), "MODE", "STABLE", "NEW-RS", "STABLE-RS", "IMAGES", "GATES"); !slices.Equal(header, want) || len(rows) != 2 {
		t.Errorf("kubectl gray status -o wide: header %v rows %v, want %v and 2 rows", header, rows, want)
	} else if web := rows[1]; len(web) != 16 || web[10] == "-" || web[11] != "1" || !strings.HasPrefix(web[12], "web-") || !strings.HasPrefix(web[13], "web-") ||
		web[12] == web[13] || web[14] != "app=nginx:1.26" || web[15] != "-" {
		t.Errorf("kubectl gray status -o wide: web's row %v, want its mode, stable revision 1, its two ReplicaSets, app=nginx:1.26 and no gates", web)
	}

	// A held rollout never completes by itself: --until complete times out
	// with exit 2 and the phase it saw.
	u.fails(plugin.ExitTimeout, []string{"timed out after 3s waiting for deployment " + e.ns + "/web to be complete (phase Held)"},
		"gray", "status", "web", "--until", "complete", "--timeout", "3s")
	e.settledNow("web", grayState{phase: held, newSpec: 2, oldTotal: 8, paused: true})

	// Resume past the only hold point: to 100%.
	out = u.must("gray", "resume", "web")
	wantOutput(t, "resume", out, "deployment.apps/web gray resumed to 100% (revision 2)\n")
	u.wantWrites(t, "resume", "patch deployments/web fieldManager=kubectl-gray")
	out = u.must("gray", "status", "web", "--until", "complete", "--timeout", "60s")
	wantOutput(t, "status --until complete", lastLine(out), "deployment.apps/web rollout complete (revision 2)")
	e.settledNow("web", grayState{phase: complete, newSpec: 10})
	d = e.get("web")
	if _, ok := d.Annotations[grayapi.ResumeAnnotation]; ok {
		t.Errorf("resume request still there after completion: %v", d.Annotations)
	}
	if st := e.grayStatus(d); st.Revision != 2 || st.StableRevision != 2 {
		t.Errorf("after completion revision %d stable %d, want 2 and 2", st.Revision, st.StableRevision)
	}

	// shop rolls out in gray from its first revision, which stays the
	// stable one. (Its undo goes back to a ReplicaSet that only ever shrank:
	// going back to one that was itself rolled out before grows, shrinks and
	// grows it again, which the recorder's fighting check cannot tell from
	// two writers.) Two hold points: resume goes to the next one, which
	// names a duration of its own (an hour, so that it outlasts the test).
	out = u.must("gray", "set", "shop", "20,50@60m", "--image", "app=nginx:1.26")
	wantOutput(t, "set", out, "deployment.apps/shop gray set to 20,50@1h (app: nginx:1.25 -> nginx:1.26)\n")
	u.wantWrites(t, "set", "patch deployments/shop fieldManager=kubectl-gray")
	out = u.must("gray", "status", "shop", "--until", "held", "--timeout", "60s")
	wantOutput(t, "status --until held", lastLine(out), "deployment.apps/shop held at 20% (step 1/2, revision 2)")
	e.settledNow("shop", grayState{phase: held, newSpec: 2, oldTotal: 8, paused: true})
	out = u.must("gray", "resume", "shop")
	wantOutput(t, "resume", out, "deployment.apps/shop gray resumed to 50% (revision 2)\n")
	u.wantWrites(t, "resume", "patch deployments/shop fieldManager=kubectl-gray")
	out = u.must("gray", "status", "shop", "--until", "held", "--timeout", "60s")
	wantOutput(t, "status --until held", lastLine(out), "deployment.apps/shop held at 50% (step 2/2, revision 2)")
	e.settledNow("shop", grayState{phase: held, newSpec: 5, oldTotal: 5, paused: true})
	e.wantSizes("shop", map[string]int32{"1": 5, "2": 5}, map[string]string{"1": "nginx:1.25", "2": "nginx:1.26"})
	checkPointHold(t, e, u)

	// A bad value is refused before anything is sent: even with an API
	// server nobody listens on, the answer is the parse error.
	before = e.get("shop")
	badValue := []string{`invalid kubegray.io/percent "30,10"`, "strictly increasing", "10 does not come after 30"}
	u.fails(plugin.ExitFailure, badValue, "gray", "set", "shop", "30,10")
	u.fails(plugin.ExitFailure, badValue, "gray", "set", "shop", "30,10", "--server", "https://127.0.0.1:1")
	u.wantWrites(t, "refused set")
	d = e.get("shop")
	if d.Annotations[grayapi.PercentAnnotation] != "20,50@1h" || d.Generation != before.Generation {
		t.Errorf("refused set changed shop: percent %q generation %d→%d", d.Annotations[grayapi.PercentAnnotation], before.Generation, d.Generation)
	}
	e.settledNow("shop", grayState{phase: held, newSpec: 5, oldTotal: 5, paused: true})

	// Undo while held (kubectl rollout undo refuses paused Deployments): back
	// to the stable revision 1, which comes back as revision 3 and skips the
	// hold points.
	out = u.must("gray", "undo", "shop")
	wantOutput(t, "undo", out, "deployment.apps/shop rolled back to revision 1 (app: nginx:1.26 -> nginx:1.25)\n")
	u.wantWrites(t, "undo", "patch deployments/shop fieldManager=kubectl-gray")
	if got := e.get("shop").Spec.Template.Spec.Containers[0].Image; got != "nginx:1.25" {
		t.Errorf("image after undo = %s, want nginx:1.25", got)
	}
	out = u.must("gray", "status", "shop", "--until", "complete", "--timeout", "60s")
	wantOutput(t, "status --until complete", lastLine(out), "deployment.apps/shop rollout complete (revision 3)")
	e.settledNow("shop", grayState{phase: complete, newSpec: 10})
	e.wantSizes("shop", map[string]int32{"2": 0, "3": 10}, map[string]string{"2": "nginx:1.26", "3": "nginx:1.25"})
	d = e.get("shop")
	if st := e.grayStatus(d); st.Revision != 3 || st.StableRevision != 3 || d.Annotations[grayapi.PercentAnnotation] != "20,50@1h" {
		t.Errorf("after undo: revision %d stable %d percent %q, want 3, 3 and the hold points kept",
			st.Revision, st.StableRevision, d.Annotations[grayapi.PercentAnnotation])
	}

	checkHistory(t, u)

	// A value written behind the plugin's back freezes api's next rollout:
	// --until ends with exit 1 once gray-controller reports Invalid (not
	// earlier, from the Complete status of the old annotation), and a valid
	// `kubectl gray set` lets the rollout go on to its hold.
	e.do(mutateDeployment("api", func(d *appsv1.Deployment) {
		d.Annotations[grayapi.PercentAnnotation] = "abc"
		d.Spec.Template.Spec.Containers[0].Image = "nginx:1.26"
	}))
	u.fails(plugin.ExitFailure, []string{"deployment " + e.ns + "/api is Invalid: ", `"abc"`, "fix it with 'kubectl gray set api PERCENT'"},
		"gray", "status", "api", "--until", "complete", "--timeout", "60s")
	e.settledNow("api", grayState{phase: grayapi.PhaseInvalid, newSpec: 0, oldTotal: 4})
	out = u.must("gray", "set", "api", "50")
	wantOutput(t, "set", out, "deployment.apps/api gray set to 50\n")
	u.wantWrites(t, "set", "patch deployments/api fieldManager=kubectl-gray")
	out = u.must("gray", "status", "api", "--until", "held", "--timeout", "60s")
	wantOutput(t, "status --until held", lastLine(out), "deployment.apps/api held at 50% (step 1/1, revision 2)")
	e.settledNow("api", grayState{phase: held, newSpec: 2, oldTotal: 2, paused: true})

	// -w without --until follows until --timeout, then ends without error.
	if out := u.must("gray", "status", "web", "-w", "--timeout", "2s"); !strings.Contains(out, "Phase:       Complete\n") {
		t.Errorf("kubectl gray status web -w lacks the Complete phase:\n%s", out)
	}

	// Completion through kubectl, which runs kubectl_complete-gray from PATH.
	names, directive := u.completions("gray", "")
	if want := []string{"abort", "completion", "dashboard", "gate", "help", "history", "release", "restart", "resume", "retry", "set", "status", "undo", "version"}; !slices.Equal(names, want) || directive != ":4" {
		t.Errorf("kubectl gray <TAB>: %v %s, want %v :4", names, directive, want)
	}
	names, _ = u.completions("gray", "s")
	if want := []string{"set", "status"}; !slices.Equal(names, want) {
		t.Errorf("kubectl gray s<TAB>: %v, want %v", names, want)
	}
	names, directive = u.completions("gray", "status", "")
	if want := []string{"api", "shop", "web"}; !slices.Equal(names, want) || directive != ":4" {
		t.Errorf("kubectl gray status <TAB>: %v %s, want %v :4", names, directive, want)
	}
	names, _ = u.completions("gray", "undo", "deploy/w")
	if want := []string{"deploy/web"}; !slices.Equal(names, want) {
		t.Errorf("kubectl gray undo deploy/w<TAB>: %v, want %v", names, want)
	}
	names, _ = u.completions("gray", "status", "--until", "")
	if want := []string{"held", "complete"}; !slices.Equal(names, want) {
		t.Errorf("kubectl gray status --until <TAB>: %v, want %v", names, want)
	}
	names, _ = u.completions("gray", "status", "-n", "gray-pl")
	if want := []string{e.ns}; !slices.Equal(names, want) {
		t.Errorf("kubectl gray status -n gray-pl<TAB>: %v, want %v", names, want)
	}
	u.wantWrites(t, "status, history and completion")

	// -l selects as `kubectl get deployments -l` does (the server's list, by name): api and shop,
	// labelled tier=frontend, are set; web, not labelled, is left as it was.
	for _, name := range []string{"api", "shop"} {
		e.do(func(ctx context.Context, client kubernetes.Interface, ns string) error {
			_, err := client.AppsV1().Deployments(ns).Patch(ctx, name, types.MergePatchType,
				[]byte(`{"metadata":{"labels":{"tier":"frontend"}}}`), metav1.PatchOptions{})
			return err
		})
	}
	out = u.must("gray", "set", "-l", "tier=frontend", "30", "--dry-run=server")
	wantOutput(t, "set -l --dry-run=server", out, "deployment.apps/api gray set to 30 (server dry run)\ndeployment.apps/shop gray set to 30 (server dry run)\n")
	u.wantWrites(t, "set -l --dry-run=server", "patch deployments/api dryRun=All&fieldManager=kubectl-gray",
		"patch deployments/shop dryRun=All&fieldManager=kubectl-gray")
	out = u.must("gray", "set", "-l", "tier=frontend", "30")
	wantOutput(t, "set -l", out, "deployment.apps/api gray set to 30\ndeployment.apps/shop gray set to 30\n")
	u.wantWrites(t, "set -l", "patch deployments/api fieldManager=kubectl-gray", "patch deployments/shop fieldManager=kubectl-gray")
	for name, want := range map[string]string{"api": "30", "shop": "30", "web": "20"} {
		if got := e.get(name).Annotations[grayapi.PercentAnnotation]; got != want {
			t.Errorf("after set -l tier=frontend 30: %s has kubegray.io/percent %q, want %q", name, got, want)
		}
	}
	u.fails(plugin.ExitFailure, []string{`no Deployments in namespace ` + e.ns + ` match selector "tier=none"`}, "gray", "set", "-l", "tier=none", "30")
	u.wantWrites(t, "set -l matching nothing")
}

// checkHeldView checks `kubectl gray status web -o json` while web is held
// at 20% of 10 on revision 2, with revision 1 stable.
func checkHeldView(t *testing.T, ns string, v plugin.StatusView) {
	t.Helper()
	type summary struct {
		Kind, APIVersion, Namespace, Name, PercentAnnotation, Phase, Message string
		Gray, Paused, Stale                                                  bool
		HoldPoints                                                           []int32
		Step, Steps, Percent, Target                                         int32
		Revision, StableRevision                                             int64
		Replicas, Current, Updated, Ready, Available                         int32
		NewAvailable                                                         int32
		Images                                                               []plugin.ContainerImage
	}
	got := summary{
		Kind: v.Kind, APIVersion: v.APIVersion, Namespace: v.Namespace, Name: v.Name, PercentAnnotation: v.PercentAnnotation,
		Phase: string(v.Phase), Message: v.Message, Gray: v.Gray, Paused: v.Paused, Stale: v.Stale, HoldPoints: v.HoldPoints,
		Step: v.Step, Steps: v.Steps, Percent: v.Percent, Target: v.Target, Revision: v.Revision, StableRevision: v.StableRevision,
		Replicas: v.Replicas, Current: v.CurrentReplicas, Updated: v.UpdatedReplicas, Ready: v.ReadyReplicas, Available: v.AvailableReplicas,
		NewAvailable: -1, Images: v.Images,
	}
	if v.NewAvailableReplicas != nil {
		got.NewAvailable = *v.NewAvailableReplicas
	}
	want := summary{
		Kind: "GrayStatus", APIVersion: "kubectl-gray/v1", Namespace: ns, Name: "web", PercentAnnotation: "20",
		Phase: "Held", Message: "held at 2 of 10 replicas (20%) on revision 2; run kubectl gray resume",
		Gray: true, Paused: true, Stale: false, HoldPoints: []int32{20},
		Step: 0, Steps: 1, Percent: 20, Target: 2, Revision: 2, StableRevision: 1,
		Replicas: 10, Current: 10, Updated: 2, Ready: 10, Available: 10, NewAvailable: 2,
		Images: []plugin.ContainerImage{{Name: "app", Image: "nginx:1.26"}},
	}
	if fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", want) {
		t.Errorf("status -o json:\n got %+v\nwant %+v", got, want)
	}
	if v.HeldAt == nil {
		t.Errorf("status -o json has no heldAt while held")
	}
	if !slices.ContainsFunc(v.Conditions, func(c plugin.ConditionView) bool {
		return c.Type == string(grayapi.ConditionGrayHeld) && c.Status == "True" && c.Reason == grayapi.ReasonHoldPointReached
	}) {
		t.Errorf("status -o json lacks condition GrayHeld=True/%s: %+v", grayapi.ReasonHoldPointReached, v.Conditions)
	}
	if len(v.Revisions) != 2 {
		t.Fatalf("status -o json has %d revisions, want 2: %+v", len(v.Revisions), v.Revisions)
	}
	for i, want := range []struct {
		revision       int64
		isNew, stable  bool
		replicas, pods int32
		image          string
	}{
		{revision: 2, isNew: true, replicas: 2, pods: 2, image: "nginx:1.26"},
		{revision: 1, stable: true, replicas: 8, pods: 8, image: "nginx:1.25"},
	} {
		r := v.Revisions[i]
		ready := 0
		for _, p := range r.Pods {
			if p.Ready && p.Phase == "Running" {
				ready++
			}
		}
		if r.Revision != want.revision || r.New != want.isNew || r.Stable != want.stable || r.Replicas != want.replicas ||
			r.AvailableReplicas != want.replicas || int32(ready) != want.pods || len(r.Images) != 1 || r.Images[0].Image != want.image {
			t.Errorf("revision view %d: %+v, want %+v with every pod ready and running", i, r, want)
		}
	}
}

// checkHistory checks `kubectl gray history shop` after revision 2 (20,50,
// nginx:1.26) was rolled back to revision 1, which came back as 3.
// checkPointHold checks that status shows shop's hold at 50%, timed by its own hour as
// gray-controller recorded it when the hold settled: in the summary and in -o json.
func checkPointHold(t *testing.T, e *grayEnv, u *pluginUser) {
	t.Helper()
	out := u.must("gray", "status", "shop")
	for _, want := range []string{
		"Hold points: 20%, 50% for 1h (step 2 of 2)\n",
		"Hold for:    1h0m0s for this hold, resumes by itself in ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl gray status shop lacks %q:\n%s", want, out)
		}
	}
	var v plugin.StatusView
	decodeStrict(t, u.must("gray", "status", "shop", "-o", "json"), &v)
	st := e.grayStatus(e.get("shop"))
	want := []metav1.Duration{{}, {Duration: time.Hour}}
	switch {
	case !slices.Equal(v.HoldPointDurations, want):
		t.Errorf("holdPointDurations %v, want %v", v.HoldPointDurations, want)
	case st.HoldFor == nil || st.HoldFor.Duration != time.Hour || st.SettledAt == nil:
		t.Errorf("kubegray.io/status holdFor %v settledAt %v, want an hour recorded as the hold settled", st.HoldFor, st.SettledAt)
	case v.Policy == nil || v.Policy.CurrentHoldFor != "1h0m0s" || v.Policy.ResumesAt == nil || !v.Policy.ResumesAt.Equal(&metav1.Time{Time: st.SettledAt.Add(time.Hour)}):
		t.Errorf("policy %+v, want currentHoldFor 1h0m0s and resumesAt an hour after %v", v.Policy, st.SettledAt)
	}
}

func checkHistory(t *testing.T, u *pluginUser) {
	t.Helper()
	var h plugin.HistoryView
	decodeStrict(t, u.must("gray", "history", "shop", "-o", "json"), &h)
	type row struct {
		revision int64
		replicas int32
		image    string
		marks    string
	}
	var got []row
	for _, r := range h.Revisions {
		image := ""
		if len(r.Images) == 1 {
			image = r.Images[0].Image
		}
		got = append(got, row{r.Revision, r.Replicas, image, strings.Join(r.Marks, ", ")})
	}
	want := []row{
		{2, 0, "nginx:1.26", "rolled back"},
		{3, 10, "nginx:1.25", "current, complete, stable"},
	}
	if h.Kind != "GrayHistory" || h.Name != "shop" || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("history -o json: kind %s name %s revisions %+v, want GrayHistory web %+v", h.Kind, h.Name, got, want)
	}

	wantOutput(t, "history -o name", u.must("gray", "history", "shop", "-o", "name"), "deployment.apps/shop\n")

	header, rows := tableRows(t, u.must("gray", "history", "shop"))
	wantHeader := []string{"REVISION", "REPLICASET", "READY", "IMAGES", "GRAY", "AGE", "CHANGE-CAUSE"}
	if !slices.Equal(header, wantHeader) || len(rows) != 2 {
		t.Fatalf("history table: header %v, %d rows, want %v and 2 rows: %v", header, len(rows), wantHeader, rows)
	}
	// GRAY cells hold spaces, so compare the cells around them.
	for i, w := range []struct{ revision, ready, images, gray string }{
		{"2", "0/0", "app=nginx:1.26", "rolled back"},
		{"3", "10/10", "app=nginx:1.25", "current, complete, stable"},
	} {
		r := rows[i]
		line := strings.Join(r, " ")
		if r[0] != w.revision || !strings.HasPrefix(r[1], "shop-") || r[2] != w.ready || r[3] != w.images || !strings.Contains(line, " "+w.gray+" ") {
			t.Errorf("history row %q, want revision %s ready %s images %s gray %q", line, w.revision, w.ready, w.images, w.gray)
		}
	}
}
