package deployment

import (
	"reflect"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubegray/kubectl-gray/controller/metrics"
	"github.com/kubegray/kubectl-gray/internal/testutil"
)

func withResourceVersion(d *appsv1.Deployment, rv string) *appsv1.Deployment {
	d = d.DeepCopy()
	d.ResourceVersion = rv
	return d
}

func TestSupersededVersions(t *testing.T) {
	now := testNow
	s := newSupersededVersions(func() time.Time { return now })
	d := newDeployment("web", 3)
	key := d.Namespace + "/" + d.Name

	s.wrote(withResourceVersion(d, "5"), withResourceVersion(d, "6"))
	s.wrote(withResourceVersion(d, "6"), withResourceVersion(d, "7"))
	for _, rv := range []string{"5", "6"} {
		if !s.superseded(key, rv) {
			t.Errorf("superseded(%s) = false after our writes replaced it", rv)
		}
	}
	// The cache shows our last write: everything before it is forgotten, even if an older
	// version were asked about again.
	if s.superseded(key, "7") || s.superseded(key, "5") {
		t.Error("superseded is true once the cache showed our last write")
	}

	// An Update that changed nothing keeps its resourceVersion and brings no event.
	s.wrote(withResourceVersion(d, "7"), withResourceVersion(d, "7"))
	if s.superseded(key, "7") {
		t.Error("superseded(7) = true after an Update that changed nothing")
	}

	s.wrote(withResourceVersion(d, "7"), withResourceVersion(d, "8"))
	now = now.Add(supersededTimeout)
	if s.superseded(key, "7") {
		t.Errorf("superseded(7) = true %v after the write: a sync is never held off longer", supersededTimeout)
	}

	s.wrote(withResourceVersion(d, "8"), withResourceVersion(d, "9"))
	s.forget(key)
	if s.superseded(key, "8") {
		t.Error("superseded(8) = true after forget")
	}
}

// bumpResourceVersions makes the fake client answer Deployment updates with the next
// resourceVersion, as the API server does (the fake tracker keeps the one sent).
func bumpResourceVersions(f *fixture, next string) {
	f.client.PrependReactor("update", "deployments", func(action clienttesting.Action) (bool, runtime.Object, error) {
		written := action.(clienttesting.UpdateAction).GetObject().(*appsv1.Deployment).DeepCopy()
		written.ResourceVersion = next
		return true, written, nil
	})
}

func TestSyncSkipsADeploymentOurWriteReplaced(t *testing.T) {
	f := newFixture(t)
	d := withResourceVersion(newDeployment("foo", 1), "5")
	f.both(d)
	bumpResourceVersions(f, "6")

	// The first sync creates the ReplicaSet and writes the status through the controller's
	// client, replacing version 5.
	if err := f.dc.syncDeployment(f.ctx, "default/foo"); err != nil {
		t.Fatal(err)
	}
	statusWrites := 0
	for _, a := range f.actions() {
		if a.Matches("update", "deployments") && a.GetSubresource() == "status" {
			statusWrites++
		}
	}
	if statusWrites == 0 {
		t.Fatalf("the first sync wrote no Deployment status; actions %v", verbs(f.actions()))
	}

	// Events of that sync's ReplicaSet create arrive while the cache still holds version 5.
	f.client.ClearActions()
	testutil.WantDeferred(t, metrics.DeferredOwnWrite, func() {
		if err := f.dc.syncDeployment(f.ctx, "default/foo"); err != nil {
			t.Fatal(err)
		}
	})
	if got := f.actions(); len(got) != 0 {
		t.Errorf("a sync of the version our write replaced sent %v, want nothing", verbs(got))
	}

	// The informer brings version 6: that one syncs, and version 5 is forgotten.
	if f.dc.deploymentWrites.superseded("default/foo", "6") {
		t.Error("superseded(6) = true: the version our write gave would not sync")
	}
	if f.dc.deploymentWrites.superseded("default/foo", "5") {
		t.Error("version 5 is still remembered after the cache showed 6")
	}
}

func TestStatusWrittenMidSyncGivesItsVersionToTheNext(t *testing.T) {
	f := newFixture(t)
	d := withResourceVersion(newDeployment("foo", 3, testutil.WithProgressDeadline(600)), "5")
	f.both(d)
	bumpResourceVersions(f, "6")

	// The first sync of a Deployment creates its ReplicaSet, writes the revision and the
	// Progressing condition, then the rollout status: the second write must carry the version
	// the first one got, not the one it replaced (a 409 on a real API server).
	if err := f.dc.syncDeployment(f.ctx, "default/foo"); err != nil {
		t.Fatal(err)
	}
	var versions []string
	for _, a := range f.actions() {
		if a.Matches("update", "deployments") && a.GetSubresource() == "status" {
			versions = append(versions, a.(clienttesting.UpdateAction).GetObject().(*appsv1.Deployment).ResourceVersion)
		}
	}
	if want := []string{"5", "6"}; !reflect.DeepEqual(versions, want) {
		t.Errorf("status writes carried resourceVersions %v, want %v", versions, want)
	}
}
