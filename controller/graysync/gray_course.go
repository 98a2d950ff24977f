package graysync

// Carrying out the sync's course (controller/gray: DecideSync's decideCourse): an undo written,
// an abort started or standing, a retry, or on to the move.

import (
	"context"
	"fmt"

	"k8s.io/klog/v2"

	"github.com/kubegray/kubectl-gray/controller/gray"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// takeCourse carries out c, and reports whether that ended the sync: an undo's write, or an
// aborted sync. A retry goes on to the move.
func (g *graySync) takeCourse(ctx context.Context, c gray.CourseDecision) (bool, error) {
	d := g.cur.d
	value := d.Annotations[grayapi.ResumeAnnotation]
	if c.Ignored != "" {
		g.dropRequest(fmt.Sprintf("Ignored %s=%s: %s", grayapi.ResumeAnnotation, grayapi.QuoteValue(value), c.Ignored))
	} else if c.Consume {
		g.removeResume = true
	}
	switch c.Course {
	case gray.CourseUndo:
		if err := g.writeRollback(ctx, c.UndoTo); err != nil {
			return true, fmt.Errorf("deployment %s/%s: rolling revision %d back to stable revision %d (%s=%q): %w", d.Namespace, d.Name,
				g.st.Revision, g.st.StableRevision, grayapi.ResumeAnnotation, value, err)
		}
		klog.FromContext(ctx).V(2).Info("Gray rollout undone on request", "deployment", klog.KObj(d), "revision", g.st.Revision,
			"stableRevision", g.st.StableRevision, "replicaSet", klog.KObj(c.UndoTo))
		return true, nil
	case gray.CourseRetry:
		return false, g.retry(ctx)
	case gray.CourseAbort:
		if err := g.startAbort(ctx, c.Failure); err != nil {
			return true, err
		}
		return true, g.syncAborted(ctx, c.Aborted)
	case gray.CourseAborted:
		return true, g.syncAborted(ctx, c.Aborted)
	}
	return false, nil
}
