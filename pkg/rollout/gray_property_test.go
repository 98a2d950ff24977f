package rollout

import (
	"math/rand/v2"
	"testing"
)

// propertyWorld is a Deployment's ReplicaSets as the property test evolves them.
type propertyWorld struct {
	replicas, surge, unavailable, percent int32
	newRS                                 GrayReplicaSet
	old                                   []GrayReplicaSet
}

func (w *propertyWorld) target() int32 { return GrayTarget(w.replicas, w.percent) }

func (w *propertyWorld) oldTotal() int32 {
	var n int32
	for _, rs := range w.old {
		n += rs.Spec
	}
	return n
}

func (w *propertyWorld) available() int32 {
	n := w.newRS.Available
	for _, rs := range w.old {
		n += rs.Available
	}
	return n
}

// resolve applies the fencepost rules deployutil applies (both-zero rule, unavailable ≤ R).
func resolve(replicas, surge, unavailable int32) (int32, int32) {
	if surge == 0 && unavailable == 0 {
		unavailable = 1
	}
	return surge, min(unavailable, replicas)
}

// settle moves every ReplicaSet's availability toward its spec the way pods come and go:
// removed pods disappear (unavailable ones first, so available is capped by spec), and each
// missing pod becomes available with probability pReady.
func (w *propertyWorld) settle(rng *rand.Rand, pReady float64) {
	step := func(rs *GrayReplicaSet) {
		rs.Available = min(rs.Available, rs.Spec)
		for rs.Available < rs.Spec && rng.Float64() < pReady {
			rs.Available++
		}
	}
	step(&w.newRS)
	for i := range w.old {
		step(&w.old[i])
	}
}

// checkGrayRollout drives one gray rollout from a fully available old generation (split over
// one stable and up to two abandoned canaries) through PlanGrayStep, with random pod readiness,
// occasional crashes, scaling events (GrayScaleSizes) and hold-point edits (PlanGrayRestore),
// and checks the invariants of docs/design.md: gray semantics at every step. At the end every pod becomes ready and the rollout must settle at the hold
// point.
func checkGrayRollout(t *testing.T, seed uint64) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	w := &propertyWorld{
		replicas: 1 + rng.Int32N(40),
		percent:  rng.Int32N(100),
	}
	w.surge, w.unavailable = resolve(w.replicas, rng.Int32N(w.replicas+3), rng.Int32N(w.replicas+2))
	// Old generation: canaries first (scale-down order), the stable one last.
	left := w.replicas
	for canaries := rng.IntN(3); canaries > 0 && left > 1; canaries-- {
		n := 1 + rng.Int32N(left-1)
		w.old = append(w.old, GrayReplicaSet{Spec: n, Available: rng.Int32N(n + 1)})
		left -= n
	}
	w.old = append(w.old, GrayReplicaSet{Spec: left, Available: left})

	check := func(phase string, before propertyWorld, plan GrayStep) {
		t.Helper()
		tgt := w.target()
		maxNew, minOld := GrayCaps(w.replicas, tgt)
		var oldTotal, availAfter int32
		availAfter = min(before.newRS.Available, plan.New)
		for i, s := range plan.Old {
			oldTotal += s
			availAfter += min(before.old[i].Available, s)
			if s > before.old[i].Spec {
				t.Fatalf("seed %d %s: a rollout step grew old ReplicaSet %d from %d to %d", seed, phase, i, before.old[i].Spec, s)
			}
			if s < 0 {
				t.Fatalf("seed %d %s: negative size %v", seed, phase, plan.Old)
			}
		}
		if plan.New > maxNew {
			t.Fatalf("seed %d %s: new %d exceeds T %d (R %d, P %d)", seed, phase, plan.New, maxNew, w.replicas, w.percent)
		}
		if plan.New < before.newRS.Spec {
			t.Fatalf("seed %d %s: a rollout step shrank the new ReplicaSet %d → %d", seed, phase, before.newRS.Spec, plan.New)
		}
		if oldTotal < minOld {
			t.Fatalf("seed %d %s: old total %d below R−T = %d (R %d, P %d)", seed, phase, oldTotal, minOld, w.replicas, w.percent)
		}
		if total := plan.New + oldTotal; total > w.replicas+w.surge && total > before.newRS.Spec+before.oldTotal() {
			t.Fatalf("seed %d %s: total %d above R+surge = %d", seed, phase, total, w.replicas+w.surge)
		}
		minAvailable := w.replicas - w.unavailable
		if availAfter < min(before.available(), minAvailable) {
			t.Fatalf("seed %d %s: step plans availability %d, below min(%d before, R−maxUnavailable %d); before %+v plan %+v",
				seed, phase, availAfter, before.available(), minAvailable, before, plan)
		}
	}
	step := func(phase string) bool {
		t.Helper()
		before := *w
		before.old = append([]GrayReplicaSet(nil), w.old...)
		plan := PlanGrayStep(GrayStepInput{
			Replicas: w.replicas, Surge: w.surge, Unavailable: w.unavailable, Target: w.target(),
			New: w.newRS, Old: w.old,
		})
		check(phase, before, plan)
		changed := plan.New != w.newRS.Spec
		w.newRS.Spec = plan.New
		for i, s := range plan.Old {
			changed = changed || s != w.old[i].Spec
			w.old[i].Spec = s
		}
		return changed
	}

	for i := 0; i < 60; i++ {
		switch r := rng.Float64(); {
		case r < 0.05:
			// A scaling event: R changes, the share is kept.
			w.replicas = 1 + rng.Int32N(40)
			w.surge, w.unavailable = resolve(w.replicas, rng.Int32N(w.replicas+3), rng.Int32N(w.replicas+2))
			tgt := w.target()
			specs := make([]int32, len(w.old))
			for j, rs := range w.old {
				specs[j] = rs.Spec
			}
			held := w.newRS.Spec >= tgt
			newSize, oldSizes := GrayScaleSizes(GrayScaleInput{
				Replicas: w.replicas, Target: tgt, Held: held, HasNew: true,
				NewSpec: w.newRS.Spec, ProportionalNew: rng.Int32N(w.replicas + 1), Old: specs,
			})
			if newSize > tgt || w.replicas-newSize < w.replicas-tgt {
				t.Fatalf("seed %d: scaling to %d gave new %d, T %d", seed, w.replicas, newSize, tgt)
			}
			var total int32
			for j, s := range oldSizes {
				total += s
				w.old[j].Spec = s
			}
			if total+newSize != w.replicas {
				t.Fatalf("seed %d: scaling to %d gave %d + %v", seed, w.replicas, newSize, oldSizes)
			}
			w.newRS.Spec = newSize
			// The ReplicaSet controller removes the surplus pods before the next step.
			w.settle(rng, 0)
		case r < 0.08:
			// The hold point is edited: the caps are restored as a rolling update moves.
			w.percent = rng.Int32N(100)
			w.restore(t, seed, rng)
		case r < 0.11:
			// A pod crashes somewhere.
			if j := rng.IntN(len(w.old) + 1); j == len(w.old) {
				w.newRS.Available = max(w.newRS.Available-1, 0)
			} else {
				w.old[j].Available = max(w.old[j].Available-1, 0)
			}
		}
		step("rolling")
		w.settle(rng, rng.Float64())
	}

	// Every pod becomes ready: the rollout must settle exactly at the hold point.
	for i := 0; i < 200; i++ {
		w.settle(rng, 1)
		if !step("settling") {
			break
		}
	}
	w.settle(rng, 1)
	if tgt := w.target(); w.newRS.Spec != tgt || w.oldTotal() != w.replicas-tgt {
		t.Fatalf("seed %d: settled at new %d old %d, want T %d and R−T %d (R %d, P %d, surge %d, unavailable %d)",
			seed, w.newRS.Spec, w.oldTotal(), tgt, w.replicas-tgt, w.replicas, w.percent, w.surge, w.unavailable)
	}
}

// TestGrayRolloutProperties runs checkGrayRollout over many random Deployments.
func TestGrayRolloutProperties(t *testing.T) {
	for seed := uint64(0); seed < 3000; seed++ {
		checkGrayRollout(t, seed)
	}
}

// FuzzGrayRollout lets `go test -fuzz` search seeds beyond the fixed ones.
func FuzzGrayRollout(f *testing.F) {
	for _, seed := range []uint64{0, 1, 42, 1 << 40} {
		f.Add(seed)
	}
	f.Fuzz(checkGrayRollout)
}

// restore applies PlanGrayRestore until the caps hold again, pods coming up between steps, and
// checks every step: the new ReplicaSet only shrinks and never below T, old ReplicaSets only
// grow, the total stays within R + surge (or does not grow past it), and availability never
// drops below min(before, R − maxUnavailable).
func (w *propertyWorld) restore(t *testing.T, seed uint64, rng *rand.Rand) {
	t.Helper()
	for range 500 {
		tgt := w.target()
		_, minOld := GrayCaps(w.replicas, tgt)
		if w.newRS.Spec <= tgt && w.oldTotal() >= minOld {
			return
		}
		specs := make([]int32, len(w.old))
		for j, rs := range w.old {
			specs[j] = rs.Spec
		}
		before, total := w.available(), w.newRS.Spec+w.oldTotal()
		newSize, oldSizes := PlanGrayRestore(GrayRestoreInput{
			Replicas: w.replicas, Surge: w.surge, Unavailable: w.unavailable, Target: tgt, NewSpec: w.newRS.Spec,
			NewUnavailable: w.newRS.Spec - w.newRS.Available, Available: before, Old: specs,
		})
		if newSize > w.newRS.Spec || (newSize < tgt && newSize < w.newRS.Spec) {
			t.Fatalf("seed %d: restore moved new %d → %d (T %d)", seed, w.newRS.Spec, newSize, tgt)
		}
		after := min(w.newRS.Available, newSize)
		totalAfter := newSize
		for j, s := range oldSizes {
			if s < specs[j] {
				t.Fatalf("seed %d: restore shrank old ReplicaSet %d: %v → %v", seed, j, specs, oldSizes)
			}
			after += min(w.old[j].Available, s)
			totalAfter += s
		}
		if totalAfter > max(w.replicas+w.surge, total) {
			t.Fatalf("seed %d: restore planned %d replicas, above R+surge %d (was %d)", seed, totalAfter, w.replicas+w.surge, total)
		}
		if minAvailable := w.replicas - w.unavailable; after < min(before, minAvailable) {
			t.Fatalf("seed %d: restore planned availability %d, below min(%d before, R−maxUnavailable %d)", seed, after, before, minAvailable)
		}
		w.newRS.Spec = newSize
		for j, s := range oldSizes {
			w.old[j].Spec = s
		}
		w.settle(rng, 0.5)
	}
	t.Fatalf("seed %d: restore did not converge: new %+v old %+v (R %d, T %d)", seed, w.newRS, w.old, w.replicas, w.target())
}
