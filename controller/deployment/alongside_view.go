package deployment

// alongsideView is grayMode next to the built-in controller (alongside.go): the view through
// which the gray sync sees a taken-over Deployment, and how it writes what it decided.

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// alongsideView is how the gray sync sees a taken-over Deployment: with the saved strategy,
// and paused exactly while we hold.
type alongsideView struct {
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

// apply sets the view on d, the hold read from d's kubegray.io/status.
func (v *alongsideView) apply(ctx context.Context, d *appsv1.Deployment) {
	st, _ := readGrayStatus(ctx, d)
	v.userPause = userPaused(d)
	v.paused = st.HeldAt != nil || v.userPause
	v.reapply(d)
}

// userPaused reports whether a taken-over Deployment carries its user's own pause.
func userPaused(d *appsv1.Deployment) bool {
	_, paused := d.Annotations[grayapi.PausedAnnotation]
	return paused
}

// reapply sets the view on d again after d's spec was replaced by a written Deployment.
func (v *alongsideView) reapply(d *appsv1.Deployment) {
	d.Spec.Strategy = *v.strategy.DeepCopy()
	d.Spec.Paused = v.paused
}

// cacheChecks adds instead mode's a ReplicaSet the built-in controller may have created for
// d's template and the cache still lacks (alongside_writers.go).
func (v *alongsideView) cacheChecks() cacheChecks {
	return cacheChecks{replicaSetWrites: true, live: true, newReplicaSet: true}
}

// begin sets the view on d.
func (v *alongsideView) begin(ctx context.Context, d *appsv1.Deployment) {
	v.apply(ctx, d)
}

func (v *alongsideView) stamp(st *grayapi.Status, takeover grayapi.Takeover) {
	st.Mode = grayapi.ModeAlongside
	st.TakenOver = true
	st.Takeover = takeover
}

// writeHold writes kubegray.io/status only: the Deployment stays paused on the server, so the
// hold is the status. A consumed resume request goes in the same main-resource patch, so that
// the step it asked for and its removal land together.
func (v *alongsideView) writeHold(ctx context.Context, g *graySync, paused bool) error {
	d := g.cur.d
	v.paused = paused || v.userPause
	d.Spec.Paused = v.paused
	updated := d.DeepCopy()
	if err := g.setStatusAnnotation(updated); err != nil {
		return err
	}
	var written *appsv1.Deployment
	var err error
	if g.removeResume {
		written, err = g.dc.patchDeployment(ctx, d, map[string]any{
			"metadata": map[string]any{
				"resourceVersion": d.ResourceVersion,
				"annotations": map[string]any{
					grayapi.StatusAnnotation: updated.Annotations[grayapi.StatusAnnotation],
					grayapi.ResumeAnnotation: nil,
				},
			},
		})
	} else {
		written, err = g.dc.patchGrayStatus(ctx, updated)
	}
	if err != nil {
		return fmt.Errorf("deployment %s/%s: recording the gray hold (held=%t): %w", d.Namespace, d.Name, paused, err)
	}
	g.holdWritten(written)
	return nil
}

// persistStatus patches our part of the status only, when it differs from the server's: our
// annotation, the mirrored revision and the GrayHeld condition (the rest of the status is the
// built-in controller's).
func (v *alongsideView) persistStatus(ctx context.Context, dc *DeploymentController, server, updated *appsv1.Deployment) (*appsv1.Deployment, error) {
	if alongsideStatusUnchanged(server, updated) {
		return nil, nil
	}
	return dc.patchGrayStatus(ctx, updated)
}

func (v *alongsideView) adopted(d *appsv1.Deployment) { v.reapply(d) }

// pausedByItsUser is kubegray.io/paused: the takeover's own pause hides the user's.
func (v *alongsideView) pausedByItsUser() bool { return v.userPause }

// mirrorProgressing: the Progressing condition is the built-in controller's.
func (v *alongsideView) mirrorProgressing(*appsv1.DeploymentStatus, appsv1.DeploymentCondition) {}

// serveRollbackTo: never; the sync sees a view, which rollback's Update would write to the
// server.
func (v *alongsideView) serveRollbackTo(context.Context, *graySync) (bool, error) { return false, nil }

// createsFrozen: the built-in controller must never size a ReplicaSet of ours (freeze.go).
func (v *alongsideView) createsFrozen() bool { return true }

// rollbackPaused: spec.paused is the takeover's, whatever the hold does.
func (v *alongsideView) rollbackPaused(paused bool) bool { return paused }

// writeReport: a Complete rollout is released at once, and the release patch carries the
// Complete status (releaseOnComplete); any other status is written as it is.
func (v *alongsideView) writeReport(ctx context.Context, g *graySync, updated *appsv1.Deployment) error {
	if v.releaseOnComplete && g.st.Phase == grayapi.PhaseComplete {
		return nil
	}
	return g.writeStatus(ctx, updated)
}
