package plugin

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
)

// A change wakes the page of the Deployment it is about, whichever of its objects changed,
// and no other page.
func TestDeploymentOf(t *testing.T) {
	objs := dashboardFixture(t)
	c, err := newClusterCache(fake.NewClientset(objs...), metav1.NamespaceAll)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.start(t.Context()); err != nil {
		t.Fatal(err)
	}
	d := deployment("web")
	canary := replicaSet(d, "2", "new", "nginx:1.26", 2, 2, 5*time.Minute)
	orphan := pod(canary, "x", true, 0, time.Minute)
	orphan.OwnerReferences[0].Name = "web-gone"
	other := grayEvent(d, "e2", "Normal", "GrayHeld", "", 1, time.Minute)
	other.InvolvedObject.Kind = "ReplicaSet"
	for _, tt := range []struct {
		name string
		obj  any
		want string
	}{
		{"the Deployment", d, "default/web"},
		{"its ReplicaSet", canary, "default/web"},
		{"a pod of its ReplicaSet", pod(canary, "a", true, 0, time.Minute), "default/web"},
		{"a pod deleted unseen", cache.DeletedFinalStateUnknown{Key: "default/web-new-a", Obj: pod(canary, "a", true, 0, time.Minute)}, "default/web"},
		{"an event about it", grayEvent(d, "e1", "Normal", "GrayHeld", "", 1, time.Minute), "default/web"},
		{"a pod of a ReplicaSet not in the cache", orphan, ""},
		{"an event about a ReplicaSet", other, ""},
		{"a pod without a controller", &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"}}, ""},
	} {
		if got := c.deploymentOf(tt.obj); got != tt.want {
			t.Errorf("%s: deploymentOf = %q, want %q", tt.name, got, tt.want)
		}
	}
}
