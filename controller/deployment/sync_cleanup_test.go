package deployment

// cleanupDeployment: which old ReplicaSets beyond revisionHistoryLimit are deleted, and in
// which order.

import (
	"math"
	"reflect"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kubegray/kubectl-gray/internal/testutil"
)

func TestDeploymentController_cleanupDeployment(t *testing.T) {
	withStatus := func(name string, spec, status int32) *appsv1.ReplicaSet {
		rs := testutil.ReplicaSet(name, spec, testutil.RSCreatedAt(time.Time{}))
		rs.Status.Replicas = status
		return rs
	}
	deleting := withStatus("foo-1", 0, 0)
	deleting.DeletionTimestamp = ptr.To(metav1.NewTime(testNow))
	unobserved := withStatus("foo-1", 0, 0)
	unobserved.Generation = 2
	unobserved.Status.ObservedGeneration = 1

	tests := []struct {
		name        string
		oldRSs      []*appsv1.ReplicaSet
		limit       *int32
		wantDeleted []string
	}{
		{
			name:        "limit 1 keeps the newest of three",
			oldRSs:      []*appsv1.ReplicaSet{withStatus("foo-1", 0, 0), withStatus("foo-2", 0, 0), withStatus("foo-3", 0, 0)},
			limit:       ptr.To[int32](1),
			wantDeleted: []string{"foo-1", "foo-2"},
		},
		{
			name:        "only replica sets with spec and status 0 are deleted",
			oldRSs:      []*appsv1.ReplicaSet{withStatus("foo-1", 0, 0), withStatus("foo-2", 0, 1), withStatus("foo-3", 1, 0), withStatus("foo-4", 1, 1)},
			limit:       ptr.To[int32](0),
			wantDeleted: []string{"foo-1"},
		},
		{
			name:        "limit 0 deletes every empty one",
			oldRSs:      []*appsv1.ReplicaSet{withStatus("foo-1", 0, 0), withStatus("foo-2", 0, 0)},
			limit:       ptr.To[int32](0),
			wantDeleted: []string{"foo-1", "foo-2"},
		},
		{
			name:   "replica sets with replicas are kept",
			oldRSs: []*appsv1.ReplicaSet{withStatus("foo-1", 1, 1), withStatus("foo-2", 1, 1)},
			limit:  ptr.To[int32](0),
		},
		{
			name:   "already deleting",
			oldRSs: []*appsv1.ReplicaSet{deleting},
			limit:  ptr.To[int32](0),
		},
		{
			name:   "MaxInt32 is unlimited",
			oldRSs: []*appsv1.ReplicaSet{withStatus("foo-1", 0, 0), withStatus("foo-2", 0, 0), withStatus("foo-3", 0, 0)},
			limit:  ptr.To[int32](math.MaxInt32),
		},
		{
			name:   "nil is unlimited",
			oldRSs: []*appsv1.ReplicaSet{withStatus("foo-1", 0, 0)},
		},
		{
			name:   "generation not yet observed by the replica set controller",
			oldRSs: []*appsv1.ReplicaSet{unobserved},
			limit:  ptr.To[int32](0),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			for _, rs := range tc.oldRSs {
				f.server(rs)
			}
			d := newDeployment("foo", 1)
			d.Spec.RevisionHistoryLimit = tc.limit
			if err := f.dc.CleanupDeployment(f.ctx, tc.oldRSs, d); err != nil {
				t.Fatalf("cleanupDeployment: %v", err)
			}
			if got := deletedNames(f.actions()); !reflect.DeepEqual(got, orEmpty(tc.wantDeleted)) {
				t.Errorf("deleted %v, want %v", got, orEmpty(tc.wantDeleted))
			}
		})
	}
}

func TestDeploymentController_cleanupDeploymentOrder(t *testing.T) {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	rev := func(name string, replicas int32, created time.Time, revision string) *appsv1.ReplicaSet {
		rs := testutil.ReplicaSet(name, replicas, testutil.RSCreatedAt(created))
		if revision != "" {
			rs.Annotations = map[string]string{"deployment.kubernetes.io/revision": revision}
		}
		rs.Status.Replicas = replicas
		return rs
	}
	// Creation order is always foo-1 < foo-2 < foo-3 < foo-4.
	t1, t2, t3, t4 := base, base.Add(time.Minute), base.Add(2*time.Minute), base.Add(3*time.Minute)
	tests := []struct {
		name        string
		oldRSs      []*appsv1.ReplicaSet
		limit       int32
		wantDeleted []string
	}{
		{
			name:        "revision order follows creation",
			oldRSs:      []*appsv1.ReplicaSet{rev("foo-1", 0, t1, "1"), rev("foo-2", 0, t2, "2")},
			limit:       1,
			wantDeleted: []string{"foo-1"},
		},
		{
			name:        "revision order against creation",
			oldRSs:      []*appsv1.ReplicaSet{rev("foo-1", 0, t1, "2"), rev("foo-2", 0, t2, "1")},
			limit:       1,
			wantDeleted: []string{"foo-2"},
		},
		{
			name:        "missing revision counts as 0",
			oldRSs:      []*appsv1.ReplicaSet{rev("foo-1", 0, t1, "1"), rev("foo-2", 0, t2, "")},
			limit:       1,
			wantDeleted: []string{"foo-2"},
		},
		{
			name:        "missing revision on the older one",
			oldRSs:      []*appsv1.ReplicaSet{rev("foo-1", 0, t1, ""), rev("foo-2", 0, t2, "2")},
			limit:       1,
			wantDeleted: []string{"foo-1"},
		},
		{
			name:        "a candidate with replicas is skipped, not replaced",
			oldRSs:      []*appsv1.ReplicaSet{rev("foo-1", 1, t1, "1"), rev("foo-2", 0, t2, "2"), rev("foo-3", 0, t3, "3")},
			limit:       1,
			wantDeleted: []string{"foo-2"},
		},
		{
			name:   "both candidates have replicas",
			oldRSs: []*appsv1.ReplicaSet{rev("foo-1", 1, t1, "1"), rev("foo-2", 1, t2, "2"), rev("foo-3", 0, t3, "3")},
			limit:  1,
		},
		{
			name:        "revisions 3,1,4,2 with limit 2 delete revisions 1 and 2",
			oldRSs:      []*appsv1.ReplicaSet{rev("foo-1", 0, t1, "3"), rev("foo-2", 0, t2, "1"), rev("foo-3", 0, t3, "4"), rev("foo-4", 0, t4, "2")},
			limit:       2,
			wantDeleted: []string{"foo-2", "foo-4"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			for _, rs := range tc.oldRSs {
				f.server(rs)
			}
			d := newDeployment("foo", 1, testutil.WithRevisionHistoryLimit(tc.limit))
			if err := f.dc.CleanupDeployment(f.ctx, tc.oldRSs, d); err != nil {
				t.Fatalf("cleanupDeployment: %v", err)
			}
			if got := deletedNames(f.actions()); !reflect.DeepEqual(got, orEmpty(tc.wantDeleted)) {
				t.Errorf("deleted %v, want %v", got, orEmpty(tc.wantDeleted))
			}
		})
	}
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
