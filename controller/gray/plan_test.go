package gray

import (
	"context"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1 "k8s.io/api/apps/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"

	"github.com/kubegray/kubectl-gray/internal/testutil"
	"github.com/kubegray/kubectl-gray/pkg/deployutil"
	"github.com/kubegray/kubectl-gray/pkg/rollout"
)

// planRS is a ReplicaSet of web for planSizes: revision rev, spec/available (ready as many),
// its status observed, created rev minutes after testNow, sized for desired replicas.
func planRS(rev int64, spec, available, desired int32) *appsv1.ReplicaSet {
	rs := testutil.ReplicaSet("web-"+strconv.FormatInt(rev, 10), spec, testutil.RSRevision(rev),
		testutil.RSCreatedAt(testNow.Add(time.Duration(rev)*time.Minute)), testutil.RSReplicasAnnotations(desired, desired))
	rs.Generation = 1
	rs.Status = appsv1.ReplicaSetStatus{ObservedGeneration: 1, Replicas: spec, ReadyReplicas: available, AvailableReplicas: available}
	return rs
}

// planNames lists the names of rss.
func planNames(rss []*appsv1.ReplicaSet) []string {
	out := make([]string, len(rss))
	for i, rs := range rss {
		out[i] = rs.Name
	}
	return out
}

// TestPlanSizes pins which rule sizes the ReplicaSets and in which order the old ones are
// written. The sizes are worked by hand from pkg/rollout's rules; web has maxSurge 25% (3 of
// 10) and maxUnavailable 25% (2 of 10) and is at 20%, so T = 2 of 10 and 4 of 20.
func TestPlanSizes(t *testing.T) {
	web := func(replicas int32, paused bool) *appsv1.Deployment {
		d := testutil.GrayWeb(replicas, "20")
		d.Spec.Paused = paused
		return d
	}
	tests := []struct {
		name     string
		f        SizeFacts
		kind     SizeKind
		created  int32
		newSize  int32
		oldNames []string
		oldSizes []int32
		force    bool
	}{{
		name: "the user's own pause writes nothing",
		f: SizeFacts{Deployment: web(10, true), Target: 2, StableRevision: 1,
			NewRS: planRS(2, 1, 1, 10), OldRSs: []*appsv1.ReplicaSet{planRS(1, 9, 9, 10)}},
		kind: SizesKept,
	}, {
		// Created at min(10+3−10, 2) = 2; nothing of it available yet, so the roll may take
		// min(12−8−2, 10−8) = 2 old replicas.
		name: "no new ReplicaSet yet: it is created at its target, and the roll planned with it",
		f:    SizeFacts{Deployment: web(10, false), Target: 2, StableRevision: 1, OldRSs: []*appsv1.ReplicaSet{planRS(1, 10, 10, 10)}},
		kind: SizesCreateFirst, created: 2, newSize: 2, oldNames: []string{"web-1"}, oldSizes: []int32{8},
	}, {
		// 12 replicas already at surge 13 − 1: created at 1. budget₁ min(13−8−1, 12−8) = 4 takes
		// the abandoned canary's 2 unready ones; budget₂ min(10−8, 10−8) = 2, from the stable one.
		name: "no new ReplicaSet yet beside an abandoned canary: created within the surge left",
		f: SizeFacts{Deployment: web(10, false), Target: 2, StableRevision: 1,
			OldRSs: []*appsv1.ReplicaSet{planRS(1, 10, 10, 10), planRS(2, 2, 0, 10)}},
		kind: SizesCreateFirst, created: 1, newSize: 1, oldNames: []string{"web-2", "web-1"}, oldSizes: []int32{0, 8},
	}, {
		name: "a step grows the canary to its target, within the surge of 3",
		f: SizeFacts{Deployment: web(10, false), Target: 2, StableRevision: 1,
			NewRS: planRS(2, 0, 0, 10), OldRSs: []*appsv1.ReplicaSet{planRS(1, 10, 10, 10)}},
		kind: SizesRolled, newSize: 2, oldNames: []string{"web-1"}, oldSizes: []int32{10},
	}, {
		// budget₁ min(12−8−0, 10−8) = 2: the abandoned canary loses its unready replica;
		// budget₂ min(11−8, 9−8) = 1: the stable one loses 1.
		name: "a step shrinks an abandoned canary before the stable ReplicaSet",
		f: SizeFacts{Deployment: web(10, false), Target: 2, StableRevision: 1,
			NewRS: planRS(3, 2, 2, 10), OldRSs: []*appsv1.ReplicaSet{planRS(1, 9, 9, 10), planRS(2, 1, 0, 10)}},
		kind: SizesRolled, newSize: 2, oldNames: []string{"web-2", "web-1"}, oldSizes: []int32{0, 8},
	}, {
		name: "held and settled: the step is the sizes as they are",
		f: SizeFacts{Deployment: web(10, true), Held: true, Target: 2, StableRevision: 1,
			NewRS: planRS(2, 2, 2, 10), OldRSs: []*appsv1.ReplicaSet{planRS(1, 8, 8, 10)}},
		kind: SizesRolled, newSize: 2, oldNames: []string{"web-1"}, oldSizes: []int32{8},
	}, {
		// R 10 → 20 held: new T(20) = 4; old [6 2] share 16 → [12 4], the stable one first.
		name: "a scaling event keeps the share, the stable ReplicaSet first",
		f: SizeFacts{Deployment: web(20, true), Held: true, Scaling: true, Target: 4, StableRevision: 1,
			NewRS: planRS(3, 2, 2, 10), OldRSs: []*appsv1.ReplicaSet{planRS(2, 2, 2, 10), planRS(1, 6, 6, 10)}},
		kind: SizesScaled, newSize: 4, oldNames: []string{"web-1", "web-2"}, oldSizes: []int32{12, 4}, force: true,
	}, {
		// The hold point lowered from 50% to 20%: old grows min(3, 3) = 3 → [8]; new shrinks
		// min(3, 0 + 10−8) = 2 → 3.
		name: "caps broken without a scaling event are restored as a rolling update moves",
		f: SizeFacts{Deployment: web(10, false), Target: 2, StableRevision: 1,
			NewRS: planRS(2, 5, 5, 10), OldRSs: []*appsv1.ReplicaSet{planRS(1, 5, 5, 10)}},
		kind: SizesRestored, newSize: 3, oldNames: []string{"web-1"}, oldSizes: []int32{8},
	}, {
		name: "with the stable ReplicaSet gone no old ReplicaSet grows",
		f: SizeFacts{Deployment: web(10, false), Target: 2, StableRevision: 1, StableGone: true,
			NewRS: planRS(3, 5, 5, 10), OldRSs: []*appsv1.ReplicaSet{planRS(2, 5, 5, 10)}},
		kind: SizesRestored, newSize: 3, oldNames: []string{"web-2"}, oldSizes: []int32{5},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			plan := planSizes(context.Background(), tc.f)
			if plan.Kind != tc.kind {
				t.Fatalf("kind = %d, want %d", plan.Kind, tc.kind)
			}
			if tc.kind == SizesKept {
				return
			}
			if plan.Created != tc.created || plan.NewSize != tc.newSize || !apiequality.Semantic.DeepEqual(planNames(plan.Old), tc.oldNames) ||
				!apiequality.Semantic.DeepEqual(plan.OldSizes, tc.oldSizes) || plan.Force != tc.force {
				t.Errorf("plan = created %d, new %d, old %v %v, force %t; want created %d, new %d, old %v %v, force %t", plan.Created,
					plan.NewSize, planNames(plan.Old), plan.OldSizes, plan.Force, tc.created, tc.newSize, tc.oldNames, tc.oldSizes, tc.force)
			}
		})
	}
}

// TestPlanSizesProperties runs planSizes over random Deployments and ReplicaSets: it never
// plans the canary above its target (above it, it only shrinks), nor creates it above, never lets an old ReplicaSet
// grow while the stable one is gone, plans every old ReplicaSet exactly once, and changes
// nothing it was given.
func TestPlanSizesProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(20261202, 22))
	for i := range 5000 {
		f := randomSizeFacts(r)
		d := f.Deployment.DeepCopy()
		snapshot := make([]*appsv1.ReplicaSet, 0, len(f.OldRSs)+1)
		for _, rs := range deployutil.WithNewRS(f.OldRSs, f.NewRS) {
			snapshot = append(snapshot, rs.DeepCopy())
		}
		plan := planSizes(context.Background(), f)
		if !apiequality.Semantic.DeepEqual(d, f.Deployment) || !sameReplicaSets(snapshot, deployutil.WithNewRS(f.OldRSs, f.NewRS)) {
			t.Fatalf("case %d: planSizes modified its facts", i)
		}
		if plan.Kind == SizesKept {
			continue
		}
		if plan.Created > max(f.Target, 0) {
			t.Fatalf("case %d (%+v): the canary created at %d, past its target %d", i, f, plan.Created, f.Target)
		}
		if f.NewRS == nil && plan.Kind != SizesCreateFirst {
			// A scaling event before the new ReplicaSet exists: there is nothing to size.
			if plan.NewSize != 0 {
				t.Fatalf("case %d: no new ReplicaSet, yet planned at %d", i, plan.NewSize)
			}
		}
		newSpec := int32(0)
		if f.NewRS != nil {
			newSpec = *f.NewRS.Spec.Replicas
		}
		if plan.NewSize > max(f.Target, 0) && plan.NewSize > newSpec {
			t.Fatalf("case %d (%+v): the canary grows %d → %d, past its target %d", i, f, newSpec, plan.NewSize, f.Target)
		}
		if newSpec > f.Target && plan.NewSize > newSpec {
			t.Fatalf("case %d: a canary above its target grows %d → %d", i, newSpec, plan.NewSize)
		}
		if len(plan.Old) != len(f.OldRSs) || len(plan.OldSizes) != len(plan.Old) {
			t.Fatalf("case %d: %d old ReplicaSets planned as %d with %d sizes", i, len(f.OldRSs), len(plan.Old), len(plan.OldSizes))
		}
		for j, rs := range plan.Old {
			if f.StableGone && plan.OldSizes[j] > *rs.Spec.Replicas {
				t.Fatalf("case %d: old %s grows %d → %d with the stable ReplicaSet gone", i, rs.Name, *rs.Spec.Replicas, plan.OldSizes[j])
			}
			if plan.OldSizes[j] < 0 {
				t.Fatalf("case %d: old %s planned at %d", i, rs.Name, plan.OldSizes[j])
			}
		}
	}
}

// randomSizeFacts is a random gray Deployment at 1–20 replicas with a new ReplicaSet (or none)
// and one to three old ones, statuses observed or not, resized or not.
func randomSizeFacts(r *rand.Rand) SizeFacts {
	replicas := r.Int32N(20) + 1
	percent := r.Int32N(101)
	d := testutil.GrayWeb(replicas, strconv.Itoa(int(percent)))
	d.Spec.Paused = r.IntN(3) == 0
	desired := replicas
	if r.IntN(4) == 0 {
		desired = r.Int32N(20) + 1
	}
	rsOf := func(rev int64) *appsv1.ReplicaSet {
		spec := r.Int32N(replicas + 4)
		rs := planRS(rev, spec, r.Int32N(spec+1), desired)
		if r.IntN(4) == 0 {
			rs.Generation = 2
		}
		return rs
	}
	f := SizeFacts{Deployment: d, Target: rollout.GrayTarget(replicas, percent), StableRevision: 1,
		Held: d.Spec.Paused && r.IntN(2) == 0, StableGone: r.IntN(5) == 0}
	for rev := range int64(r.IntN(3) + 1) {
		f.OldRSs = append(f.OldRSs, rsOf(rev+1))
	}
	if r.IntN(6) != 0 {
		f.NewRS = rsOf(int64(len(f.OldRSs)) + 1)
	}
	f.Scaling = deployutil.ReplicasChanged(context.Background(), d, deployutil.WithNewRS(f.OldRSs, f.NewRS))
	return f
}

// sameReplicaSets reports whether got holds ReplicaSets equal to want's, in order.
func sameReplicaSets(want, got []*appsv1.ReplicaSet) bool {
	if len(want) != len(got) {
		return false
	}
	for i := range want {
		if !apiequality.Semantic.DeepEqual(want[i], got[i]) {
			return false
		}
	}
	return true
}
func TestGrayReplicaSetTrustsOnlyCurrentStatus(t *testing.T) {
	rs := func(generation, observed int64, spec, available int32) *appsv1.ReplicaSet {
		return &appsv1.ReplicaSet{
			ObjectMeta: metav1.ObjectMeta{Generation: generation},
			Spec:       appsv1.ReplicaSetSpec{Replicas: &spec},
			Status:     appsv1.ReplicaSetStatus{ObservedGeneration: observed, AvailableReplicas: available},
		}
	}
	tests := []struct {
		name          string
		rs            *appsv1.ReplicaSet
		wantAvailable int32
	}{
		{name: "current status", rs: rs(3, 3, 5, 4), wantAvailable: 4},
		{name: "current status never above spec", rs: rs(3, 3, 2, 4), wantAvailable: 2},
		{name: "resized but not yet observed: stale status counts nothing", rs: rs(4, 3, 2, 4), wantAvailable: 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := GrayReplicaSet(tc.rs)
			if got.Available != tc.wantAvailable || got.Spec != *tc.rs.Spec.Replicas {
				t.Errorf("GrayReplicaSet = %+v, want available %d spec %d", got, tc.wantAvailable, *tc.rs.Spec.Replicas)
			}
		})
	}
}

// TestPlanSizesSettlesWithoutNewAvailability decides again and again on the sizes the previous
// decision wrote, before the ReplicaSet controller observes any of them (so no pod becomes
// available or goes away in between), as syncs triggered by our own writes do. Decisions may
// take several syncs to get there (like upstream's rolling update, one shrinks old ReplicaSets
// and the next grows the canary into the room that made; a canary above its target comes down
// by the availability to spare), but they settle, after a scaling event's share no ReplicaSet
// moves back the way it came (no flapping), and none grows the canary past its target (above
// it, none grows it at all).
func TestPlanSizesSettlesWithoutNewAvailability(t *testing.T) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(20261203, 33))
	moved := 0
	for i := range 5000 {
		f := randomSizeFacts(r)
		limit := max(f.Target, 0)
		if f.NewRS != nil {
			limit = max(limit, *f.NewRS.Spec.Replicas)
		}
		// Each writing decision moves some ReplicaSet one way for good, by at least one
		// replica, and no size exceeds R + surge + what it started with: 4·(R+5) bounds them.
		most := 4 * (int(*f.Deployment.Spec.Replicas) + 5)
		direction := map[string]int{} // +1 grown, -1 shrunk
		settled := false
		for range most {
			plan := planSizes(ctx, f)
			if plan.Kind == SizesKept || plan.Kind == SizesCreateFirst || !changes(f, plan) {
				settled = true
				break
			}
			if plan.NewSize > limit {
				t.Fatalf("case %d: the canary planned at %d, past %d (its target, or its size when above it)", i, plan.NewSize, limit)
			}
			moves := map[string][2]int32{}
			if f.NewRS != nil {
				moves[f.NewRS.Name] = [2]int32{*f.NewRS.Spec.Replicas, plan.NewSize}
			}
			for j, rs := range plan.Old {
				moves[rs.Name] = [2]int32{*rs.Spec.Replicas, plan.OldSizes[j]}
			}
			for name, m := range moves {
				if m[0] == m[1] || plan.Kind == SizesScaled {
					continue
				}
				dir := 1
				if m[1] < m[0] {
					dir = -1
				}
				if direction[name] == -dir {
					t.Fatalf("case %d: %s moves %d → %d, back the way it came (%+v)", i, name, m[0], m[1], f)
				}
				direction[name] = dir
			}
			f = written(f, plan)
			moved++
		}
		if !settled {
			t.Fatalf("case %d: still writing after %d decisions with no new availability: %+v", i, most, f)
		}
	}
	if moved < 1000 {
		t.Fatalf("only %d writing decisions in 5000 random cases", moved)
	}
}

// changes reports whether plan resizes any ReplicaSet of f.
func changes(f SizeFacts, plan SizePlan) bool {
	if f.NewRS != nil && plan.NewSize != *f.NewRS.Spec.Replicas {
		return true
	}
	for j, rs := range plan.Old {
		if plan.OldSizes[j] != *rs.Spec.Replicas {
			return true
		}
	}
	return false
}

// written is f after plan's writes have landed and before the ReplicaSet controller observed
// them: each resized ReplicaSet has its new spec.replicas, a new generation and the desired
// replicas of the Deployment (as every scale write sets them), its status still the old one.
func written(f SizeFacts, plan SizePlan) SizeFacts {
	replicas := *f.Deployment.Spec.Replicas
	resize := func(rs *appsv1.ReplicaSet, size int32) *appsv1.ReplicaSet {
		rs = rs.DeepCopy()
		if *rs.Spec.Replicas != size {
			rs.Spec.Replicas = &size
			rs.Generation++
			deployutil.SetReplicasAnnotations(rs, replicas, replicas+deployutil.MaxSurge(*f.Deployment))
		}
		return rs
	}
	next := f
	if f.NewRS != nil {
		next.NewRS = resize(f.NewRS, plan.NewSize)
	}
	sizes := map[string]int32{}
	for j, rs := range plan.Old {
		sizes[rs.Name] = plan.OldSizes[j]
	}
	next.OldRSs = nil
	for _, rs := range f.OldRSs {
		next.OldRSs = append(next.OldRSs, resize(rs, sizes[rs.Name]))
	}
	next.Scaling = deployutil.ReplicasChanged(context.Background(), f.Deployment, deployutil.WithNewRS(next.OldRSs, next.NewRS))
	return next
}
