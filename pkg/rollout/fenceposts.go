package rollout

import (
	"k8s.io/apimachinery/pkg/util/intstr"
)

// ResolveFenceposts turns a rolling update's maxSurge and maxUnavailable into
// absolute replica counts for desired replicas R.
//
//	surge       = maxSurge       (int) or ceil(pct·R/100)  (percent rounds UP);   nil → 0
//	unavailable = maxUnavailable (int) or floor(pct·R/100) (percent rounds DOWN); nil → 0
//	if surge == 0 && unavailable == 0 { unavailable = 1 }
//
// The last rule exists because a percentage may round down to zero on a small
// Deployment; with neither surge nor unavailability the rollout could never
// move, so one replica may be unavailable instead.
//
// Worked rows:
//
//	R=10, 25%/25% → surge 3 (2.5 up),   unavailable 2 (2.5 down)
//	R=10, 39%/39% → surge 4 (3.9 up),   unavailable 3 (3.9 down)
//	R=0,  0%/0%   → surge 0,            unavailable 1 (both-zero rule)
//	R=3,  0/25%   → surge 0,            unavailable 1 (0.75 down to 0, then both-zero rule)
//
// A malformed value (e.g. "abc" or "12" without a percent sign) yields an
// error; API validation normally rejects such values before they get here.
func ResolveFenceposts(maxSurge, maxUnavailable *intstr.IntOrString, desired int32) (surge, unavailable int32, err error) {
	zero := intstr.FromInt32(0)
	s, err := intstr.GetScaledValueFromIntOrPercent(intstr.ValueOrDefault(maxSurge, zero), int(desired), true)
	if err != nil {
		return 0, 0, err
	}
	u, err := intstr.GetScaledValueFromIntOrPercent(intstr.ValueOrDefault(maxUnavailable, zero), int(desired), false)
	if err != nil {
		return 0, 0, err
	}
	if s == 0 && u == 0 {
		u = 1
	}
	return int32(s), int32(u), nil
}
