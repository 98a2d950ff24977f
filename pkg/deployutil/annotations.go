package deployutil

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// skippedAnnotations are controller-owned or client-owned keys that must not
// travel between a Deployment and its ReplicaSets. The gray status, resume
// request and saved strategy describe the live Deployment only: copied onto a
// ReplicaSet they would rewrite it on every status change, and copied back by
// a rollback they would resurrect a stale rollout state or takeover.
var skippedAnnotations = map[string]bool{
	LastAppliedAnnotation:      true,
	RevisionAnnotation:         true,
	RevisionHistoryAnnotation:  true,
	DesiredReplicasAnnotation:  true,
	MaxReplicasAnnotation:      true,
	RollbackToAnnotation:       true,
	grayapi.StatusAnnotation:   true,
	grayapi.ResumeAnnotation:   true,
	grayapi.StrategyAnnotation: true,
}

// SkipCopyAnnotation reports whether key stays on its object instead of being
// copied from a Deployment to its ReplicaSet (or back on rollback).
func SkipCopyAnnotation(key string) bool {
	return skippedAnnotations[key]
}

// Revision returns the object's revision annotation; a missing annotation is
// revision 0, an unparsable one an error.
func Revision(obj metav1.Object) (int64, error) {
	v, ok := obj.GetAnnotations()[RevisionAnnotation]
	if !ok {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s/%s: invalid %s annotation %q: %w", obj.GetNamespace(), obj.GetName(), RevisionAnnotation, v, err)
	}
	return n, nil
}

// MaxRevision returns the highest revision among allRSs (0 if none);
// ReplicaSets with an unparsable revision are ignored.
func MaxRevision(allRSs []*appsv1.ReplicaSet) int64 {
	var highest int64
	for _, rs := range allRSs {
		if v, err := Revision(rs); err == nil && v > highest {
			highest = v
		}
	}
	return highest
}

// LastRevision returns the second highest revision among allRSs, the target
// of a rollback to "revision 0". When two ReplicaSets share the highest
// revision the second highest equals it. Unparsable revisions are ignored.
//
//	revisions {1, 2, 3} → 2;  {3, 3} → 3;  {5} → 0
func LastRevision(allRSs []*appsv1.ReplicaSet) int64 {
	var highest, second int64
	for _, rs := range allRSs {
		v, err := Revision(rs)
		if err != nil {
			continue
		}
		switch {
		case v >= highest:
			second, highest = highest, v
		case v > second:
			second = v
		}
	}
	return second
}

// RevisionHistoryContains reports whether the ReplicaSet once served revision,
// according to its revision-history annotation (the revisions it had before a
// rollback re-used it). Unparsable entries are ignored.
//
//	history "1,4", revision 4 → true;  history "", revision 1 → false
func RevisionHistoryContains(rs *appsv1.ReplicaSet, revision int64) bool {
	history := rs.Annotations[RevisionHistoryAnnotation]
	if history == "" {
		return false
	}
	for _, entry := range strings.Split(history, ",") {
		if v, err := strconv.ParseInt(strings.TrimSpace(entry), 10, 64); err == nil && v == revision {
			return true
		}
	}
	return false
}

// SetDeploymentRevision sets the Deployment's revision annotation and reports
// whether it changed.
func SetDeploymentRevision(d *appsv1.Deployment, revision string) bool {
	if d.Annotations == nil {
		d.Annotations = map[string]string{}
	}
	if d.Annotations[RevisionAnnotation] == revision {
		return false
	}
	d.Annotations[RevisionAnnotation] = revision
	return true
}

// SetNewReplicaSetAnnotations brings the new ReplicaSet's annotations up to
// date and reports whether anything changed:
//   - every Deployment annotation outside the skip list is copied (changed
//     values overwritten; keys the Deployment dropped are never removed);
//   - the revision is raised to newRevision when lower (missing counts as 0;
//     an unparsable existing revision stops here and reports false);
//   - when an existing revision was raised, i.e. a rollback re-uses this
//     ReplicaSet, the old number is appended to the revision history, whose
//     oldest entries are dropped to stay within revHistoryLimitInChars;
//   - a ReplicaSet about to be created (!exists) also gets the
//     desired-/max-replicas annotations.
func SetNewReplicaSetAnnotations(ctx context.Context, d *appsv1.Deployment, newRS *appsv1.ReplicaSet, newRevision string, exists bool, revHistoryLimitInChars int) bool {
	logger := klog.FromContext(ctx)
	changed := copyDeploymentAnnotationsToReplicaSet(d, newRS)

	oldRevision, hadRevision := newRS.Annotations[RevisionAnnotation]
	oldRev, err := strconv.ParseInt(oldRevision, 10, 64)
	if err != nil {
		if oldRevision != "" {
			logger.Info("Not updating ReplicaSet revision: current revision is not an integer", "replicaSet", klog.KObj(newRS), "revision", oldRevision, "err", err)
			return false
		}
		oldRev = 0
	}
	newRev, err := strconv.ParseInt(newRevision, 10, 64)
	if err != nil {
		logger.Info("Not updating ReplicaSet revision: new revision is not an integer", "replicaSet", klog.KObj(newRS), "revision", newRevision, "err", err)
		return false
	}
	if oldRev < newRev {
		newRS.Annotations[RevisionAnnotation] = newRevision
		changed = true
		logger.V(4).Info("Updating ReplicaSet revision", "replicaSet", klog.KObj(newRS), "newRevision", newRevision)
		if hadRevision {
			appendRevisionHistory(logger, newRS, oldRevision, revHistoryLimitInChars)
		}
	}

	if !exists {
		r := replicas(d)
		if SetReplicasAnnotations(newRS, r, r+MaxSurge(*d)) {
			changed = true
		}
	}
	return changed
}

// LastRevisionInHistory returns the revision rs had before its latest
// renumbering (the last entry of its revision-history annotation, which a
// rollback appends to), or fallback when it has no readable history.
// History "1,3" gives 3.
func LastRevisionInHistory(rs *appsv1.ReplicaSet, fallback int64) int64 {
	entries := strings.Split(rs.Annotations[RevisionHistoryAnnotation], ",")
	if v, err := strconv.ParseInt(strings.TrimSpace(entries[len(entries)-1]), 10, 64); err == nil && v > 0 {
		return v
	}
	return fallback
}

// appendRevisionHistory appends oldRevision to the history annotation,
// dropping the oldest entries until "history,oldRevision" fits in limit
// characters; if even dropping all of them is not enough the history is left
// alone. A history whose first entry is empty is replaced by oldRevision.
func appendRevisionHistory(logger klog.Logger, rs *appsv1.ReplicaSet, oldRevision string, limit int) {
	history := rs.Annotations[RevisionHistoryAnnotation]
	entries := strings.Split(history, ",")
	if entries[0] == "" {
		rs.Annotations[RevisionHistoryAnnotation] = oldRevision
		return
	}
	total := len(history) + 1 + len(oldRevision)
	drop := 0
	for total > limit && drop < len(entries) {
		total -= len(entries[drop]) + 1
		drop++
	}
	if total > limit {
		logger.Info("Not appending to revision history: length limit reached", "replicaSet", klog.KObj(rs), "limit", limit)
		return
	}
	rs.Annotations[RevisionHistoryAnnotation] = strings.Join(append(entries[drop:], oldRevision), ",")
}

// copyDeploymentAnnotationsToReplicaSet copies the Deployment's annotations
// outside the skip list and reports whether the ReplicaSet changed. The
// revision is deliberately not copied: the ReplicaSet's own revision is the
// authoritative one and the Deployment merely mirrors it.
func copyDeploymentAnnotationsToReplicaSet(d *appsv1.Deployment, rs *appsv1.ReplicaSet) bool {
	changed := false
	if rs.Annotations == nil {
		rs.Annotations = map[string]string{}
	}
	for k, v := range d.Annotations {
		if SkipCopyAnnotation(k) {
			continue
		}
		if cur, ok := rs.Annotations[k]; ok && cur == v {
			continue
		}
		rs.Annotations[k] = v
		changed = true
	}
	return changed
}

// SetDeploymentAnnotationsTo replaces the Deployment's annotations with those
// of the ReplicaSet being rolled back to, keeping the Deployment's own
// skip-listed annotations (last-applied, revision, ...).
func SetDeploymentAnnotationsTo(d *appsv1.Deployment, rollbackToRS *appsv1.ReplicaSet) {
	SetDeploymentAnnotationsKeeping(d, rollbackToRS, SkipCopyAnnotation)
}

// SetDeploymentAnnotationsKeeping is SetDeploymentAnnotationsTo with another
// rule for which annotations belong to the live Deployment: d keeps its own
// annotations for which keep is true and takes the ReplicaSet's others.
func SetDeploymentAnnotationsKeeping(d *appsv1.Deployment, rollbackToRS *appsv1.ReplicaSet, keep func(key string) bool) {
	kept := map[string]string{}
	for k, v := range d.Annotations {
		if keep(k) {
			kept[k] = v
		}
	}
	for k, v := range rollbackToRS.Annotations {
		if !keep(k) {
			kept[k] = v
		}
	}
	d.Annotations = kept
}

// SetReplicasAnnotations writes the desired- and max-replicas annotations
// and reports whether either changed.
func SetReplicasAnnotations(rs *appsv1.ReplicaSet, desired, max int32) bool {
	if rs.Annotations == nil {
		rs.Annotations = map[string]string{}
	}
	changed := false
	for key, want := range map[string]string{
		DesiredReplicasAnnotation: strconv.FormatInt(int64(desired), 10),
		MaxReplicasAnnotation:     strconv.FormatInt(int64(max), 10),
	} {
		if rs.Annotations[key] != want {
			rs.Annotations[key] = want
			changed = true
		}
	}
	return changed
}

// ReplicasAnnotationsNeedUpdate reports whether SetReplicasAnnotations would
// change anything (a ReplicaSet without annotations always needs it).
func ReplicasAnnotationsNeedUpdate(rs *appsv1.ReplicaSet, desired, max int32) bool {
	if rs.Annotations == nil {
		return true
	}
	return rs.Annotations[DesiredReplicasAnnotation] != strconv.FormatInt(int64(desired), 10) ||
		rs.Annotations[MaxReplicasAnnotation] != strconv.FormatInt(int64(max), 10)
}

// GetDesiredReplicasAnnotation returns the desired-replicas annotation; ok is
// false when it is missing, not an unsigned integer or above MaxInt32.
func GetDesiredReplicasAnnotation(ctx context.Context, rs *appsv1.ReplicaSet) (int32, bool) {
	return nonNegativeInt32Annotation(klog.FromContext(ctx), rs, DesiredReplicasAnnotation)
}

// GetMaxReplicasAnnotation returns the max-replicas annotation with the same
// rules as GetDesiredReplicasAnnotation.
func GetMaxReplicasAnnotation(ctx context.Context, rs *appsv1.ReplicaSet) (int32, bool) {
	return nonNegativeInt32Annotation(klog.FromContext(ctx), rs, MaxReplicasAnnotation)
}

func nonNegativeInt32Annotation(logger klog.Logger, rs *appsv1.ReplicaSet, key string) (int32, bool) {
	v, ok, err := parseNonNegativeInt32Annotation(rs, key)
	if err != nil {
		logger.V(2).Info("Ignoring unparsable ReplicaSet annotation", "replicaSet", klog.KObj(rs), "annotationKey", key, "annotationValue", rs.Annotations[key], "err", err)
	}
	return v, ok
}

// parseNonNegativeInt32Annotation parses an annotation as a uint32 that must
// also fit int32. Missing is (0, false, nil); invalid is (0, false, err).
func parseNonNegativeInt32Annotation(rs *appsv1.ReplicaSet, key string) (int32, bool, error) {
	s, ok := rs.Annotations[key]
	if !ok {
		return 0, false, nil
	}
	n, err := strconv.ParseUint(s, 10, 32)
	if err != nil {
		return 0, false, fmt.Errorf("replicaset %s/%s: annotation %s=%q: %w", rs.Namespace, rs.Name, key, s, err)
	}
	if n > math.MaxInt32 {
		return 0, false, fmt.Errorf("replicaset %s/%s: annotation %s=%q is out of range (higher than %d)", rs.Namespace, rs.Name, key, s, math.MaxInt32)
	}
	return int32(n), true, nil
}
