package alongside

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/kubegray/kubectl-gray/controller/gray"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// View is how the gray sync sees a taken-over Deployment, with the saved strategy and paused
// exactly while we hold, and how it writes what it decided: the hold and our part of the status
// only (the server keeps the Deployment paused on Recreate; the rest of its status is the
// built-in controller's). controller/graysync's alongside mode carries a sync out through it.
type View struct {
	c        *Controller
	strategy appsv1.DeploymentStrategy
	paused   bool
	// userPause: the Deployment's user paused it (grayapi.PausedAnnotation); it stays paused
	// in the view whatever our hold does.
	userPause bool
	// releaseOnComplete: a Complete rollout is released at once, and the release patch
	// carries the Complete status, so the sync does not write it first (a Complete status on a
	// Deployment still paused on Recreate would be a lie to whoever waits for it).
	releaseOnComplete bool
}

// Begin sets the view on d before the sync reads it, the hold read from d's kubegray.io/status.
func (v *View) Begin(d *appsv1.Deployment) {
	st, _, _ := gray.StoredStatus(d)
	v.userPause = userPaused(d)
	v.paused = st.HeldAt != nil || v.userPause
	v.Adopted(d)
}

// userPaused reports whether a taken-over Deployment carries its user's own pause.
func userPaused(d *appsv1.Deployment) bool {
	_, paused := d.Annotations[grayapi.PausedAnnotation]
	return paused
}

// Adopted sets the view on d again after d's spec was replaced by a written Deployment.
func (v *View) Adopted(d *appsv1.Deployment) {
	d.Spec.Strategy = *v.strategy.DeepCopy()
	d.Spec.Paused = v.paused
}

// Stamp records alongside mode and the takeover in the status about to be written.
func (v *View) Stamp(st *grayapi.Status) {
	st.Mode = grayapi.ModeAlongside
	st.TakenOver = true
	st.Takeover = v.c.takeover
}

// WriteHold writes the hold as kubegray.io/status only (updated carries it: d with this sync's
// status): the Deployment stays paused on the server, so the hold is the status, and d, the
// view, is paused exactly while we hold. A consumed resume request (removeResume) goes in the
// same main-resource patch, so that the step it asked for and its removal land together.
func (v *View) WriteHold(ctx context.Context, d, updated *appsv1.Deployment, paused, removeResume bool) (*appsv1.Deployment, error) {
	v.paused = paused || v.userPause
	d.Spec.Paused = v.paused
	var written *appsv1.Deployment
	var err error
	if removeResume {
		written, err = v.c.patchDeployment(ctx, d, map[string]any{
			"metadata": map[string]any{
				"resourceVersion": d.ResourceVersion,
				"annotations": map[string]any{
					grayapi.StatusAnnotation: updated.Annotations[grayapi.StatusAnnotation],
					grayapi.ResumeAnnotation: nil,
				},
			},
		})
	} else {
		written, err = v.c.patchGrayStatus(ctx, updated)
	}
	if err != nil {
		return nil, fmt.Errorf("deployment %s/%s: recording the gray hold (held=%t): %w", d.Namespace, d.Name, paused, err)
	}
	return written, nil
}

// PersistStatus patches our part of the status only, when it differs from server's: our
// annotation, the mirrored revision and the GrayHeld condition (the rest of the status is the
// built-in controller's). It writes nothing and returns nil when nothing differs.
func (v *View) PersistStatus(ctx context.Context, server, updated *appsv1.Deployment) (*appsv1.Deployment, error) {
	if grayPartUnchanged(server, updated) {
		return nil, nil
	}
	return v.c.patchGrayStatus(ctx, updated)
}

// PausedByItsUser is kubegray.io/paused: the takeover's own pause hides the user's.
func (v *View) PausedByItsUser() bool { return v.userPause }

// ReleasesOnComplete reports whether a Complete rollout is released at once, its release patch
// carrying the Complete status: the sync then does not write that status first.
func (v *View) ReleasesOnComplete() bool { return v.releaseOnComplete }
