package grayapi

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Gate annotations and the ConfigMap label that marks gate definitions
// (docs/gates.md).
const (
	// GatesAnnotation names the gates every hold must pass before
	// kubegray.io/hold-for may leave it: "pods,error-rate".
	GatesAnnotation = Prefix + "gates"
	// GatesDryRunAnnotation names gates that are measured and shown but
	// never hold, fail or promote anything.
	GatesDryRunAnnotation = Prefix + "gates-dry-run"
	// GatesLabel, with GatesLabelValue, marks a ConfigMap whose keys are
	// gate definitions.
	GatesLabel      = Prefix + "gates"
	GatesLabelValue = "true"
	// ProvidersLabelValue of GatesLabel marks a ConfigMap, in gray-controller's
	// own namespace only, whose keys are the metric gates' providers.
	ProvidersLabelValue = "providers"
	// PodsGate is the built-in gate that judges the canary's own pods.
	PodsGate = "pods"
)

// MaxGates bounds how many gates one Deployment may name: each is measured
// and recorded in kubegray.io/status.
const MaxGates = 8

const gatesRule = `must be a comma-separated list of gate names (lowercase letters, digits and '-'), e.g. "pods,error-rate"`

// ParseGates parses a kubegray.io/gates or kubegray.io/gates-dry-run value:
//
//	"pods"              → [pods]
//	" pods , error-rate" → [pods error-rate]
//	"", "pods,,x", "Pods", "pods,pods" → *InvalidValueError
func ParseGates(key, value string) ([]string, error) {
	fail := func(detail string) ([]string, error) {
		return nil, &InvalidValueError{Key: key, Value: value, Rule: gatesRule, Detail: detail}
	}
	var names []string
	seen := map[string]bool{}
	for part := range strings.SplitSeq(value, ",") {
		name := strings.TrimSpace(part)
		switch {
		case name == "":
			return fail("a name is empty")
		case len(validation.IsDNS1123Label(name)) > 0:
			return fail(fmt.Sprintf("%s is not a lowercase DNS label", QuoteValue(name)))
		case seen[name]:
			return fail(fmt.Sprintf("%s is named twice", QuoteValue(name)))
		}
		seen[name] = true
		names = append(names, name)
	}
	if len(names) > MaxGates {
		return fail(fmt.Sprintf("%d gates named, at most %d allowed", len(names), MaxGates))
	}
	return names, nil
}

// GateOutcome is what one measurement of a gate found.
type GateOutcome string

// The five outcomes, kept apart: only Fail ever fails a step, only Pass ever
// counts toward leaving a hold.
const (
	GatePass         GateOutcome = "Pass"
	GateFail         GateOutcome = "Fail"
	GateInconclusive GateOutcome = "Inconclusive"
	GateNoData       GateOutcome = "NoData"
	GateError        GateOutcome = "Error"
)

// GateVerdict is where a gate stands once its measuring is over.
type GateVerdict string

// Gate verdicts.
const (
	GatePassed     GateVerdict = "Passed"
	GateFailed     GateVerdict = "Failed"
	GateCannotTell GateVerdict = "Inconclusive"
)

// GateStatus is one gate of the current hold, as kubegray.io/status records
// it: what its measurements found so far. The record is the hold's: a new
// step, revision or template starts it afresh.
type GateStatus struct {
	// Name is the gate's name as kubegray.io/gates gives it.
	Name string `json:"name"`
	// DryRun: measured and shown, never acted on.
	DryRun bool `json:"dryRun,omitempty"`
	// Last is the outcome of the last measurement, Value what it measured
	// (rendered for people) and Why the condition that decided it, or the
	// error.
	Last  GateOutcome `json:"last,omitempty"`
	Value string      `json:"value,omitempty"`
	Why   string      `json:"why,omitempty"`
	// Verdict is where the gate stands once it has: passed its count,
	// failed past its failureLimit, or could not tell past its
	// inconclusiveLimit; empty while it is still measuring.
	Verdict GateVerdict `json:"verdict,omitempty"`
	// Passes, Fails and Unsure count the outcomes so far; Unsure counts
	// Inconclusive, NoData and Error alike.
	Passes int32 `json:"passes"`
	Fails  int32 `json:"fails"`
	Unsure int32 `json:"unsure"`
	// At is when it was last measured, to the microsecond; the next
	// measurement is due an interval later, whoever leads then (whole
	// seconds would let it come up to a second early).
	At *metav1.MicroTime `json:"at,omitempty"`
	// Next is when the next measurement is due; nil once the gate has a
	// verdict (it is measured no more).
	Next *metav1.MicroTime `json:"next,omitempty"`
	// Baseline is what the pods gate counted when the window opened (the
	// restarts of each revision), so that later measurements count only the
	// restarts inside it.
	Baseline *PodsBaseline `json:"baseline,omitempty"`
}

// PodsBaseline is the container restarts each revision's pods had when the
// pods gate's window opened.
type PodsBaseline struct {
	Canary int64 `json:"canary"`
	Stable int64 `json:"stable"`
}

// validate checks what a reader relies on: a name, a known outcome, no
// negative count.
func (g GateStatus) validate() error {
	switch g.Last {
	case "", GatePass, GateFail, GateInconclusive, GateNoData, GateError:
	default:
		return fmt.Errorf("gate %s: outcome %s is not one of Pass, Fail, Inconclusive, NoData, Error", quoteToken(g.Name), quoteToken(string(g.Last)))
	}
	switch g.Verdict {
	case "", GatePassed, GateFailed, GateCannotTell:
	default:
		return fmt.Errorf("gate %s: verdict %s is not one of Passed, Failed, Inconclusive", quoteToken(g.Name), quoteToken(string(g.Verdict)))
	}
	if g.Name == "" || g.Passes < 0 || g.Fails < 0 || g.Unsure < 0 {
		return fmt.Errorf("gates need a name and no negative count")
	}
	return nil
}

// ReasonGateFailed is the reason of the Failure of a step whose gate failed
// more often than its failureLimit, and ReasonGateInconclusive the reason of
// the GrayHeld condition of a hold whose gate could not tell past its
// inconclusiveLimit (a person decides).
const (
	ReasonGateFailed       = "GateFailed"
	ReasonGateInconclusive = "GateInconclusive"
)

// Gate event reasons: a gate passed its count, failed past its limit, or
// could not tell past its limit (the hold stays; a person decides).
const (
	ReasonGrayGatePassed       = "GrayGatePassed"
	ReasonGrayGateFailed       = "GrayGateFailed"
	ReasonGrayGateInconclusive = "GrayGateInconclusive"
)
