package deployment

// The seam between the two modes in a gray sync. The sync itself (gray.go) is the same in both;
// what differs is how its decisions reach the server. Instead mode owns the whole Deployment:
// the hold is spec.paused and the status is written whole. Alongside mode (alongside.go) runs
// next to the built-in controller on a taken-over Deployment: the hold lives in
// kubegray.io/status only and only our part of the status is written. The ReplicaSet writes are
// the same in both: in alongside mode their sizes are frozen to everyone else (freeze.go).
//
// What else alongside mode does differently is policy, and reads as such where it applies
// (g.view != nil): the user's own pause (gray_deadline.go: pausedByUser), the Progressing
// condition that stays the built-in controller's (reportDeadlineCondition), the deprecated
// rollback annotation (gray.go: run), ReplicaSets created frozen (gray_scale.go), ReplicaSet
// writes the built-in controller's annotation writes made conflict (alongside_writers.go), the
// rollback on failure that leaves spec.paused to the takeover (gray_failure.go), and the
// Complete status the release patch carries (gray_status.go: finish).

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// grayMode is how one mode writes what a gray sync decided.
type grayMode interface {
	// stamp records the mode in the status about to be written.
	stamp(st *grayapi.Status, takeover grayapi.Takeover)
	// writeHold writes the hold (paused or not) with this sync's status and a consumed resume
	// request, in one write.
	writeHold(ctx context.Context, g *graySync, paused bool) error
	// statusUnchanged reports whether writing updated would change nothing of what is ours.
	statusUnchanged(server, updated *appsv1.Deployment) bool
	// persistStatus writes what of updated's status side is ours.
	persistStatus(ctx context.Context, dc *DeploymentController, updated *appsv1.Deployment) (*appsv1.Deployment, error)
	// adopted sets the mode's view on d, whose spec was just replaced by a written Deployment.
	adopted(d *appsv1.Deployment)
}

// mode is how this sync writes what it decided: alongside mode's view, or instead mode.
func (g *graySync) mode() grayMode {
	if g.view != nil {
		return g.view
	}
	return insteadMode{}
}

// insteadMode is grayMode with no other deployment controller: every write is upstream's.
type insteadMode struct{}

func (insteadMode) stamp(st *grayapi.Status, _ grayapi.Takeover) {
	st.Mode = grayapi.ModeInstead
}

// writeHold writes spec.paused, the consumed resume request and the status in one
// main-resource Update (the only way to change spec.paused; it bumps the generation).
func (insteadMode) writeHold(ctx context.Context, g *graySync, paused bool) error {
	d := g.d.DeepCopy()
	d.Spec.Paused = paused
	if g.removeResume {
		delete(d.Annotations, grayapi.ResumeAnnotation)
	}
	if err := g.setStatusAnnotation(d); err != nil {
		return err
	}
	written, err := g.dc.client.AppsV1().Deployments(d.Namespace).Update(ctx, d, metav1.UpdateOptions{FieldManager: g.dc.fieldManager})
	if err != nil {
		return fmt.Errorf("deployment %s/%s: setting paused=%t for the gray rollout: %w", d.Namespace, d.Name, paused, err)
	}
	g.holdWritten(written)
	return nil
}

func (insteadMode) statusUnchanged(server, updated *appsv1.Deployment) bool {
	return statusUnchanged(server, updated)
}

// persistStatus writes all of the status, through UpdateStatus.
func (insteadMode) persistStatus(ctx context.Context, dc *DeploymentController, updated *appsv1.Deployment) (*appsv1.Deployment, error) {
	return dc.client.AppsV1().Deployments(updated.Namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{FieldManager: dc.fieldManager})
}

func (insteadMode) adopted(*appsv1.Deployment) {}

// alongsideView is grayMode next to the built-in controller (alongside.go has its state).

func (v *alongsideView) stamp(st *grayapi.Status, takeover grayapi.Takeover) {
	st.Mode = grayapi.ModeAlongside
	st.TakenOver = true
	st.Takeover = takeover
}

// writeHold writes kubegray.io/status only: the Deployment stays paused on the server, so the
// hold is the status. A consumed resume request goes in the same main-resource patch, so that
// the step it asked for and its removal land together.
func (v *alongsideView) writeHold(ctx context.Context, g *graySync, paused bool) error {
	d := g.d
	v.paused = paused || v.userPaused
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

// statusUnchanged compares only our annotation, the mirrored revision and the GrayHeld
// condition: the rest of the status is the built-in controller's.
func (v *alongsideView) statusUnchanged(server, updated *appsv1.Deployment) bool {
	return alongsideStatusUnchanged(server, updated)
}

// persistStatus patches our part of the status only.
func (v *alongsideView) persistStatus(ctx context.Context, dc *DeploymentController, updated *appsv1.Deployment) (*appsv1.Deployment, error) {
	return dc.patchGrayStatus(ctx, updated)
}

func (v *alongsideView) adopted(d *appsv1.Deployment) { v.reapply(d) }
