package graysync

// kubegray.io/status is the controller's: a status someone else wrote (kubectl annotate, an
// edit, an apply that carries one) is not trusted for the rollout in flight. The rollout is
// re-derived from the ReplicaSets instead (identify), and a Warning names the writer. Without
// this, a status forged to a later step widened the canary past holds nobody resumed. Alongside
// mode's guard policy refuses such writes at admission too.

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/kubegray/kubectl-gray/controller/deployment"
	"github.com/kubegray/kubectl-gray/pkg/deployutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// foreignStatusWriter names the field manager that owns kubegray.io/status on d when it is not
// self (the last writer that changed it, for an update; the applier, for an apply); "" when self
// owns it, nobody does, or d is nil.
func foreignStatusWriter(d *appsv1.Deployment, self string) string {
	if d == nil {
		return ""
	}
	other := ""
	for _, entry := range d.ManagedFields {
		if entry.FieldsV1 == nil || !deployutil.OwnsPath(entry.FieldsV1.GetRawBytes(), grayapi.StatusFieldPath) {
			continue
		}
		if entry.Manager == self {
			// Owned together (applied with the same value): it is still ours.
			return ""
		}
		if other == "" {
			other = entry.Manager
		}
	}
	return other
}

// warnForeignStatus says that the status of revision rev, the rollout in flight, was written by
// someone other than this controller and set aside (gray.DistrustForeign), naming who.
func (g *graySync) warnForeignStatus(ctx context.Context, rev int64) error {
	if err := deployment.ConfirmLive(ctx); err != nil {
		return err
	}
	g.gs.eventRecorder.Eventf(g.cur.d, corev1.EventTypeWarning, grayapi.ReasonGrayStatusDistrusted,
		"%s was written by %q, not by gray-controller: re-deriving revision %d's step and hold from its replica sets",
		grayapi.StatusAnnotation, g.in.statusWriter, rev)
	klog.FromContext(ctx).V(2).Info("Ignoring a gray status written by another manager", "deployment", klog.KObj(g.cur.d),
		"manager", g.in.statusWriter, "revision", rev)
	return nil
}
