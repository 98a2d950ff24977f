package gray

// What a rollout with an unreadable gray annotation (kubegray.io/percent, on-failure or hold-for)
// still does. An invalid annotation stops the rollout's progress, never the replica count an
// HPA or a person asks for, and never a way back from a failing canary: it scales, and it aborts.

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/kubegray/kubectl-gray/pkg/deployutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
	"github.com/kubegray/kubectl-gray/pkg/rollout"
)

// invalidFacts is what decideInvalid decides from.
type invalidFacts struct {
	// Problem is the parse error, which quotes the bad value and the rule.
	Problem string
	// Prev is the status read (Prev.Phase is empty when none was); HasPrev: it names a rollout.
	Prev    grayapi.Status
	HasPrev bool
	// Deployment, NewRS and OldRSs are as found (not synced: a stopped rollout does not even copy
	// annotations to its ReplicaSets).
	Deployment *appsv1.Deployment
	NewRS      *appsv1.ReplicaSet
	OldRSs     []*appsv1.ReplicaSet
	// Aborted: the rollout of the status read is aborted; Scaling: spec.replicas changed.
	Aborted, Scaling bool
	// Policy is the policy as far as it could be read (zero when it is the bad value).
	Policy grayapi.Policy
	Now    time.Time
}

// InvalidDecision is what decideInvalid decided.
type InvalidDecision struct {
	// Abort is the course of an abort asked for, or of one standing (decideCourse, on the status
	// read), carried out before anything else; what follows applies when that did not end the
	// sync. Nil when there is none to serve.
	Abort *CourseDecision
	// Ignored is the GrayResumeIgnored Warning of a request dropped: any but an abort.
	Ignored string
	// KeepHold is the GrayResumeIgnored Warning of an unpause of our hold (instead mode, where
	// spec.paused is our hold and an unpause a resume), which is dropped like any other request:
	// the hold is written back. "" when there is none.
	KeepHold string
	// Status is Invalid, the rest of the status read kept, so that fixing the value finds the
	// rollout where it stood (our hold included); its target follows a scaling event.
	Status grayapi.Status
	// Sizes is the scaling event's ReplicaSet writes (nil without one).
	Sizes *SizePlan
	// Events go out once the status is written: GrayInvalid once per distinct bad value.
	Events []Event
}

// decideInvalid decides the sync of a rollout with an unreadable annotation. A request other
// than an abort is dropped at once with the reason, never kept to be carried out by surprise
// when someone fixes the value; so is an unpause of our hold, which is written back. A change of spec.replicas keeps the share of the last valid
// status (GrayScaleSizes: 20% of 10 held at 2, scaled to 20, holds 4) or, when no valid status
// was ever written, is upstream's proportional scaling.
func decideInvalid(ctx context.Context, f invalidFacts) InvalidDecision {
	d := f.Deployment
	value, requested := d.Annotations[grayapi.ResumeAnnotation]
	req, err := grayapi.ParseResume(value)
	abortAsked := requested && err == nil && req.Abort
	var dec InvalidDecision
	if requested && !abortAsked {
		dec.Ignored = fmt.Sprintf("Ignored %s=%s: the rollout is Invalid (%s); fix the annotation first (kubectl gray abort works while Invalid)",
			grayapi.ResumeAnnotation, grayapi.QuoteValue(value), f.Problem)
	}
	var st grayapi.Status
	if f.HasPrev {
		st = f.Prev
		if abortAsked || (!requested && f.Aborted) {
			c := decideCourse(courseFacts{Status: st, Prev: f.Prev, HasPrev: true, Request: req, Policy: f.Policy, Deployment: d,
				NewRS: f.NewRS, OldRSs: f.OldRSs, Now: f.Now})
			dec.Abort = &c
		}
	}
	if f.Prev.Phase != grayapi.PhaseInvalid || f.Prev.Message != f.Problem {
		dec.Events = append(dec.Events, Event{corev1.EventTypeWarning, grayapi.ReasonGrayInvalid,
			f.Problem + "; the rollout is stopped until it is fixed or removed"})
	}
	// Left unpaused, the hold recorded would move the rollout on by surprise in the first sync
	// after the fix (decideResume: an unpause of our hold); an abort served leaves the hold itself.
	if f.HasPrev && f.Prev.HeldAt != nil && !d.Spec.Paused && dec.Abort == nil {
		dec.KeepHold = fmt.Sprintf("Ignored the unpause of revision %d's hold at %d%%: the rollout is Invalid (%s); fix the annotation first, then resume it (kubectl gray abort works while Invalid)",
			f.Prev.Revision, f.Prev.Percent, f.Problem)
	}
	st = Invalid(st, f.Problem)
	if f.Scaling {
		var plan SizePlan
		if f.HasPrev {
			st.Target = *d.Spec.Replicas
			if st.Percent < grayapi.FullPercent {
				st.Target = rollout.GrayTarget(*d.Spec.Replicas, st.Percent)
			}
			plan = planRescale(ctx, SizeFacts{Deployment: d, NewRS: f.NewRS, OldRSs: f.OldRSs, Target: st.Target,
				StableRevision: st.StableRevision, Held: d.Spec.Paused && st.HeldAt != nil, Scaling: true})
		} else {
			plan = planProportional(ctx, d, f.NewRS, f.OldRSs)
		}
		dec.Sizes = &plan
	}
	dec.Status = st
	return dec
}

// planProportional is upstream's scale() (deployutil.ScalePlan) as a SizePlan.
func planProportional(ctx context.Context, d *appsv1.Deployment, newRS *appsv1.ReplicaSet, oldRSs []*appsv1.ReplicaSet) SizePlan {
	plan := SizePlan{Kind: SizesScaled, Force: true}
	if newRS != nil {
		plan.NewSize = *newRS.Spec.Replicas
	}
	for _, step := range deployutil.ScalePlan(ctx, d, newRS, oldRSs) {
		if step.ReplicaSet == newRS {
			plan.NewSize = step.Size
			continue
		}
		plan.Old = append(plan.Old, step.ReplicaSet)
		plan.OldSizes = append(plan.OldSizes, step.Size)
	}
	return plan
}
