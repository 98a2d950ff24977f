package grayapi

import (
	"strconv"
	"strings"
)

const resumeRule = `must be "<revision>:next", "<revision>:full", "<revision>:undo", "<revision>:abort" or "<revision>:retry" with a revision of 1 or more, e.g. "3:next"`

// Resume is a request, written to kubegray.io/resume, to leave the hold of
// one revision: onwards, or back to the stable revision. The undo is for
// tools that can write nothing but the Deployment (an Argo CD resource
// action): the controller writes the stable ReplicaSet's template, as
// `kubectl gray undo` does from outside.
type Resume struct {
	// Revision is the deployment.kubernetes.io/revision the request is for.
	// The controller ignores (and deletes) a request for any other revision,
	// so a request cannot leak into the next rollout.
	Revision int64
	// Full completes the rollout; otherwise it moves to the next hold point
	// (or to the end after the last one).
	Full bool
	// Undo rolls the revision back to the stable one instead.
	Undo bool
	// Abort aborts the rollout of the revision (PhaseAborted): sizes back to
	// the stable revision, the template left as it is.
	Abort bool
	// Retry starts an aborted rollout again at its first hold point.
	Retry bool
}

// ParseResume parses a kubegray.io/resume value. Surrounding spaces are
// tolerated; everything else is strict:
//
//	"3:next"  → Resume{Revision: 3}
//	"12:full" → Resume{Revision: 12, Full: true}
//	"4:undo"  → Resume{Revision: 4, Undo: true}
//	"4:abort" → Resume{Revision: 4, Abort: true}
//	"4:retry" → Resume{Revision: 4, Retry: true}
//	"3", "next", "0:next", "-1:full", "3:Next", "3:next:x" → *InvalidValueError
func ParseResume(value string) (Resume, error) {
	fail := func(detail string) (Resume, error) {
		return Resume{}, &InvalidValueError{Key: ResumeAnnotation, Value: value, Rule: resumeRule, Detail: detail}
	}
	rev, action, ok := strings.Cut(strings.TrimSpace(value), ":")
	if !ok {
		return fail("the \":\" is missing")
	}
	if rev == "" || strings.TrimLeft(rev, "0123456789") != "" {
		return fail("revision " + quoteToken(rev) + " is not a positive integer")
	}
	n, err := strconv.ParseInt(rev, 10, 64)
	if err != nil || n < 1 {
		return fail("revision " + quoteToken(rev) + " is not a positive integer")
	}
	switch action {
	case "next":
		return Resume{Revision: n}, nil
	case "full":
		return Resume{Revision: n, Full: true}, nil
	case "undo":
		return Resume{Revision: n, Undo: true}, nil
	case "abort":
		return Resume{Revision: n, Abort: true}, nil
	case "retry":
		return Resume{Revision: n, Retry: true}, nil
	}
	return fail("action " + quoteToken(action) + ` is not "next", "full", "undo", "abort" or "retry"`)
}

// FormatResume renders a request the way ParseResume reads it:
// Resume{Revision: 3} → "3:next", Resume{Revision: 3, Full: true} → "3:full",
// Resume{Revision: 3, Undo: true} → "3:undo".
func FormatResume(r Resume) string {
	action := "next"
	switch {
	case r.Undo:
		action = "undo"
	case r.Abort:
		action = "abort"
	case r.Retry:
		action = "retry"
	case r.Full:
		action = "full"
	}
	return strconv.FormatInt(r.Revision, 10) + ":" + action
}
