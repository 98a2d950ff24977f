package deployment

// The informer event handlers (handlers.go): which Deployments an add, update or delete of a
// Deployment, ReplicaSet or pod enqueues.

import (
	"reflect"
	"sort"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/kubegray/kubectl-gray/internal/testutil"
)

func TestPodDeletionEnqueuesRecreateDeployment(t *testing.T) {
	tests := []struct {
		name         string
		strategy     appsv1.DeploymentStrategyType
		siblings     bool
		orphanRS     bool
		wrongRSUID   bool
		tombstone    bool
		wantEnqueued []string
	}{
		{name: "last pod deleted", strategy: appsv1.RecreateDeploymentStrategyType, wantEnqueued: []string{"default/foo"}},
		{name: "pod with siblings deleted", strategy: appsv1.RecreateDeploymentStrategyType, siblings: true, wantEnqueued: []string{"default/foo"}},
		{name: "partial replica set ownership", strategy: appsv1.RecreateDeploymentStrategyType, orphanRS: true, wantEnqueued: []string{"default/foo"}},
		{name: "tombstone", strategy: appsv1.RecreateDeploymentStrategyType, tombstone: true, wantEnqueued: []string{"default/foo"}},
		{name: "rolling update is not enqueued", strategy: appsv1.RollingUpdateDeploymentStrategyType},
		{name: "replica set recreated under the same name", strategy: appsv1.RecreateDeploymentStrategyType, wrongRSUID: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			foo := newDeployment("foo", 1)
			if tc.strategy == appsv1.RecreateDeploymentStrategyType {
				testutil.WithRecreate()(foo)
			}
			rs := testutil.ReplicaSet("foo-1", 1, testutil.RSOwnedBy(foo))
			pod := podOf(rs, "foo-1-pod", corev1.PodRunning)
			if tc.wrongRSUID {
				pod.OwnerReferences[0].UID = "uid-gone"
			}
			f.cache(foo, rs, pod)
			if tc.siblings {
				f.cache(podOf(rs, "foo-1-sibling", corev1.PodRunning))
			}
			if tc.orphanRS {
				other := testutil.ReplicaSet("foo-2", 2, testutil.RSOwnedBy(foo))
				other.OwnerReferences = nil
				f.cache(other)
			}

			var obj any = cached(pod)
			if tc.tombstone {
				obj = cache.DeletedFinalStateUnknown{Key: "default/foo-1-pod", Obj: cached(pod)}
			}
			f.dc.deletePod(klog.FromContext(f.ctx), obj)

			if got := queued(f.dc); !reflect.DeepEqual(got, tc.wantEnqueued) {
				t.Errorf("enqueued = %v, want %v", got, tc.wantEnqueued)
			}
		})
	}
}

func TestAddReplicaSet(t *testing.T) {
	f := newFixture(t)
	d1 := newDeployment("d1", 1)
	d2 := newDeployment("d2", 1)
	f.cache(d1, d2)
	logger := klog.FromContext(f.ctx)

	f.dc.addReplicaSet(logger, testutil.ReplicaSet("rs1", 1, testutil.RSOwnedBy(d1)))
	if got := queued(f.dc); !reflect.DeepEqual(got, []string{"default/d1"}) {
		t.Errorf("after rs1: enqueued %v, want [default/d1]", got)
	}
	f.dc.addReplicaSet(logger, testutil.ReplicaSet("rs2", 1, testutil.RSOwnedBy(d2)))
	if got := queued(f.dc); !reflect.DeepEqual(got, []string{"default/d2"}) {
		t.Errorf("after rs2: enqueued %v, want [default/d2]", got)
	}
}

func TestAddReplicaSetOrphan(t *testing.T) {
	f := newFixture(t)
	// d1 and d2 match, d3 does not.
	d1 := newDeployment("d1", 1)
	d2 := newDeployment("d2", 1)
	d3 := newDeployment("d3", 1, testutil.WithLabels(map[string]string{"foo": "notbar"}))
	f.cache(d1, d2, d3)
	rs := testutil.ReplicaSet("rs1", 1, testutil.RSOwnedBy(d1))
	rs.OwnerReferences = nil

	f.dc.addReplicaSet(klog.FromContext(f.ctx), rs)
	got := queued(f.dc)
	sort.Strings(got)
	if want := []string{"default/d1", "default/d2"}; !reflect.DeepEqual(got, want) {
		t.Errorf("enqueued %v, want %v", got, want)
	}
}

func TestAddReplicaSetBeingDeleted(t *testing.T) {
	f := newFixture(t)
	d1 := newDeployment("d1", 1)
	d2 := newDeployment("d2", 1)
	f.cache(d1, d2)
	// Treated as a delete: the owner is woken, a deleting orphan wakes nobody.
	owned := testutil.ReplicaSet("rs1", 1, testutil.RSOwnedBy(d1))
	owned.DeletionTimestamp = ptr.To(metav1.NewTime(testNow))
	orphan := testutil.ReplicaSet("rs2", 1, testutil.RSOwnedBy(d1))
	orphan.OwnerReferences = nil
	orphan.DeletionTimestamp = ptr.To(metav1.NewTime(testNow))

	logger := klog.FromContext(f.ctx)
	f.dc.addReplicaSet(logger, owned)
	f.dc.addReplicaSet(logger, orphan)
	if got := queued(f.dc); !reflect.DeepEqual(got, []string{"default/d1"}) {
		t.Errorf("enqueued %v, want [default/d1]", got)
	}
}

func TestUpdateReplicaSet(t *testing.T) {
	f := newFixture(t)
	d1 := newDeployment("d1", 1)
	d2 := newDeployment("d2", 1)
	rs1 := testutil.ReplicaSet("rs1", 1, testutil.RSOwnedBy(d1))
	rs2 := testutil.ReplicaSet("rs2", 1, testutil.RSOwnedBy(d2))
	f.cache(d1, d2, rs1, rs2)
	logger := klog.FromContext(f.ctx)

	for _, tc := range []struct {
		rs   *appsv1.ReplicaSet
		want string
	}{{rs1, "default/d1"}, {rs2, "default/d2"}} {
		next := tc.rs.DeepCopy()
		next.ResourceVersion = "2"
		f.dc.updateReplicaSet(logger, tc.rs, next)
		if got := queued(f.dc); !reflect.DeepEqual(got, []string{tc.want}) {
			t.Errorf("update of %s enqueued %v, want [%s]", tc.rs.Name, got, tc.want)
		}
	}

	// A resync (same resourceVersion) is ignored.
	f.dc.updateReplicaSet(logger, rs1, rs1.DeepCopy())
	if got := queued(f.dc); len(got) != 0 {
		t.Errorf("resync enqueued %v, want nothing", got)
	}
}

func TestUpdateReplicaSetOrphanWithNewLabels(t *testing.T) {
	f := newFixture(t)
	d1 := newDeployment("d1", 1)
	d2 := newDeployment("d2", 1)
	rs := testutil.ReplicaSet("rs1", 1, testutil.RSOwnedBy(d1))
	rs.OwnerReferences = nil
	f.cache(d1, d2, rs)

	prev := rs.DeepCopy()
	prev.Labels = map[string]string{"foo": "notbar"}
	next := rs.DeepCopy()
	next.ResourceVersion = "2"
	f.dc.updateReplicaSet(klog.FromContext(f.ctx), prev, next)
	got := queued(f.dc)
	sort.Strings(got)
	if want := []string{"default/d1", "default/d2"}; !reflect.DeepEqual(got, want) {
		t.Errorf("enqueued %v, want %v", got, want)
	}

	// Unchanged labels on an orphan wake nobody.
	again := next.DeepCopy()
	again.ResourceVersion = "3"
	f.dc.updateReplicaSet(klog.FromContext(f.ctx), next, again)
	if got := queued(f.dc); len(got) != 0 {
		t.Errorf("orphan update without label change enqueued %v, want nothing", got)
	}
}

func TestUpdateReplicaSetChangeControllerRef(t *testing.T) {
	f := newFixture(t)
	d1 := newDeployment("d1", 1)
	d2 := newDeployment("d2", 1)
	rs := testutil.ReplicaSet("rs1", 1, testutil.RSOwnedBy(d1))
	f.cache(d1, d2, rs)

	prev := rs.DeepCopy()
	prev.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(d2, controllerKind)}
	next := rs.DeepCopy()
	next.ResourceVersion = "2"
	f.dc.updateReplicaSet(klog.FromContext(f.ctx), prev, next)
	got := queued(f.dc)
	sort.Strings(got)
	if want := []string{"default/d1", "default/d2"}; !reflect.DeepEqual(got, want) {
		t.Errorf("enqueued %v, want old and new owner %v", got, want)
	}
}

func TestUpdateReplicaSetRelease(t *testing.T) {
	f := newFixture(t)
	d1 := newDeployment("d1", 1)
	d2 := newDeployment("d2", 1)
	rs := testutil.ReplicaSet("rs1", 1, testutil.RSOwnedBy(d1))
	f.cache(d1, d2, rs)

	next := rs.DeepCopy()
	next.OwnerReferences = nil
	next.ResourceVersion = "2"
	f.dc.updateReplicaSet(klog.FromContext(f.ctx), rs, next)
	got := queued(f.dc)
	sort.Strings(got)
	if want := []string{"default/d1", "default/d2"}; !reflect.DeepEqual(got, want) {
		t.Errorf("enqueued %v, want every matching deployment %v", got, want)
	}
}

func TestDeleteReplicaSet(t *testing.T) {
	f := newFixture(t)
	d1 := newDeployment("d1", 1)
	d2 := newDeployment("d2", 1)
	rs1 := testutil.ReplicaSet("rs1", 1, testutil.RSOwnedBy(d1))
	rs2 := testutil.ReplicaSet("rs2", 1, testutil.RSOwnedBy(d2))
	f.cache(d1, d2, rs1, rs2)
	logger := klog.FromContext(f.ctx)

	f.dc.deleteReplicaSet(logger, rs1)
	if got := queued(f.dc); !reflect.DeepEqual(got, []string{"default/d1"}) {
		t.Errorf("delete of rs1 enqueued %v, want [default/d1]", got)
	}
	f.dc.deleteReplicaSet(logger, cache.DeletedFinalStateUnknown{Key: "default/rs2", Obj: rs2})
	if got := queued(f.dc); !reflect.DeepEqual(got, []string{"default/d2"}) {
		t.Errorf("tombstone of rs2 enqueued %v, want [default/d2]", got)
	}
}

func TestDeleteReplicaSetOrphan(t *testing.T) {
	f := newFixture(t)
	d1 := newDeployment("d1", 1)
	d2 := newDeployment("d2", 1)
	rs := testutil.ReplicaSet("rs1", 1, testutil.RSOwnedBy(d1))
	rs.OwnerReferences = nil
	f.cache(d1, d2, rs)

	f.dc.deleteReplicaSet(klog.FromContext(f.ctx), rs)
	if got := queued(f.dc); len(got) != 0 {
		t.Errorf("enqueued %v, want nothing", got)
	}
}

func TestDeploymentHandlers(t *testing.T) {
	f := newFixture(t)
	d := newDeployment("foo", 1)
	logger := klog.FromContext(f.ctx)

	f.dc.addDeployment(logger, d)
	if got := queued(f.dc); !reflect.DeepEqual(got, []string{"default/foo"}) {
		t.Errorf("add enqueued %v", got)
	}
	// No resourceVersion check: resyncs re-sync every Deployment.
	f.dc.updateDeployment(logger, d, d.DeepCopy())
	if got := queued(f.dc); !reflect.DeepEqual(got, []string{"default/foo"}) {
		t.Errorf("update enqueued %v", got)
	}
	f.dc.deleteDeployment(logger, cache.DeletedFinalStateUnknown{Key: "default/foo", Obj: d})
	if got := queued(f.dc); !reflect.DeepEqual(got, []string{"default/foo"}) {
		t.Errorf("delete tombstone enqueued %v", got)
	}
}
