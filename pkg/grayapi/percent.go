package grayapi

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// FullPercent is the share of a finished rollout. It is not a valid hold
// point: holding at 100% would be the end of the rollout, not a hold.
const FullPercent int32 = 100

const percentRule = `hold points must be strictly increasing integers 0-99, each with an optional hold duration of 1s to 744h, e.g. "10,30,60" or "10@5m,50@30m"`

// ParsePercent parses a kubegray.io/percent value into its hold points (ParseHoldPoints'
// percents).
func ParsePercent(value string) ([]int32, error) {
	points, err := ParseHoldPoints(value)
	return points.Percents, err
}

// HoldPoints are the hold points of kubegray.io/percent: their shares, and how long each one's
// hold lasts by itself (HoldFor[i] is 0 for a point that names no duration: kubegray.io/hold-for,
// or a person, ends it).
type HoldPoints struct {
	Percents []int32
	HoldFor  []time.Duration
}

// ParseHoldPoints parses a kubegray.io/percent value.
//
// The value is one or more comma-separated integers 0–99, strictly increasing, each with an
// optional "%", an optional "@" and a Go duration of 1s to 744h (how long that point's hold
// lasts by itself), and optional spaces around it:
//
//	"20"              → [20]
//	"10,30,60"        → [10 30 60]
//	" 10% , 30%, 60 " → [10 30 60]
//	"10@5m,50@30m"    → [10 50], holds of 5m and 30m
//	"10@5m,50"        → [10 50], the second until hold-for or a person
//	"0"               → [0]   (create the new ReplicaSet at 0 and hold)
//	"30,10", "100", "-5", "abc", "20%%", "", "10,,30", "10@", "10@5", "10@1ms" → *InvalidValueError
//
// The error quotes the value and states the rule, naming the point, for example
//
//	invalid kubegray.io/percent "30,10": hold points must be ...; 10 does not come after 30
//	invalid kubegray.io/percent "10@5": hold points must be ...; hold point 10: "5": missing unit in duration "5"
func ParseHoldPoints(value string) (HoldPoints, error) {
	fail := func(detail string) (HoldPoints, error) {
		return HoldPoints{}, &InvalidValueError{Key: PercentAnnotation, Value: value, Rule: percentRule, Detail: detail}
	}
	if strings.TrimSpace(value) == "" {
		return fail("the value is empty")
	}
	parts := strings.Split(value, ",")
	points := HoldPoints{Percents: make([]int32, 0, len(parts)), HoldFor: make([]time.Duration, 0, len(parts))}
	for _, part := range parts {
		share, duration, timed := strings.Cut(strings.TrimSpace(part), "@")
		share = strings.TrimSpace(share)
		p, detail := parsePoint(share)
		if detail != "" {
			return fail(detail)
		}
		if n := len(points.Percents); n > 0 && p <= points.Percents[n-1] {
			return fail(fmt.Sprintf("%d does not come after %d", p, points.Percents[n-1]))
		}
		var holdFor time.Duration
		if timed {
			if holdFor, detail = parsePointHoldFor(duration); detail != "" {
				return fail(fmt.Sprintf("hold point %d: %s", p, detail))
			}
		}
		points.Percents = append(points.Percents, p)
		points.HoldFor = append(points.HoldFor, holdFor)
	}
	return points, nil
}

// parsePointHoldFor parses a hold point's duration with kubegray.io/hold-for's bounds; a
// non-empty detail explains why it is not one.
func parsePointHoldFor(s string) (time.Duration, string) {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	switch {
	case err != nil:
		return 0, quoteToken(s) + ": " + strings.TrimPrefix(err.Error(), "time: ")
	case d < MinHoldFor:
		return 0, fmt.Sprintf("%s is shorter than %s", d, MinHoldFor)
	case d > MaxHoldFor:
		return 0, fmt.Sprintf("%s is longer than %s", d, MaxHoldFor)
	}
	return d, ""
}

// parsePoint parses one trimmed hold point's share; a non-empty detail explains why it is not
// one.
func parsePoint(s string) (int32, string) {
	if s == "" {
		return 0, "a hold point is missing between commas"
	}
	digits := strings.TrimSuffix(s, "%")
	if digits == "" {
		return 0, quoteToken(s) + " has no number"
	}
	var v int32
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, quoteToken(s) + " is not an integer"
		}
		// Stop accumulating as soon as the range is left, so that a long run
		// of digits cannot overflow.
		if v = v*10 + (c - '0'); v >= FullPercent {
			return 0, quoteToken(s) + " is out of range"
		}
	}
	return v, ""
}

// FormatPercent renders hold points' shares the way ParsePercent reads them, without
// "%", durations or spaces: [10 30 60] → "10,30,60", [20] → "20". It does not validate.
func FormatPercent(points []int32) string {
	s := make([]string, len(points))
	for i, p := range points {
		s[i] = strconv.Itoa(int(p))
	}
	return strings.Join(s, ",")
}

// FormatHoldPoints renders hold points as ParseHoldPoints reads them: FormatPercent's shares,
// each with its own duration in its shortest form (FormatHoldFor): "10@5m,50@1h30m,60".
func FormatHoldPoints(points HoldPoints) string {
	s := strings.Split(FormatPercent(points.Percents), ",")
	for i := range points.Percents {
		if d := points.HoldForAt(i); d > 0 {
			s[i] += "@" + FormatHoldFor(d)
		}
	}
	return strings.Join(s, ",")
}

// HoldForAt is the duration hold point i names, 0 for none (or for points built without
// durations).
func (p HoldPoints) HoldForAt(i int) time.Duration {
	if i < len(p.HoldFor) {
		return p.HoldFor[i]
	}
	return 0
}

// FormatHoldFor is d as time.ParseDuration reads it, without the zero units Duration.String
// adds: 5m0s → "5m", 1h0m0s → "1h", 1h30m0s → "1h30m", 90s → "1m30s".
func FormatHoldFor(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// StepPercent is the share a rollout at step holds: points[step] for a step
// inside the list, FullPercent for step == len(points) (the rollout goes to
// the end). With points [10 30 60]: step 0 → 10, step 2 → 60, step 3 → 100.
// A negative step is treated as 0.
func StepPercent(points []int32, step int32) int32 {
	if step < 0 {
		step = 0
	}
	if int(step) >= len(points) {
		return FullPercent
	}
	return points[step]
}
