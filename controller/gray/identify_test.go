package gray

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegray/kubectl-gray/internal/testutil"
	"github.com/kubegray/kubectl-gray/pkg/deployutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// TestIdentify pins which rollout identify finds in flight, from the facts alone. web has 10
// replicas and hold points 20 and 50 (targets 2 and 5).
func TestIdentify(t *testing.T) {
	points := []int32{20, 50}
	web := func(paused bool) *appsv1.Deployment {
		d := testutil.GrayWeb(10, "20,50")
		d.Spec.Paused = paused
		return d
	}
	stable := func(rs *appsv1.ReplicaSet) *appsv1.ReplicaSet {
		rs.Labels = map[string]string{grayapi.StableLabel: grayapi.StableLabelValue}
		return rs
	}
	// renumbered is revision 1's ReplicaSet serving the template again as revision 4.
	renumbered := func() *appsv1.ReplicaSet {
		rs := stable(planRS(4, 2, 2, 10))
		rs.Annotations[deployutil.RevisionHistoryAnnotation] = "1"
		return rs
	}
	held := metav1.NewTime(testNow.Add(-10 * time.Minute))
	now := metav1.NewTime(testNow)
	tests := []struct {
		name    string
		f       identifyFacts
		want    grayapi.Status
		newRoll bool
		rederiv bool
		// rollingBack is a substring of the GrayRolledBack message, empty when none is due.
		rollingBack string
	}{{
		name: "the recorded rollout goes on at its step",
		f: identifyFacts{HasPrev: true, Deployment: web(true), NewRS: planRS(2, 2, 2, 10), OldRSs: []*appsv1.ReplicaSet{stable(planRS(1, 8, 8, 10))},
			Prev: grayapi.Status{Revision: 2, StableRevision: 1, Step: 0, Percent: 20, Target: 2, Phase: grayapi.PhaseHeld, HeldAt: &held}},
		want: grayapi.Status{Revision: 2, StableRevision: 1, Step: 0, Percent: 20, Target: 2, Phase: grayapi.PhaseHeld, HeldAt: &held},
	}, {
		name: "the stable label wins over a status naming another stable revision",
		f: identifyFacts{HasPrev: true, Deployment: web(false), NewRS: planRS(3, 2, 2, 10), OldRSs: []*appsv1.ReplicaSet{stable(planRS(1, 8, 8, 10))},
			Prev: grayapi.Status{Revision: 3, StableRevision: 2, Step: 0, Percent: 20, Target: 2, Phase: grayapi.PhaseProgressing}},
		want: grayapi.Status{Revision: 3, StableRevision: 1, Step: 0, Percent: 20, Target: 2, Phase: grayapi.PhaseProgressing},
	}, {
		name: "a new template after a completed rollout starts at the first hold point, the completed revision stable",
		f: identifyFacts{HasPrev: true, Deployment: web(false), OldRSs: []*appsv1.ReplicaSet{planRS(1, 10, 10, 10)},
			Prev: grayapi.Status{Revision: 1, StableRevision: 1, Step: 2, Phase: grayapi.PhaseComplete}},
		want:    grayapi.Status{Mode: grayapi.ModeInstead, Revision: 2, StableRevision: 1, Step: 0, Phase: grayapi.PhaseProgressing},
		newRoll: true,
	}, {
		name: "the stable ReplicaSet coming back skips every hold point and records the abandoned rollout",
		f: identifyFacts{HasPrev: true, Deployment: web(false), NewRS: renumbered(), OldRSs: []*appsv1.ReplicaSet{planRS(3, 2, 2, 10)},
			Prev: grayapi.Status{Revision: 3, StableRevision: 1, Step: 0, Percent: 20, Target: 2, Phase: grayapi.PhaseHeld}},
		want: grayapi.Status{Mode: grayapi.ModeInstead, Revision: 4, StableRevision: 1, Step: 2, Phase: grayapi.PhaseRolledBack,
			Message: "rolling back to stable revision 1",
			Failure: &grayapi.Failure{Reason: grayapi.ReasonRolledBack, RolledBackFrom: 3,
				Message: "revision 3 was rolled back to stable revision 1 at 20% before it completed"}},
		newRoll:     true,
		rollingBack: "Rolling back to stable revision 1 (replica set web-4): hold points skipped, revision 3 abandoned",
	}, {
		name:    "a first Deployment has no old replicas to canary against: its last step at once",
		f:       identifyFacts{Deployment: web(false), NewRS: planRS(1, 10, 0, 10)},
		want:    grayapi.Status{Mode: grayapi.ModeInstead, Revision: 1, StableRevision: 1, Step: 2, Phase: grayapi.PhaseProgressing},
		newRoll: true,
	}, {
		name:    "the stable ReplicaSet at rest with its status lost is not rolling back",
		f:       identifyFacts{Deployment: web(false), NewRS: stable(planRS(3, 10, 10, 10)), OldRSs: []*appsv1.ReplicaSet{planRS(2, 0, 0, 10)}},
		want:    grayapi.Status{Mode: grayapi.ModeInstead, Revision: 3, StableRevision: 3, Step: 2, Phase: grayapi.PhaseProgressing},
		newRoll: true,
	}, {
		name: "opted in mid-rollout: the first hold point not yet passed, the largest old ReplicaSet stable",
		f: identifyFacts{Deployment: web(false), NewRS: planRS(3, 3, 3, 10),
			OldRSs: []*appsv1.ReplicaSet{planRS(1, 2, 2, 10), planRS(2, 5, 5, 10)}},
		want:    grayapi.Status{Mode: grayapi.ModeInstead, Revision: 3, StableRevision: 2, Step: 1, Phase: grayapi.PhaseProgressing},
		newRoll: true,
	}, {
		name: "status lost while paused at a hold point's target: our hold, re-derived",
		f:    identifyFacts{Deployment: web(true), NewRS: planRS(2, 2, 2, 10), OldRSs: []*appsv1.ReplicaSet{planRS(1, 8, 8, 10)}},
		want: grayapi.Status{Mode: grayapi.ModeInstead, Revision: 2, StableRevision: 1, Step: 0, Phase: grayapi.PhaseProgressing,
			HeldAt: &now},
		rederiv: true,
	}, {
		name:    "paused short of the target is the user's pause, not ours",
		f:       identifyFacts{Deployment: web(true), NewRS: planRS(2, 1, 1, 10), OldRSs: []*appsv1.ReplicaSet{planRS(1, 9, 9, 10)}},
		want:    grayapi.Status{Mode: grayapi.ModeInstead, Revision: 2, StableRevision: 1, Step: 0, Phase: grayapi.PhaseProgressing},
		newRoll: true,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.f.Points, tt.f.Now = points, now
			id := identify(tt.f)
			if !apiequality.Semantic.DeepEqual(id.Status, tt.want) {
				t.Errorf("status\n got %s\nwant %s", asJSON(t, id.Status), asJSON(t, tt.want))
			}
			if id.NewRollout != tt.newRoll || id.RederivedHold != tt.rederiv {
				t.Errorf("NewRollout, RederivedHold = %v, %v; want %v, %v", id.NewRollout, id.RederivedHold, tt.newRoll, tt.rederiv)
			}
			if (tt.rollingBack == "") != (id.RollingBack == "") || !strings.Contains(id.RollingBack, tt.rollingBack) {
				t.Errorf("RollingBack = %q, want one containing %q", id.RollingBack, tt.rollingBack)
			}
		})
	}
}

// asJSON is st as JSON, for a message that shows what differs.
func asJSON(t *testing.T, st grayapi.Status) string {
	t.Helper()
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatalf("marshal %+v: %v", st, err)
	}
	return string(b)
}
