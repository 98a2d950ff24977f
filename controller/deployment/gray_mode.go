package deployment

// The seam between the two modes in a gray sync. The sync itself (gray.go) is the same in both;
// what differs is how its decisions reach the server. Instead mode owns the whole Deployment:
// the hold is spec.paused, the status is written whole, and a step's ReplicaSet writes go in
// upstream's order. Alongside mode (alongside.go) runs next to the built-in controller on a
// taken-over Deployment: the hold lives in kubegray.io/status only, only our part of the status
// is written, and the writes are ordered so that the built-in controller has no lone
// ReplicaSet to resize.
//
// What else alongside mode does differently is policy, and reads as such where it applies
// (g.view != nil): the user's own pause (gray_deadline.go: pausedByUser), the Progressing
// condition that stays the built-in controller's (reportDeadlineCondition), the deprecated
// rollback annotation (gray.go: run), a hold the built-in controller took apart (gray_scale.go:
// restore), ReplicaSet writes another writer made conflict (alongside_writers.go), the
// rollback on failure that leaves spec.paused to the takeover (gray_failure.go), and the
// Complete status the release patch carries (gray_status.go: finish).

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/kubegray/kubectl-gray/pkg/grayapi"
	"github.com/kubegray/kubectl-gray/pkg/rollout"
)

// grayMode is how one mode writes what a gray sync decided.
type grayMode interface {
	// stamp records the mode in the status about to be written.
	stamp(st *grayapi.Status, takeover Takeover)
	// writeHold writes the hold (paused or not) with this sync's status and a consumed resume
	// request, in one write.
	writeHold(ctx context.Context, g *graySync, paused bool) error
	// statusUnchanged reports whether writing updated would change nothing of what is ours.
	statusUnchanged(server, updated *appsv1.Deployment) bool
	// persistStatus writes what of updated's status side is ours.
	persistStatus(ctx context.Context, dc *DeploymentController, updated *appsv1.Deployment) (*appsv1.Deployment, error)
	// writeOrder lists a planned step's ReplicaSet writes in the order they go.
	writeOrder(ctx context.Context, g *graySync, newSize int32, old []*appsv1.ReplicaSet, oldSizes []int32) []rollout.GrayWrite
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

func (insteadMode) stamp(st *grayapi.Status, _ Takeover) {
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

// writeOrder is upstream's: the new ReplicaSet (if any), then the old ones in the given order.
func (insteadMode) writeOrder(_ context.Context, g *graySync, newSize int32, _ []*appsv1.ReplicaSet, oldSizes []int32) []rollout.GrayWrite {
	var writes []rollout.GrayWrite
	if g.newRS != nil {
		writes = append(writes, rollout.GrayWrite{New: true, Size: newSize})
	}
	for i, size := range oldSizes {
		writes = append(writes, rollout.GrayWrite{Old: i, Size: size})
	}
	return writes
}

func (insteadMode) adopted(*appsv1.Deployment) {}

// alongsideView is grayMode next to the built-in controller (alongside.go has its state).

func (v *alongsideView) stamp(st *grayapi.Status, takeover Takeover) {
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

// writeOrder is rollout.GrayAlongsideWrites': no write may leave the built-in controller a
// lone ReplicaSet to resize (see alongside.go).
func (v *alongsideView) writeOrder(ctx context.Context, g *graySync, newSize int32, old []*appsv1.ReplicaSet, oldSizes []int32) []rollout.GrayWrite {
	replicas := *g.d.Spec.Replicas
	maxNew, _ := rollout.GrayCaps(replicas, g.st.Target)
	in := rollout.GrayWritesInput{
		Replicas: replicas, HasNew: g.newRS != nil, MaxNew: maxNew,
		Current: rollout.GrayStep{Old: specsOf(old)},
		Planned: rollout.GrayStep{New: newSize, Old: oldSizes},
	}
	if g.newRS != nil {
		in.Current.New = *g.newRS.Spec.Replicas
	}
	writes := rollout.GrayAlongsideWrites(in)
	for _, w := range writes {
		planned := newSize
		if !w.New {
			planned = oldSizes[w.Old]
		}
		if w.Size != planned {
			klog.FromContext(ctx).V(2).Info("Adjusted gray step so the built-in controller has no lone ReplicaSet to resize",
				"deployment", klog.KObj(g.d), "replicas", replicas, "plannedNew", newSize, "plannedOld", oldSizes, "writes", writes)
			break
		}
	}
	return writes
}

func (v *alongsideView) adopted(d *appsv1.Deployment) { v.reapply(d) }
