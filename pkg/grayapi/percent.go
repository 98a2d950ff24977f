package grayapi

import (
	"fmt"
	"strconv"
	"strings"
)

// FullPercent is the share of a finished rollout. It is not a valid hold
// point: holding at 100% would be the end of the rollout, not a hold.
const FullPercent int32 = 100

const percentRule = `hold points must be strictly increasing integers 0-99, e.g. "10,30,60"`

// ParsePercent parses a kubegray.io/percent value into its hold points.
//
// The value is one or more comma-separated integers 0–99, strictly
// increasing, each with an optional "%" and optional spaces around it:
//
//	"20"              → [20]
//	"10,30,60"        → [10 30 60]
//	" 10% , 30%, 60 " → [10 30 60]
//	"0"               → [0]   (create the new ReplicaSet at 0 and hold)
//	"30,10", "100", "-5", "abc", "20%%", "", "10,,30" → *InvalidValueError
//
// The error quotes the value and states the rule, for example
//
//	invalid kubegray.io/percent "30,10": hold points must be strictly increasing integers 0-99, e.g. "10,30,60"; 10 does not come after 30
func ParsePercent(value string) ([]int32, error) {
	fail := func(detail string) error {
		return &InvalidValueError{Key: PercentAnnotation, Value: value, Rule: percentRule, Detail: detail}
	}
	if strings.TrimSpace(value) == "" {
		return nil, fail("the value is empty")
	}
	parts := strings.Split(value, ",")
	points := make([]int32, 0, len(parts))
	for _, part := range parts {
		part = strings.TrimSpace(part)
		p, detail := parsePoint(part)
		if detail != "" {
			return nil, fail(detail)
		}
		if n := len(points); n > 0 && p <= points[n-1] {
			return nil, fail(fmt.Sprintf("%d does not come after %d", p, points[n-1]))
		}
		points = append(points, p)
	}
	return points, nil
}

// parsePoint parses one trimmed hold point; a non-empty detail explains why
// it is not one.
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

// FormatPercent renders hold points the way ParsePercent reads them, without
// "%" and without spaces: [10 30 60] → "10,30,60", [20] → "20". It does not
// validate.
func FormatPercent(points []int32) string {
	s := make([]string, len(points))
	for i, p := range points {
		s[i] = strconv.Itoa(int(p))
	}
	return strings.Join(s, ",")
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
