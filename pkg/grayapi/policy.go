package grayapi

import (
	"fmt"
	"strings"
	"time"
)

// OnFailure is what the controller does when a gray rollout becomes
// Degraded (kubegray.io/on-failure).
type OnFailure string

// OnFailure values.
const (
	// OnFailureHold, the default: report Degraded and change nothing, so that
	// a person can look at the failing canary.
	OnFailureHold OnFailure = "hold"
	// OnFailureAbort: abort the rollout: the canary's ReplicaSet goes to 0
	// and the stable revision's back to all replicas, while spec.template
	// stays as written, so a GitOps tool's self-heal finds nothing to
	// re-apply (PhaseAborted).
	OnFailureAbort OnFailure = "abort"
	// OnFailureRollback is the earlier name of OnFailureAbort, still read:
	// ParseOnFailure returns OnFailureAbort for it.
	OnFailureRollback OnFailure = "rollback"
)

const onFailureRule = `must be "hold" or "abort" ("rollback" is read as "abort")`

// ParseOnFailure parses a kubegray.io/on-failure value; present reports
// whether the annotation is set at all (absent means OnFailureHold).
// Surrounding spaces are tolerated, nothing else: "Rollback", "yes" and ""
// are errors, so that a typo never silently turns automatic rollback off.
func ParseOnFailure(value string, present bool) (OnFailure, error) {
	if !present {
		return OnFailureHold, nil
	}
	switch v := OnFailure(strings.TrimSpace(value)); v {
	case OnFailureHold, OnFailureAbort:
		return v, nil
	case OnFailureRollback:
		return OnFailureAbort, nil
	}
	return "", &InvalidValueError{Key: OnFailureAnnotation, Value: value, Rule: onFailureRule}
}

// MinHoldFor and MaxHoldFor bound kubegray.io/hold-for: below a second the
// hold is no hold, and a month is longer than anybody means to wait.
const (
	MinHoldFor = time.Second
	MaxHoldFor = 31 * 24 * time.Hour
)

const holdForRule = `must be a Go duration from 1s to 744h, e.g. "10m" or "1h30m"`

// ParseHoldFor parses a kubegray.io/hold-for value: how long a settled hold
// lasts before the controller resumes it to the next step by itself.
// Surrounding spaces are tolerated:
//
//	"10m" → 10m0s, "1h30m" → 1h30m0s
//	"", "10", "-5m", "500ms", "800h", "10 m" → *InvalidValueError
func ParseHoldFor(value string) (time.Duration, error) {
	fail := func(detail string) (time.Duration, error) {
		return 0, &InvalidValueError{Key: HoldForAnnotation, Value: value, Rule: holdForRule, Detail: detail}
	}
	d, err := time.ParseDuration(strings.TrimSpace(value))
	switch {
	case err != nil:
		return fail(strings.TrimPrefix(err.Error(), "time: "))
	case d < MinHoldFor:
		return fail(fmt.Sprintf("%s is shorter than %s", d, MinHoldFor))
	case d > MaxHoldFor:
		return fail(fmt.Sprintf("%s is longer than %s", d, MaxHoldFor))
	}
	return d, nil
}

// TimedResumeAt is when a hold leaves by itself under kubegray.io/hold-for or its hold point's
// own duration: the duration recorded when it settled (st.HoldFor), else holdFor (a status
// written before durations were recorded), after its hold point first settled (st.SettledAt), so
// that scaling events under the hold do not postpone it. timed is false when nothing times the hold: no hold-for, st not Held or never
// settled, or its user keeps it paused. A Held status's pause is gray-controller's hold, so
// userPaused is the user's own pause kept beside it: kubegray.io/paused on a taken-over
// Deployment (alongside mode), never spec.paused. The controller resumes at this time and the
// plugin shows it; both ask here with those same inputs (the status recorded, the
// Deployment's hold-for, that pause).
//
//	Held, settled 10:00:00, hold-for 10m → 10:10:00, true
//	Held, settled 10:00:00, hold-for 0   → false
//	Progressing, or paused by its user   → false
func TimedResumeAt(st Status, holdFor time.Duration, userPaused bool) (at time.Time, timed bool) {
	holdFor = st.recordedHoldFor(holdFor)
	if holdFor <= 0 || st.Phase != PhaseHeld || st.SettledAt == nil || userPaused {
		return time.Time{}, false
	}
	return st.SettledAt.Add(holdFor), true
}

// Policy is the opt-in automation of a gray Deployment: what a failure
// does, and how long a hold lasts on its own.
type Policy struct {
	OnFailure OnFailure
	// HoldFor is 0 when holds last until a resume; PointHoldFor are the hold points' own
	// durations (kubegray.io/percent "10@5m"; 0 for a point without one), which win over it.
	HoldFor      time.Duration
	PointHoldFor []time.Duration
	// Gates are the gates a hold must pass (kubegray.io/gates), DryRunGates
	// those only measured (kubegray.io/gates-dry-run); a gate named in both
	// is a dry run.
	Gates, DryRunGates []string
}

// HoldForAt is how long the hold at step lasts by itself: the hold point's own duration, else
// kubegray.io/hold-for (0: until a person resumes).
//
//	"10@5m,50", hold-for 1h: step 0 → 5m, step 1 → 1h
func (p Policy) HoldForAt(step int32) time.Duration {
	if p.pointTimed(step) {
		return p.PointHoldFor[step]
	}
	return p.HoldFor
}

// HeldFor is how long the hold of st lasts by itself: the duration recorded when it settled, or,
// for a status written before durations were recorded, HoldForAt its step (0: until a person
// resumes).
func (p Policy) HeldFor(st Status) time.Duration {
	return st.recordedHoldFor(p.HoldForAt(st.Step))
}

// recordedHoldFor is the duration st recorded when its hold settled, else fallback.
func (s Status) recordedHoldFor(fallback time.Duration) time.Duration {
	if s.HoldFor != nil {
		return s.HoldFor.Duration
	}
	return fallback
}

// HoldForKey is the annotation HoldForAt(step) comes from: kubegray.io/percent for a hold point
// with a duration of its own, else kubegray.io/hold-for.
func (p Policy) HoldForKey(step int32) string {
	if p.pointTimed(step) {
		return PercentAnnotation
	}
	return HoldForAnnotation
}

// pointTimed reports whether the hold point at step names a duration of its own.
func (p Policy) pointTimed(step int32) bool {
	return step >= 0 && int(step) < len(p.PointHoldFor) && p.PointHoldFor[step] > 0
}

// ParsePolicy reads kubegray.io/on-failure, kubegray.io/hold-for, the hold points' own durations
// (kubegray.io/percent, whose errors ParsePercent reports) and the gates from a Deployment's
// annotations; the error names the first bad value.
func ParsePolicy(annotations map[string]string) (Policy, error) {
	var p Policy
	var err error
	if points, err := ParseHoldPoints(annotations[PercentAnnotation]); err == nil {
		p.PointHoldFor = points.HoldFor
	}
	onFailure, present := annotations[OnFailureAnnotation]
	if p.OnFailure, err = ParseOnFailure(onFailure, present); err != nil {
		return Policy{}, err
	}
	if holdFor, ok := annotations[HoldForAnnotation]; ok {
		if p.HoldFor, err = ParseHoldFor(holdFor); err != nil {
			return Policy{}, err
		}
	}
	for _, g := range []struct {
		key   string
		names *[]string
	}{{GatesAnnotation, &p.Gates}, {GatesDryRunAnnotation, &p.DryRunGates}} {
		if value, ok := annotations[g.key]; ok {
			if *g.names, err = ParseGates(g.key, value); err != nil {
				return Policy{}, err
			}
		}
	}
	return p, nil
}
