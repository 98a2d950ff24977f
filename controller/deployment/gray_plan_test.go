package deployment

import (
	"context"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"

	"github.com/kubegray/kubectl-gray/internal/testutil"
	"github.com/kubegray/kubectl-gray/pkg/rollout"
)

// planRS is a ReplicaSet of web for planSizes: revision rev, spec/available (ready as many),
// its status observed, created rev minutes after testNow, sized for desired replicas.
func planRS(rev int64, spec, available, desired int32) *appsv1.ReplicaSet {
	rs := testutil.ReplicaSet("web-"+strconv.FormatInt(rev, 10), spec, testutil.RSRevision(rev),
		testutil.RSCreatedAt(testNow.Add(time.Duration(rev)*time.Minute)), replicasAnnotations(desired, desired))
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
		d := grayDeployment(replicas, "20")
		d.Spec.Paused = paused
		return d
	}
	tests := []struct {
		name     string
		f        sizeFacts
		kind     sizeKind
		newSize  int32
		oldNames []string
		oldSizes []int32
		force    bool
	}{{
		name: "the user's own pause writes nothing",
		f: sizeFacts{d: web(10, true), target: 2, stableRevision: 1,
			newRS: planRS(2, 1, 1, 10), oldRSs: []*appsv1.ReplicaSet{planRS(1, 9, 9, 10)}},
		kind: sizesKept,
	}, {
		name: "no new ReplicaSet yet: it is created first",
		f:    sizeFacts{d: web(10, false), target: 2, stableRevision: 1, oldRSs: []*appsv1.ReplicaSet{planRS(1, 10, 10, 10)}},
		kind: sizesCreateFirst,
	}, {
		name: "a step grows the canary to its target, within the surge of 3",
		f: sizeFacts{d: web(10, false), target: 2, stableRevision: 1,
			newRS: planRS(2, 0, 0, 10), oldRSs: []*appsv1.ReplicaSet{planRS(1, 10, 10, 10)}},
		kind: sizesStepped, newSize: 2, oldNames: []string{"web-1"}, oldSizes: []int32{10},
	}, {
		// budget₁ min(12−8−0, 10−8) = 2: the abandoned canary loses its unready replica;
		// budget₂ min(11−8, 9−8) = 1: the stable one loses 1.
		name: "a step shrinks an abandoned canary before the stable ReplicaSet",
		f: sizeFacts{d: web(10, false), target: 2, stableRevision: 1,
			newRS: planRS(3, 2, 2, 10), oldRSs: []*appsv1.ReplicaSet{planRS(1, 9, 9, 10), planRS(2, 1, 0, 10)}},
		kind: sizesStepped, newSize: 2, oldNames: []string{"web-2", "web-1"}, oldSizes: []int32{0, 8},
	}, {
		name: "held and settled: the step is the sizes as they are",
		f: sizeFacts{d: web(10, true), held: true, target: 2, stableRevision: 1,
			newRS: planRS(2, 2, 2, 10), oldRSs: []*appsv1.ReplicaSet{planRS(1, 8, 8, 10)}},
		kind: sizesStepped, newSize: 2, oldNames: []string{"web-1"}, oldSizes: []int32{8},
	}, {
		// R 10 → 20 held: new T(20) = 4; old [6 2] share 16 → [12 4], the stable one first.
		name: "a scaling event keeps the share, the stable ReplicaSet first",
		f: sizeFacts{d: web(20, true), held: true, scaling: true, target: 4, stableRevision: 1,
			newRS: planRS(3, 2, 2, 10), oldRSs: []*appsv1.ReplicaSet{planRS(2, 2, 2, 10), planRS(1, 6, 6, 10)}},
		kind: sizesScaled, newSize: 4, oldNames: []string{"web-1", "web-2"}, oldSizes: []int32{12, 4}, force: true,
	}, {
		// The hold point lowered from 50% to 20%: old grows min(3, 3) = 3 → [8]; new shrinks
		// min(3, 0 + 10−8) = 2 → 3.
		name: "caps broken without a scaling event are restored as a rolling update moves",
		f: sizeFacts{d: web(10, false), target: 2, stableRevision: 1,
			newRS: planRS(2, 5, 5, 10), oldRSs: []*appsv1.ReplicaSet{planRS(1, 5, 5, 10)}},
		kind: sizesRestored, newSize: 3, oldNames: []string{"web-1"}, oldSizes: []int32{8},
	}, {
		name: "with the stable ReplicaSet gone no old ReplicaSet grows",
		f: sizeFacts{d: web(10, false), target: 2, stableRevision: 1, stableGone: true,
			newRS: planRS(3, 5, 5, 10), oldRSs: []*appsv1.ReplicaSet{planRS(2, 5, 5, 10)}},
		kind: sizesRestored, newSize: 3, oldNames: []string{"web-2"}, oldSizes: []int32{5},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			plan := planSizes(context.Background(), tc.f)
			if plan.kind != tc.kind {
				t.Fatalf("kind = %d, want %d", plan.kind, tc.kind)
			}
			if tc.kind == sizesKept || tc.kind == sizesCreateFirst {
				return
			}
			if plan.newSize != tc.newSize || !apiequality.Semantic.DeepEqual(planNames(plan.old), tc.oldNames) ||
				!apiequality.Semantic.DeepEqual(plan.oldSizes, tc.oldSizes) || plan.force != tc.force {
				t.Errorf("plan = new %d, old %v %v, force %t; want new %d, old %v %v, force %t", plan.newSize, planNames(plan.old),
					plan.oldSizes, plan.force, tc.newSize, tc.oldNames, tc.oldSizes, tc.force)
			}
		})
	}
}

// TestPlanSizesProperties runs planSizes over random Deployments and ReplicaSets: it never
// plans the canary above its target (above it, it only shrinks), never lets an old ReplicaSet
// grow while the stable one is gone, plans every old ReplicaSet exactly once, and changes
// nothing it was given.
func TestPlanSizesProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(20261202, 22))
	for i := range 5000 {
		f := randomSizeFacts(r)
		d := f.d.DeepCopy()
		snapshot := make([]*appsv1.ReplicaSet, 0, len(f.oldRSs)+1)
		for _, rs := range withNewRS(f.oldRSs, f.newRS) {
			snapshot = append(snapshot, rs.DeepCopy())
		}
		plan := planSizes(context.Background(), f)
		if !apiequality.Semantic.DeepEqual(d, f.d) || !sameReplicaSets(snapshot, withNewRS(f.oldRSs, f.newRS)) {
			t.Fatalf("case %d: planSizes modified its facts", i)
		}
		if plan.kind == sizesKept || plan.kind == sizesCreateFirst {
			continue
		}
		if f.newRS == nil {
			// A scaling event before the new ReplicaSet exists: there is nothing to size.
			if plan.newSize != 0 {
				t.Fatalf("case %d: no new ReplicaSet, yet planned at %d", i, plan.newSize)
			}
		}
		newSpec := int32(0)
		if f.newRS != nil {
			newSpec = *f.newRS.Spec.Replicas
		}
		if plan.newSize > max(f.target, 0) && plan.newSize > newSpec {
			t.Fatalf("case %d (%+v): the canary grows %d → %d, past its target %d", i, f, newSpec, plan.newSize, f.target)
		}
		if newSpec > f.target && plan.newSize > newSpec {
			t.Fatalf("case %d: a canary above its target grows %d → %d", i, newSpec, plan.newSize)
		}
		if len(plan.old) != len(f.oldRSs) || len(plan.oldSizes) != len(plan.old) {
			t.Fatalf("case %d: %d old ReplicaSets planned as %d with %d sizes", i, len(f.oldRSs), len(plan.old), len(plan.oldSizes))
		}
		for j, rs := range plan.old {
			if f.stableGone && plan.oldSizes[j] > *rs.Spec.Replicas {
				t.Fatalf("case %d: old %s grows %d → %d with the stable ReplicaSet gone", i, rs.Name, *rs.Spec.Replicas, plan.oldSizes[j])
			}
			if plan.oldSizes[j] < 0 {
				t.Fatalf("case %d: old %s planned at %d", i, rs.Name, plan.oldSizes[j])
			}
		}
	}
}

// randomSizeFacts is a random gray Deployment at 1–20 replicas with a new ReplicaSet (or none)
// and one to three old ones, statuses observed or not, resized or not.
func randomSizeFacts(r *rand.Rand) sizeFacts {
	replicas := r.Int32N(20) + 1
	percent := r.Int32N(101)
	d := grayDeployment(replicas, strconv.Itoa(int(percent)))
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
	f := sizeFacts{d: d, target: rollout.GrayTarget(replicas, percent), stableRevision: 1,
		held: d.Spec.Paused && r.IntN(2) == 0, stableGone: r.IntN(5) == 0}
	for rev := range int64(r.IntN(3) + 1) {
		f.oldRSs = append(f.oldRSs, rsOf(rev+1))
	}
	if r.IntN(6) != 0 {
		f.newRS = rsOf(int64(len(f.oldRSs)) + 1)
	}
	f.scaling = replicasChanged(context.Background(), d, withNewRS(f.oldRSs, f.newRS))
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
