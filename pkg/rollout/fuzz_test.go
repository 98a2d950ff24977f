package rollout

import (
	"strconv"
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"
)

// FuzzResolveFenceposts checks the fencepost rounding rules and, on the
// resolved values, the rolling-update bound: one NewReplicasForRolling step
// never pushes the total above R + surge (unless it already was) and never
// grows the new ReplicaSet beyond R.
func FuzzResolveFenceposts(f *testing.F) {
	f.Add(int32(25), int32(25), true, true, int32(10), int32(0), int32(10))
	f.Add(int32(0), int32(0), true, true, int32(0), int32(0), int32(0))
	f.Add(int32(39), int32(39), true, true, int32(10), int32(3), int32(8))
	f.Add(int32(3), int32(2), false, false, int32(10), int32(5), int32(3))
	f.Add(int32(0), int32(25), false, true, int32(3), int32(1), int32(2))
	f.Add(int32(100), int32(0), true, false, int32(1), int32(0), int32(1))
	f.Fuzz(func(t *testing.T, surgeIn, unavailIn int32, surgePct, unavailPct bool, desired, newSpec, oldSum int32) {
		// Stay in the range validation admits and where R·pct fits easily.
		if desired < 0 || desired > 100000 || surgeIn < 0 || unavailIn < 0 {
			return
		}
		// toIntstr returns the fencepost and the number it was built from.
		toIntstr := func(v int32, pct bool) (*intstr.IntOrString, int64) {
			if pct {
				v %= 101
				s := intstr.FromString(strconv.Itoa(int(v)) + "%")
				return &s, int64(v)
			}
			v %= 100000
			i := intstr.FromInt32(v)
			return &i, int64(v)
		}
		ms, surgeN := toIntstr(surgeIn, surgePct)
		mu, unavailN := toIntstr(unavailIn, unavailPct)
		surge, unavail, err := ResolveFenceposts(ms, mu, desired)
		if err != nil {
			t.Fatalf("valid input %v/%v R=%d: %v", ms, mu, desired, err)
		}
		if surge < 0 || unavail < 0 {
			t.Fatalf("negative fencepost %d/%d", surge, unavail)
		}
		if surge == 0 && unavail == 0 {
			t.Fatalf("both fenceposts 0 for %v/%v R=%d", ms, mu, desired)
		}
		if surgePct {
			// ceil: surge·100 ≥ p·R > (surge−1)·100
			p := surgeN
			if int64(surge)*100 < p*int64(desired) || int64(surge-1)*100 >= p*int64(desired) {
				t.Fatalf("surge %d is not ceil(%d%% of %d)", surge, p, desired)
			}
		}
		if !surgePct && int64(surge) != surgeN {
			t.Fatalf("absolute surge %d resolved to %d", surgeN, surge)
		}
		// The both-zero rule may have replaced a 0 by 1; skip that case.
		if unavailPct && !(unavail == 1 && surge == 0) {
			// floor: unavail·100 ≤ p·R < (unavail+1)·100
			p := unavailN
			if int64(unavail)*100 > p*int64(desired) || int64(unavail+1)*100 <= p*int64(desired) {
				t.Fatalf("unavailable %d is not floor(%d%% of %d)", unavail, p, desired)
			}
		}

		if newSpec < 0 || newSpec > desired || oldSum < 0 || oldSum > 200000 {
			return
		}
		got := NewReplicasForRolling(desired, surge, newSpec, newSpec+oldSum)
		if got < newSpec {
			t.Fatalf("new RS shrank from %d to %d", newSpec, got)
		}
		if got > desired {
			t.Fatalf("new RS %d exceeds R=%d", got, desired)
		}
		if total := got + oldSum; got > newSpec && total > desired+surge {
			t.Fatalf("total %d exceeds R+surge=%d after growing new RS %d→%d", total, desired+surge, newSpec, got)
		}
	})
}

// FuzzGrayTarget checks the gray target bounds for every R and P.
func FuzzGrayTarget(f *testing.F) {
	for _, r := range []int32{0, 1, 2, 3, 10, 2147483647} {
		for _, p := range []int32{-1, 0, 1, 33, 34, 50, 99, 100, 101} {
			f.Add(r, p)
		}
	}
	f.Fuzz(func(t *testing.T, r, p int32) {
		got := GrayTarget(r, p)
		switch {
		case r <= 0 || p <= 0:
			if got != 0 {
				t.Fatalf("GrayTarget(%d, %d) = %d, want 0", r, p, got)
			}
			return
		case got < 1:
			t.Fatalf("GrayTarget(%d, %d) = %d, want ≥ 1", r, p, got)
		case got > r:
			t.Fatalf("GrayTarget(%d, %d) = %d > R", r, p, got)
		case r >= 2 && got > r-1:
			t.Fatalf("GrayTarget(%d, %d) = %d, want ≤ R−1", r, p, got)
		}
		pc := int64(min(p, 100))
		// Either the uncapped ceil or a cap (1 from below, R−1 from above).
		exact := (int64(r)*pc + 99) / 100
		if int64(got) != exact && !(got == 1 && exact < 1) && !(r >= 2 && got == r-1 && exact > int64(r-1)) {
			t.Fatalf("GrayTarget(%d, %d) = %d, ceil is %d", r, p, got, exact)
		}
		if p < 100 && GrayTarget(r, p+1) < got {
			t.Fatalf("GrayTarget not monotone in P at R=%d P=%d", r, p)
		}
	})
}

// FuzzPlanScale checks proportional scaling invariants on two or three
// active ReplicaSets without a saturated new one: sizes never go negative,
// and the active total lands exactly on the allowed size R+surge (0 when
// R=0) unless the first ReplicaSet had to be clamped at 0.
func FuzzPlanScale(f *testing.F) {
	f.Add(int32(20), int32(5), int32(8), int32(3), int32(0), int32(13), int32(13), int32(13))
	f.Add(int32(5), int32(2), int32(19), int32(6), int32(0), int32(25), int32(25), int32(25))
	f.Add(int32(8), int32(0), int32(3), int32(8), int32(2), int32(13), int32(13), int32(13))
	f.Add(int32(0), int32(0), int32(3), int32(2), int32(1), int32(6), int32(6), int32(6))
	f.Add(int32(5), int32(0), int32(1), int32(1), int32(2), int32(5), int32(3), int32(5))
	f.Add(int32(3), int32(0), int32(5), int32(4), int32(0), int32(10), int32(1), int32(1))
	f.Fuzz(func(t *testing.T, desired, surge, a, b, c, maxA, maxB, maxC int32) {
		const limit = 10000 // keep spec·newMax far from int32 overflow
		for _, v := range []int32{desired, surge, a, b, c, maxA, maxB, maxC} {
			if v < 0 || v > limit {
				return
			}
		}
		if a == 0 || b == 0 {
			return // need ≥ 2 active for the proportional branch
		}
		in := ScaleInput{
			Desired: desired, MaxSurge: surge, RollingUpdate: true, NewIndex: 2,
			ReplicaSets: []ScaleReplicaSet{
				{Spec: a, Max: maxA, HasMax: true},
				{Spec: b, Max: maxB, HasMax: true},
				{Spec: c, Max: maxC, HasMax: true}, // new, never saturated: Available 0
			},
		}
		if desired == 0 {
			in.ReplicaSets[2].Available = 1 // R=0 is "saturated" only with 0 available
		}
		steps := PlanScale(in)
		sizes := ProportionalSizes(in)
		var total int32
		for i, s := range sizes {
			if s < 0 {
				t.Fatalf("negative size %v for %+v", sizes, in)
			}
			if in.ReplicaSets[i].Spec > 0 {
				total += s
			} else if s != 0 {
				t.Fatalf("inactive RS %d grew to %d", i, s)
			}
		}
		allowed := int32(0)
		if desired > 0 {
			allowed = desired + surge
		}
		if total != allowed && !(total > allowed && len(steps) > 0 && steps[0].Size == 0) {
			t.Fatalf("active total %d, want allowed %d: sizes %v steps %+v", total, allowed, sizes, steps)
		}
		for _, s := range steps {
			if !s.Force {
				t.Fatalf("proportional steps must be forced: %+v", steps)
			}
		}
	})
}
