package gray

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// undoFacts is what decideUndo decides from.
type undoFacts struct {
	// Status is the rollout in flight (identify); Request is kubegray.io/resume parsed.
	Status  grayapi.Status
	Request grayapi.Resume
	NewRS   *appsv1.ReplicaSet
	OldRSs  []*appsv1.ReplicaSet
}

// undoDecision is what decideUndo decided; the zero value is no undo asked.
type undoDecision struct {
	// To is the ReplicaSet whose template goes back on the Deployment.
	To *appsv1.ReplicaSet
	// Ignored says why an undo request cannot be served (GrayResumeIgnored).
	Ignored string
}

// decideUndo serves "<revision>:undo", the request of a tool that can write nothing but the
// Deployment (an Argo CD resource action): the stable ReplicaSet's template goes back, as
// `kubectl gray undo` puts it. Revision 3 held at 20% with stable revision 1's ReplicaSet left
// undoes to it; "2:undo" then, or on a first rollout, or with revision 1's ReplicaSet deleted, is
// ignored with the reason.
func decideUndo(f undoFacts) undoDecision {
	st, req := f.Status, f.Request
	if !req.Undo {
		return undoDecision{}
	}
	stable := StableToGoBackTo(f.OldRSs, st.StableRevision)
	switch {
	case req.Revision != st.Revision:
		return undoDecision{Ignored: fmt.Sprintf("revision %d is not the rollout in flight (revision %d)", req.Revision, st.Revision)}
	case f.NewRS == nil || st.StableRevision <= 0 || st.StableRevision == st.Revision:
		return undoDecision{Ignored: fmt.Sprintf("revision %d is the stable one: nothing to roll back to", st.Revision)}
	case stable == nil:
		return undoDecision{Ignored: fmt.Sprintf("no replica set of stable revision %d is left", st.StableRevision)}
	}
	return undoDecision{To: stable}
}
