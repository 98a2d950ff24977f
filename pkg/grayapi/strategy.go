package grayapi

import (
	"fmt"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

const strategyRule = `must be "Recreate", or "RollingUpdate" with optional ";maxSurge=<n or n%>" and ";maxUnavailable=<n or n%>", e.g. "RollingUpdate;maxSurge=25%;maxUnavailable=25%"`

// The two fields of a RollingUpdate strategy, as spelled in the value.
const (
	strategyMaxSurge       = "maxSurge"
	strategyMaxUnavailable = "maxUnavailable"
)

// ParseStrategy parses a kubegray.io/strategy value. The format is plain so
// that a CEL admission policy can write it: the strategy type, then
// ";key=value" for each RollingUpdate field that is set. Surrounding spaces
// are tolerated, nothing else is:
//
//	"Recreate"                                       → {Type: Recreate}
//	"RollingUpdate"                                  → {Type: RollingUpdate}  (API defaults apply)
//	"RollingUpdate;maxSurge=25%;maxUnavailable=25%"  → 25% / 25%
//	"RollingUpdate;maxUnavailable=1;maxSurge=0"      → maxSurge 0, maxUnavailable 1 (any order)
//	"recreate", "Recreate;maxSurge=1", "RollingUpdate;maxSurge=1;maxSurge=2",
//	"RollingUpdate;maxSurge=-1", "RollingUpdate;maxSurge=0;maxUnavailable=0" → *InvalidValueError
//
// Values the API server would reject are rejected here too: both fields 0,
// or maxUnavailable above 100%.
func ParseStrategy(value string) (appsv1.DeploymentStrategy, error) {
	fail := func(detail string) (appsv1.DeploymentStrategy, error) {
		return appsv1.DeploymentStrategy{}, &InvalidValueError{Key: StrategyAnnotation, Value: value, Rule: strategyRule, Detail: detail}
	}
	fields := strings.Split(strings.TrimSpace(value), ";")
	var s appsv1.DeploymentStrategy
	switch t := appsv1.DeploymentStrategyType(fields[0]); t {
	case appsv1.RecreateDeploymentStrategyType:
		if len(fields) > 1 {
			return fail("Recreate takes no fields")
		}
		return appsv1.DeploymentStrategy{Type: t}, nil
	case appsv1.RollingUpdateDeploymentStrategyType:
		s.Type = t
	default:
		return fail("strategy type " + quoteToken(string(t)) + " is neither Recreate nor RollingUpdate")
	}
	for _, field := range fields[1:] {
		key, raw, ok := strings.Cut(field, "=")
		if !ok {
			return fail("field " + quoteToken(field) + " is not key=value")
		}
		v, err := parseIntOrPercent(raw)
		if err != nil {
			return fail(fmt.Sprintf("%s: %v", capText(key, maxQuotedToken), err))
		}
		if s.RollingUpdate == nil {
			s.RollingUpdate = &appsv1.RollingUpdateDeployment{}
		}
		target := &s.RollingUpdate.MaxSurge
		switch key {
		case strategyMaxSurge:
		case strategyMaxUnavailable:
			target = &s.RollingUpdate.MaxUnavailable
		default:
			return fail("unknown field " + quoteToken(key))
		}
		if *target != nil {
			return fail(fmt.Sprintf("%s is given twice", key))
		}
		*target = &v
	}
	if err := validateRollingUpdate(s.RollingUpdate); err != nil {
		return fail(err.Error())
	}
	return s, nil
}

// FormatStrategy renders a Deployment strategy the way ParseStrategy reads
// it, fields in the fixed order maxSurge, maxUnavailable:
//
//	{Type: Recreate}                      → "Recreate"
//	{Type: RollingUpdate}                 → "RollingUpdate"
//	{Type: RollingUpdate, 25% / 25%}      → "RollingUpdate;maxSurge=25%;maxUnavailable=25%"
//	{Type: RollingUpdate, maxSurge 1}     → "RollingUpdate;maxSurge=1"
//
// A strategy ParseStrategy would reject is an error.
func FormatStrategy(s appsv1.DeploymentStrategy) (string, error) {
	fail := func(detail string) (string, error) {
		return "", fmt.Errorf("%s: cannot save strategy: %s", StrategyAnnotation, detail)
	}
	switch s.Type {
	case appsv1.RecreateDeploymentStrategyType:
		if s.RollingUpdate != nil {
			return fail("Recreate has rollingUpdate set")
		}
		return string(s.Type), nil
	case appsv1.RollingUpdateDeploymentStrategyType:
	default:
		return fail("strategy type " + quoteToken(string(s.Type)) + " is neither Recreate nor RollingUpdate")
	}
	if err := validateRollingUpdate(s.RollingUpdate); err != nil {
		return fail(err.Error())
	}
	var b strings.Builder
	b.WriteString(string(s.Type))
	if ru := s.RollingUpdate; ru != nil {
		for _, f := range []struct {
			key string
			v   *intstr.IntOrString
		}{{strategyMaxSurge, ru.MaxSurge}, {strategyMaxUnavailable, ru.MaxUnavailable}} {
			if f.v != nil {
				fmt.Fprintf(&b, ";%s=%s", f.key, f.v.String())
			}
		}
	}
	return b.String(), nil
}

// parseIntOrPercent reads "3" or "25%": digits only, so no signs, spaces or
// decimals slip through into the Deployment.
func parseIntOrPercent(raw string) (intstr.IntOrString, error) {
	digits, percent := strings.CutSuffix(raw, "%")
	if digits == "" || strings.TrimLeft(digits, "0123456789") != "" {
		return intstr.IntOrString{}, fmt.Errorf("%s is not a non-negative integer or percentage", quoteToken(raw))
	}
	n, err := strconv.ParseInt(digits, 10, 32)
	if err != nil {
		return intstr.IntOrString{}, fmt.Errorf("%s is too large", quoteToken(raw))
	}
	if percent {
		return intstr.FromString(raw), nil
	}
	return intstr.FromInt32(int32(n)), nil
}

// validateRollingUpdate mirrors the API server's checks that matter for a
// saved strategy, so a restore can never be rejected by the API server.
func validateRollingUpdate(ru *appsv1.RollingUpdateDeployment) error {
	if ru == nil {
		return nil
	}
	surge, err := checkIntOrPercent(strategyMaxSurge, ru.MaxSurge)
	if err != nil {
		return err
	}
	unavailable, err := checkIntOrPercent(strategyMaxUnavailable, ru.MaxUnavailable)
	if err != nil {
		return err
	}
	if ru.MaxUnavailable != nil && ru.MaxUnavailable.Type == intstr.String && unavailable > 100 {
		return fmt.Errorf("maxUnavailable %s is above 100%%", capText(ru.MaxUnavailable.String(), maxQuotedToken))
	}
	if ru.MaxSurge != nil && ru.MaxUnavailable != nil && surge == 0 && unavailable == 0 {
		return fmt.Errorf("maxSurge and maxUnavailable are both 0, so the rollout could never progress")
	}
	return nil
}

// checkIntOrPercent returns the number in v (the percentage for "25%") after
// checking it is well formed; a nil v is 0.
func checkIntOrPercent(key string, v *intstr.IntOrString) (int64, error) {
	if v == nil {
		return 0, nil
	}
	if v.Type == intstr.Int {
		if v.IntVal < 0 {
			return 0, fmt.Errorf("%s %d is negative", key, v.IntVal)
		}
		return int64(v.IntVal), nil
	}
	digits, ok := strings.CutSuffix(v.StrVal, "%")
	n, err := strconv.ParseInt(digits, 10, 32)
	if !ok || digits == "" || strings.TrimLeft(digits, "0123456789") != "" || err != nil {
		return 0, fmt.Errorf("%s %s is not a non-negative integer or percentage", key, quoteToken(v.StrVal))
	}
	return n, nil
}
