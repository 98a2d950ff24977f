package plugin

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// PolicyView is the opt-in automation of a gray Deployment, from
// kubegray.io/on-failure, kubegray.io/hold-for and the hold points' own durations.
type PolicyView struct {
	// OnFailure is what gray-controller does when the rollout becomes
	// Degraded: "hold" (also when kubegray.io/on-failure is absent) reports
	// it and changes nothing, "abort" (also for the earlier "rollback") sizes
	// the rollout back to the stable revision, keeping the template. "" when
	// the annotation is invalid.
	OnFailure string `json:"onFailure"`
	// OnFailureError quotes an invalid kubegray.io/on-failure and its rule.
	OnFailureError string `json:"onFailureError,omitempty"`
	// HoldFor is kubegray.io/hold-for as a Go duration, e.g. "10m0s": how
	// long a settled hold at a hold point without a duration of its own lasts
	// before gray-controller resumes it to the next hold point. Absent when
	// such holds wait for a resume, or when the annotation is invalid.
	HoldFor string `json:"holdFor,omitempty"`
	// HoldForError quotes an invalid kubegray.io/hold-for and its rule.
	HoldForError string `json:"holdForError,omitempty"`
	// CurrentHoldFor is how long the current hold lasts by itself, as a Go
	// duration: the one gray-controller recorded when the hold settled (the
	// hold point's own, else HoldFor, as they were then), so an edit since
	// applies from the next hold point; "0s" when only a resume ends it.
	// Absent unless Held and settled.
	CurrentHoldFor string `json:"currentHoldFor,omitempty"`
	// ResumesAt is when gray-controller resumes the current hold by itself:
	// when the hold settled, plus CurrentHoldFor. Absent unless Held and
	// timed, and while UserPaused.
	ResumesAt *metav1.Time `json:"resumesAt,omitempty"`
	// UserPaused is true while a taken-over Deployment carries its user's own
	// pause (kubegray.io/paused), which keeps a timed hold past its duration.
	UserPaused bool `json:"userPaused,omitempty"`
}

// policyView reads the policy annotations. st is the controller's status of
// the rollout shown (nil when it has none for it). Each annotation is parsed
// on its own, so a bad value of one still shows the other.
func policyView(annotations map[string]string, st *grayapi.Status, takenOver bool) *PolicyView {
	p := &PolicyView{}
	if takenOver {
		_, p.UserPaused = annotations[grayapi.PausedAnnotation]
	}
	value, present := annotations[grayapi.OnFailureAnnotation]
	if onFailure, err := grayapi.ParseOnFailure(value, present); err != nil {
		p.OnFailureError = err.Error()
	} else {
		p.OnFailure = string(onFailure)
	}
	var policy grayapi.Policy
	if value, present := annotations[grayapi.HoldForAnnotation]; present {
		holdFor, err := grayapi.ParseHoldFor(value)
		if err != nil {
			p.HoldForError = err.Error()
			return p
		}
		policy.HoldFor = holdFor
		p.HoldFor = holdFor.String()
	}
	// An invalid kubegray.io/percent is reported with the hold points; a hold it left
	// timed still shows its recorded duration.
	if points, err := grayapi.ParseHoldPoints(annotations[grayapi.PercentAnnotation]); err == nil {
		policy.PointHoldFor = points.HoldFor
	}
	if st == nil || st.Phase != grayapi.PhaseHeld || st.SettledAt == nil {
		return p
	}
	p.CurrentHoldFor = "0s"
	// The annotations time only a hold whose status recorded no duration (written before
	// durations were); TimedResumeAt prefers the recorded one. It is asked without the
	// user's pause so that the duration shows while the pause keeps the hold.
	if at, timed := grayapi.TimedResumeAt(*st, policy.HoldForAt(st.Step), false); timed {
		p.CurrentHoldFor = at.Sub(st.SettledAt.Time).String()
		if !p.UserPaused {
			resumesAt := metav1.NewTime(at)
			p.ResumesAt = &resumesAt
		}
	}
	return p
}

// onFailureText is the "On failure" line of the summary. message is the
// controller's, which for an invalid value usually is the very error; it is
// said once.
func onFailureText(p *PolicyView, message string) string {
	switch {
	case p.OnFailureError != "":
		return invalidText(p.OnFailureError, message)
	case p.OnFailure == string(grayapi.OnFailureAbort):
		return "abort (canary to 0, stable back to all replicas, template kept)"
	}
	return "hold (report Degraded, change nothing)"
}

// holdForText is the "Hold for" line of the summary, with the time left
// while a timed hold runs, e.g. "10m0s, resumes by itself in 4m10s", or
// "5m0s for this hold, ..." when the current hold's duration is not
// kubegray.io/hold-for's. pointsTimed says some hold point names a duration
// of its own, so that hold-for is said to apply only to the others.
func holdForText(p *PolicyView, message string, pointsTimed bool, now time.Time) string {
	others := "until 'kubectl gray resume'"
	if p.HoldFor != "" {
		others = p.HoldFor
	}
	if pointsTimed {
		others += " where a hold point names no duration"
	}
	switch {
	case p.HoldForError != "":
		return invalidText(p.HoldForError, message)
	case p.CurrentHoldFor == "" && p.UserPaused && (p.HoldFor != "" || pointsTimed):
		return fmt.Sprintf("%s, but not while you keep it paused (%s)", others, grayapi.PausedAnnotation)
	case p.CurrentHoldFor == "", p.CurrentHoldFor == "0s" && p.HoldFor == "" && !pointsTimed:
		return others
	}
	current, rest := p.CurrentHoldFor, ""
	if current != p.HoldFor {
		current += " for this hold"
		if p.HoldFor != "" {
			rest = "; " + others
		}
	}
	if p.CurrentHoldFor == "0s" {
		// It settled before anything timed it; the annotations time the holds after it.
		return "until 'kubectl gray resume' for this hold" + rest
	}
	if p.UserPaused {
		return fmt.Sprintf("%s, but not while you keep it paused (%s)%s", current, grayapi.PausedAnnotation, rest)
	}
	left := p.ResumesAt.Sub(now)
	if left <= 0 {
		// gray-controller resumes it at its next sync of the Deployment.
		return current + ", resume due now" + rest
	}
	return fmt.Sprintf("%s, resumes by itself in %s%s", current, duration.HumanDuration(left), rest)
}

func invalidText(err, message string) string {
	if err == message {
		return "invalid (see Message)"
	}
	return err
}
