package gray

import (
	"context"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegray/kubectl-gray/internal/testutil"
	"github.com/kubegray/kubectl-gray/pkg/gates"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// TestDecideHandOver pins when a leader of the stable revision hands its lease to the canary:
// revision 2 held at 50% of 2, its pods gate's window open (the canary had 2 restarts then) and
// the gate pending, the canary's one pod Ready with those 2 restarts. Each other row breaks one
// of those, but the one whose canary restarted before the window opened.
func TestDecideHandOver(t *testing.T) {
	heldAt := metav1.NewTime(testNow.Add(-time.Minute))
	held := Move{Status: grayapi.Status{Revision: 2, StableRevision: 1, Percent: 50, Target: 1, HeldAt: &heldAt}}
	pending := GateDecision{Records: []grayapi.GateStatus{{Name: "upgrade", Baseline: &grayapi.PodsBaseline{Canary: 2}}},
		Pending: []string{"upgrade 1/3"}}
	ready := gates.Pod{Ready: true, Restarts: 2}
	const handOver = "handing the leader-election lease to the canary of revision 2, ready and not restarted since the hold settled: its gates judge it while it leads"
	for _, tt := range []struct {
		name string
		edit func(*handOverFacts)
		want string
	}{
		{"the stable revision leads, the canary is ready and never restarted", nil, handOver},
		{"this process is not of the stable revision", func(f *handOverFacts) { f.LeaderInStable = false }, ""},
		{"the canary restarted since the window opened", func(f *handOverFacts) { f.Canary[0].Restarts = 3 }, ""},
		{"the canary restarted before the window opened", func(f *handOverFacts) {
			f.Gates.Records = []grayapi.GateStatus{{Name: "upgrade", Baseline: &grayapi.PodsBaseline{Canary: 3}}}
			f.Canary[0].Restarts = 3
		}, handOver},
		{"no pods gate: nothing counts restarts", func(f *handOverFacts) { f.Gates.Records = []grayapi.GateStatus{{Name: "errors"}} }, ""},
		{"the pods gate is a dry run", func(f *handOverFacts) { f.Gates.Records[0].DryRun = true }, ""},
		{"the canary is not ready", func(f *handOverFacts) { f.Canary[0].Ready = false }, ""},
		{"the canary waits in CrashLoopBackOff", func(f *handOverFacts) { f.Canary[0].CrashLooping = true }, ""},
		{"no canary pod", func(f *handOverFacts) { f.Canary = nil }, ""},
		{"the hold has not settled: no gate record yet", func(f *handOverFacts) { f.Gates.Records = nil }, ""},
		{"the gates failed", func(f *handOverFacts) { f.Gates.Failed = &grayapi.Failure{Reason: grayapi.ReasonGateFailed} }, ""},
		{"the gates passed: nothing left to judge", func(f *handOverFacts) { f.Gates.Pending = nil }, ""},
		{"the hold is left", func(f *handOverFacts) { f.Move.Hold = HoldLeft }, ""},
		{"a resume is served", func(f *handOverFacts) { f.Move.Resume.Resumed = "resumed by 2:next" }, ""},
		{"not held", func(f *handOverFacts) { f.Move.Status.HeldAt = nil }, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := handOverFacts{LeaderInStable: true, Gates: pending, Move: held, Canary: []gates.Pod{ready}}
			f.Gates.Records = slices.Clone(pending.Records)
			if tt.edit != nil {
				tt.edit(&f)
			}
			if got := decideHandOver(f); got != tt.want {
				t.Errorf("decideHandOver = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestDecideSyncHandsOver carries the hand-over through decideSync: TestDecideSync's held
// rollout, its pods gate pending, decided by a leader of the stable revision with both canary
// pods ready, then by a leader that is not.
func TestDecideSyncHandsOver(t *testing.T) {
	pods, err := gates.Parse("pods", "test", "provider: pods\nsuccess: canary.restarts == 0\ninterval: 2s\ncount: 3\n")
	if err != nil {
		t.Fatal(err)
	}
	held := heldAt20()
	d := testutil.GrayWeb(10, "20")
	d.Spec.Paused = true
	f := syncFacts{Status: held, Prev: held, HasPrev: true, Points: []int32{20}, Deployment: d, NewRS: planRS(2, 2, 2, 10),
		OldRSs: []*appsv1.ReplicaSet{planRS(1, 8, 8, 10)}, HeldByUs: true, PausedByUs: true, LeaderInStable: true, Now: testNow,
		Gates: GateFacts{Gates: []*gates.Definition{pods}, Canary: []gates.Pod{{Ready: true}, {Ready: true}}}}
	want := "handing the leader-election lease to the canary of revision 2, ready and not restarted since the hold settled: its gates judge it while it leads"
	if got := decideSync(context.Background(), f).HandOver; got != want {
		t.Errorf("a leader of the stable revision: HandOver %q, want %q", got, want)
	}
	f.LeaderInStable = false
	if got := decideSync(context.Background(), f).HandOver; got != "" {
		t.Errorf("a leader that is no pod of the stable revision: HandOver %q, want none", got)
	}
}
