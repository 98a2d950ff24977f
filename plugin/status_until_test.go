package plugin

// status --until: when a view counts as reached, failed or stale (untilReached, staleReasons),
// and the command waiting on the watch, exiting 1 when Degraded and 2 on a timeout, carrying on
// when the server closes the watch.

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubegray/kubectl-gray/internal/testutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

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
			wantErr: "deployment default/web is Degraded: the message; see 'kubectl gray status web', then size it back to the stable revision with 'kubectl gray abort web' (template kept) or roll back with 'kubectl gray undo web'"},
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
		{name: "current", d: deployment("web", testutil.WithGeneration(4, 4)), st: held, points: []int32{10, 30}},
		{name: "new generation", d: deployment("web", testutil.WithGeneration(5, 5)), st: held, points: []int32{10, 30},
			want: []string{"gray-controller has not yet observed generation 5 (status is for 4)"}},
		{name: "pending resume", d: deployment("web", testutil.WithGeneration(4, 4), testutil.WithAnnotation(grayapi.ResumeAnnotation, "2:next")), st: held, points: []int32{10, 30},
			want: []string{`resume request "2:next" is not yet consumed`}},
		{name: "hold points changed while held", d: deployment("web", testutil.WithGeneration(4, 4)), st: held, points: []int32{20, 30},
			want: []string{"hold points changed to 20,30 since the hold at 10%"}},
		{name: "hold points changed while progressing is not judged", d: deployment("web", testutil.WithGeneration(4, 4)),
			st: grayapi.Status{Phase: grayapi.PhaseProgressing, Percent: 10, ObservedGeneration: 4}, points: []int32{20, 30}},
		{name: "invalid and still invalid", d: deployment("web", testutil.WithGeneration(4, 4)), st: invalid, points: []int32{}, percentErr: errString("bad")},
		{name: "invalid then fixed", d: deployment("web", testutil.WithGeneration(4, 4)), st: invalid, points: []int32{20},
			want: []string{"hold points (20) and policy are valid since gray-controller reported Invalid"}},
		{name: "invalid, hold points fine, policy still invalid", d: deployment("web", testutil.WithGeneration(4, 4), testutil.WithAnnotation(grayapi.OnFailureAnnotation, "yes")),
			st: invalid, points: []int32{20}},
		{name: "held then policy broken", d: deployment("web", testutil.WithGeneration(4, 4), testutil.WithAnnotation(grayapi.HoldForAnnotation, "10")), st: held, points: []int32{10, 30},
			want: []string{"the policy became invalid since gray-controller reported"}},
		{name: "held then broken", d: deployment("web", testutil.WithGeneration(4, 4)), st: held, points: []int32{}, percentErr: errString("bad"),
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
	want := `deployment default/web is Degraded: ReplicaSet "web-7c9d5f8b6" has timed out progressing.; not ready: 1 pod NotReady (container app is running but not ready), 2 restarts; see 'kubectl gray status web', then size it back to the stable revision with 'kubectl gray abort web' (template kept) or roll back with 'kubectl gray undo web'`
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

// The API server ends watches (its timeout, a restart, a dropped
// connection); --until carries on from the last version it saw and ends
// when the phase is reached.
func TestStatusUntilCarriesOnWhenTheServerClosesTheWatch(t *testing.T) {
	cs := fake.NewClientset(progressingWeb(t)...)
	opened := serverWatches(cs)
	out, done := runStatusAsync(context.Background(), cs, []string{"web"}, func(o *StatusOptions) { o.Until = "held" })

	first := waitFor(t, opened, "the Deployment watch")
	if first.resourceVersion != "100" {
		t.Fatalf("first watch from %q, want 100 (the version read)", first.resourceVersion)
	}
	d := getDeployment(t, cs, "web")
	d.ResourceVersion = "105"
	first.w.Modify(d)
	first.w.Stop()

	var second openedWatch
	select {
	case err := <-done:
		t.Fatalf("status --until returned %v when the server closed its watch", err)
	case second = <-opened:
	case <-time.After(10 * time.Second):
		t.Fatal("timed out waiting for the watch to be reopened")
	}
	if second.resourceVersion != "105" {
		t.Fatalf("watch reopened from %q, want 105 (the last version seen)", second.resourceVersion)
	}
	updateDeployment(t, cs, "web", func(d *appsv1.Deployment) {
		s, _ := grayapi.FormatStatus(grayapi.Status{Mode: grayapi.ModeInstead, Revision: 2, StableRevision: 1, Step: 1, Percent: 30, Target: 3,
			Phase: grayapi.PhaseHeld, ObservedGeneration: 4, HeldAt: heldAt(0)})
		d.Annotations[grayapi.StatusAnnotation] = s
		d.ResourceVersion = "106"
	})
	second.w.Modify(getDeployment(t, cs, "web"))
	if err := waitFor(t, done, "status to return"); err != nil {
		t.Fatalf("status --until held: %v", err)
	}
	want := "Waiting for deployment.apps/web to be held: Progressing at 30% (step 2/3), 2 of 3 new replicas available; not ready: 1 pod NotReady (container app is running but not ready), 2 restarts\n" +
		"deployment.apps/web held at 30% (step 2/3, revision 2)\n"
	if out.String() != want {
		t.Errorf("output:\n%s\nwant:\n%s", out, want)
	}
}
