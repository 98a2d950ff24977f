package gray

// The gates of a hold (docs/gates.md): measured from the moment the hold settled, one
// measurement per gate per interval, the outcomes counted in kubegray.io/status so that a new
// leader carries on where the last one stopped. A hold with gates is left by hold-for only once
// every gate that is not a dry run has passed its count; a gate failing past its limit fails
// the step (Degraded, GateFailed); one that cannot tell past its limit leaves the hold to a
// person.

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegray/kubectl-gray/pkg/gates"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// GateFacts is what decideGates decides from.
type GateFacts struct {
	// Status is the rollout as identified; Prev the status read, HasPrev whether it is trusted.
	Status, Prev grayapi.Status
	HasPrev      bool
	// Gates are the gates named, resolved, in the order named; DryRun names those only
	// measured.
	Gates  []*gates.Definition
	DryRun map[string]bool
	// Canary and Stable are the pods of the canary's and the stable revision's ReplicaSets.
	Canary, Stable []gates.Pod
	// Measured holds each metric or webhook gate's latest measurement taken off the sync path
	// (by name); one that answers the measurement due is recorded.
	Measured map[string]gates.Measurement
	Now      time.Time
}

// GateDecision is what decideGates decided.
type GateDecision struct {
	// Records are the gates to record in the status (nil until the hold settles).
	Records []grayapi.GateStatus
	// Pending names the gates that are not dry runs and have not passed their count yet, with
	// their passes ("pods 1/3"); none pending is Passed.
	Pending []string
	// Failed is the step's failure when a gate failed past its failureLimit (a gate that could
	// not tell past its inconclusiveLimit keeps the hold: CannotTell of the records says so).
	Failed *grayapi.Failure
	// Events and Measured (the outcomes measured in this sync) go out once a write has recorded
	// them.
	Events   []Event
	Measured []Measured
	// Requests are the metric and webhook gates' measurements due and not yet taken: the shell
	// has them taken off the sync path, and a later sync records them.
	Requests []GateRequest
	// NextIn is when the next measurement is due (0: none).
	NextIn time.Duration
}

// GateRequest asks for a metric or webhook gate's measurement due at Due, of the hold settled
// at Opened.
type GateRequest struct {
	Gate        *gates.Definition
	Due, Opened time.Time
}

// decideGates measures the gates that are due and judges the hold by their counts. The window
// opens with the first sync that reads the hold Held: that measurement takes the pods gate's
// baseline and judges nothing; each later one, an interval after the last, counts one outcome.
// A gate stops measuring once it has passed its count or failed past its limit. Only a sync
// that reads the hold Held measures; the counts stay until the hold is left.
//
//	pods (interval 2s, count 3) held at 10:00:00 → baseline 10:00:00, passes 10:00:02, :04, :06
//	→ Passed; with hold-for 5s the hold is left at 10:00:06, not at 10:00:05.
func decideGates(f GateFacts) GateDecision {
	if len(f.Gates) == 0 {
		return GateDecision{}
	}
	p, st := f.Prev, f.Status
	// The records are the hold's from the moment it first settled, like hold-for's clock: a
	// scaling event or a pod lost under it (Progressing for a while) keeps them, unmeasured.
	open := f.HasPrev && sameStep(p, st) && p.SettledAt != nil
	var v GateDecision
	for _, def := range f.Gates {
		rec := grayapi.GateStatus{Name: def.Name, DryRun: f.DryRun[def.Name]}
		if open {
			rec = priorRecord(p.Gates, rec)
			if p.Phase == grayapi.PhaseHeld && verdict(def, rec) == "" {
				rec = v.measure(f, def, rec, p.SettledAt.Time)
			}
			v.Records = append(v.Records, rec)
		}
		if rec.DryRun {
			continue
		}
		if verdict(def, rec) == grayapi.GateFailed {
			v.Failed = &grayapi.Failure{Reason: grayapi.ReasonGateFailed, Message: fmt.Sprintf(
				"gate %s failed %d times (failureLimit %d): %s; measured %s", def.Name, rec.Fails, def.FailureLimit, rec.Why, rec.Value)}
		}
		if rec.Passes < def.Count {
			v.Pending = append(v.Pending, fmt.Sprintf("%s %d/%d", def.Name, rec.Passes, def.Count))
		}
	}
	return v
}

// CannotTell says which gates of records that are not dry runs could not tell past their limit
// (verdict Inconclusive) and what they found last; empty when none. The status message and the
// GrayHeld condition of such a hold both say it.
func CannotTell(records []grayapi.GateStatus) string {
	var out []string
	for _, g := range records {
		if !g.DryRun && g.Verdict == grayapi.GateCannotTell {
			out = append(out, fmt.Sprintf("gate %s could not tell %d times (%s: %s)", g.Name, g.Unsure, g.Last, g.Why))
		}
	}
	return strings.Join(out, "; ")
}

// Measured is one measurement's outcome, for the metrics.
type Measured struct {
	Outcome grayapi.GateOutcome
	DryRun  bool
}

// Passed reports whether every gate that is not a dry run has passed its count (true without
// such gates): the zero verdict, a Deployment without gates, has.
func (v GateDecision) Passed() bool { return len(v.Pending) == 0 }

// priorRecord is the record of fresh's gate in the status read, or fresh when there is none.
func priorRecord(prior []grayapi.GateStatus, fresh grayapi.GateStatus) grayapi.GateStatus {
	for _, r := range prior {
		if r.Name == fresh.Name {
			r.DryRun = fresh.DryRun
			return r
		}
	}
	return fresh
}

// verdict is where rec stands by def's count and limits (empty: more to measure); a failure wins
// over the rest.
func verdict(def *gates.Definition, rec grayapi.GateStatus) grayapi.GateVerdict {
	switch {
	case rec.Fails > def.FailureLimit:
		return grayapi.GateFailed
	case rec.Unsure > def.InconclusiveLimit:
		return grayapi.GateCannotTell
	case rec.Passes >= def.Count:
		return grayapi.GatePassed
	}
	return ""
}

// measure takes rec's measurement when it is due (the first takes the baseline and judges
// nothing), announces a limit or a count just reached, and keeps NextIn while the gate has more
// to measure.
func (v *GateDecision) measure(f GateFacts, def *gates.Definition, rec grayapi.GateStatus, opened time.Time) grayapi.GateStatus {
	if rec.At != nil {
		if due := rec.At.Add(def.Interval); f.Now.Before(due) {
			v.next(due.Sub(f.Now))
			return rec
		}
	}
	defer func() {
		if verdict(def, rec) == "" {
			v.next(def.Interval)
		}
	}()
	if rec.At == nil {
		rec.At, rec.Next = new(metav1.NewMicroTime(f.Now)), new(metav1.NewMicroTime(f.Now.Add(def.Interval)))
		if def.Kind == gates.KindPods {
			rec.Baseline = &grayapi.PodsBaseline{Canary: gates.TotalRestarts(f.Canary), Stable: gates.TotalRestarts(f.Stable)}
		}
		rec.Why = "window opened; the first outcome comes an interval later"
		return rec
	}
	at := f.Now
	switch def.Kind {
	case gates.KindMetric, gates.KindWebhook:
		due := rec.At.Add(def.Interval)
		m, ok := f.Measured[def.Name]
		if !ok || !m.Answers(f.Status.Revision, f.Status.Step, due) {
			v.Requests = append(v.Requests, GateRequest{Gate: def, Due: due, Opened: opened})
			return rec
		}
		at, rec.Last, rec.Value, rec.Why = m.At, m.Outcome, m.Value, m.Why
	default:
		var base grayapi.PodsBaseline
		if rec.Baseline != nil {
			base = *rec.Baseline
		}
		canary := gates.CountPods(f.Canary, opened, base.Canary)
		stable := gates.CountPods(f.Stable, opened, base.Stable)
		rec.Last, rec.Value, rec.Why = def.Judge(canary, stable)
	}
	rec.At, rec.Next = new(metav1.NewMicroTime(at)), new(metav1.NewMicroTime(at.Add(def.Interval)))
	v.Measured = append(v.Measured, Measured{Outcome: rec.Last, DryRun: rec.DryRun})
	switch rec.Last {
	case grayapi.GatePass:
		rec.Passes++
		if rec.Passes == def.Count {
			v.event(rec, corev1.EventTypeNormal, grayapi.ReasonGrayGatePassed, "gate %s passed %d times: %s", def.Name, rec.Passes, rec.Value)
		}
	case grayapi.GateFail:
		rec.Fails++
		if rec.Fails == def.FailureLimit+1 {
			v.event(rec, corev1.EventTypeWarning, grayapi.ReasonGrayGateFailed, "gate %s failed: %s; measured %s", def.Name, rec.Why, rec.Value)
		}
	default:
		rec.Unsure++
		if rec.Unsure == def.InconclusiveLimit+1 {
			v.event(rec, corev1.EventTypeWarning, grayapi.ReasonGrayGateInconclusive, "gate %s could not tell %d times: %s: %s; "+
				"kubectl gray resume accepts the canary, kubectl gray undo rejects it", def.Name, rec.Unsure, rec.Last, rec.Why)
		}
	}
	if rec.Verdict = verdict(def, rec); rec.Verdict != "" {
		rec.Next = nil
	}
	return rec
}

// next keeps the soonest measurement due.
func (v *GateDecision) next(in time.Duration) {
	if v.NextIn == 0 || in < v.NextIn {
		v.NextIn = in
	}
}

// event adds an event about rec; a dry run's says so and is never a Warning.
func (v *GateDecision) event(rec grayapi.GateStatus, kind, reason, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if rec.DryRun {
		kind, msg = corev1.EventTypeNormal, "dry run: "+msg
	}
	v.Events = append(v.Events, Event{kind, reason, msg})
}
