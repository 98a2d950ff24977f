package plugin

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// PolicyView is the opt-in automation of a gray Deployment, from
// kubegray.io/on-failure and kubegray.io/hold-for.
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
	// long a settled hold lasts before gray-controller resumes it to the next
	// hold point. Absent when holds wait for a resume, or when the annotation
	// is invalid.
	HoldFor string `json:"holdFor,omitempty"`
	// HoldForError quotes an invalid kubegray.io/hold-for and its rule.
	HoldForError string `json:"holdForError,omitempty"`
	// ResumesAt is when gray-controller resumes the current hold by itself:
	// when the hold settled, plus HoldFor. Absent unless Held with HoldFor,
	// and while UserPaused.
	ResumesAt *metav1.Time `json:"resumesAt,omitempty"`
	// UserPaused is true while a taken-over Deployment carries its user's own
	// pause (kubegray.io/paused), which keeps a timed hold past HoldFor.
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
	if value, present := annotations[grayapi.HoldForAnnotation]; present {
		holdFor, err := grayapi.ParseHoldFor(value)
		if err != nil {
			p.HoldForError = err.Error()
			return p
		}
		p.HoldFor = holdFor.String()
		if st == nil {
			return p
		}
		if at, timed := grayapi.TimedResumeAt(*st, holdFor, p.UserPaused); timed {
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
// while a timed hold runs, e.g. "10m0s, resumes by itself in 4m10s".
func holdForText(p *PolicyView, message string, now time.Time) string {
	switch {
	case p.HoldForError != "":
		return invalidText(p.HoldForError, message)
	case p.HoldFor == "":
		return "until 'kubectl gray resume'"
	case p.UserPaused:
		return fmt.Sprintf("%s, but not while you keep it paused (%s)", p.HoldFor, grayapi.PausedAnnotation)
	case p.ResumesAt == nil:
		return p.HoldFor
	}
	left := p.ResumesAt.Sub(now)
	if left <= 0 {
		// gray-controller resumes it at its next sync of the Deployment.
		return p.HoldFor + ", resume due now"
	}
	return fmt.Sprintf("%s, resumes by itself in %s", p.HoldFor, duration.HumanDuration(left))
}

func invalidText(err, message string) string {
	if err == message {
		return "invalid (see Message)"
	}
	return err
}
