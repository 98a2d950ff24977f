package gray

import (
	"fmt"

	"github.com/kubegray/kubectl-gray/pkg/gates"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// In instead mode gray-controller rolls out its own Deployment, and a new version can pass its
// readiness and still fail only once it leads: the standby never runs the controller. So while
// its own Deployment is held with a pods gate pending, a leader of the stable revision hands the
// leader-election lease to the canary once it is ready and has not restarted since the gate's
// window opened: the canary leads while the gate judges it. A canary that fails once it leads
// restarts inside the window, is not handed the lease again, and a stable replica, leading again,
// has the gate fail it (docs/operations.md, Upgrading gray-controller in instead mode).

// handOverFacts is what decideHandOver decides from: the gates and the move as decided, and the
// canary's pods.
type handOverFacts struct {
	// LeaderInStable: this process is a pod of one of the Deployment's old ReplicaSets.
	LeaderInStable bool
	Gates          GateDecision
	Move           Move
	Canary         []gates.Pod
}

// decideHandOver returns why this leader steps down, or "" when it stays: gray-controller's own
// Deployment at revision 4 held at 50% of 2, its pods gate's window open and the gate pending,
// the canary's one pod Ready with the restarts it had when the window opened, and this process
// the stable revision's other pod: it steps down.
func decideHandOver(f handOverFacts) string {
	held := f.Move.Hold != HoldLeft && f.Move.Resume.Resumed == "" && f.Move.Status.HeldAt != nil
	if !f.LeaderInStable || !held || f.Gates.Failed != nil || f.Gates.Passed() || len(f.Canary) == 0 {
		return ""
	}
	baseline, judged := canaryRestartBaseline(f.Gates.Records)
	if !judged || gates.TotalRestarts(f.Canary) > baseline {
		return ""
	}
	for _, p := range f.Canary {
		if !p.Ready || p.CrashLooping || p.Failed {
			return ""
		}
	}
	return fmt.Sprintf("handing the leader-election lease to the canary of revision %d, ready and not restarted since the hold settled: its gates judge it while it leads",
		f.Move.Status.Revision)
}

// canaryRestartBaseline is the canary's restarts when a pods gate's window opened, and whether a
// pods gate has opened one: only a gate that counts restarts can judge a canary by its leading.
func canaryRestartBaseline(records []grayapi.GateStatus) (int64, bool) {
	for _, r := range records {
		if r.Baseline != nil && !r.DryRun {
			return r.Baseline.Canary, true
		}
	}
	return 0, false
}
