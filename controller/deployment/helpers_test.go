package deployment

import (
	"context"
	"fmt"
	"maps"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	"github.com/kubegray/kubectl-gray/internal/testutil"
)

const testFieldManager = "gray-controller"

// testNow is the frozen controller clock of every test.
var testNow = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

// fixture is a controller over a fake clientset whose informer indexers are seeded directly
// (the informers are never started, so nothing happens in the background).
type fixture struct {
	t        *testing.T
	ctx      context.Context
	client   *fake.Clientset
	factory  informers.SharedInformerFactory
	dc       *DeploymentController
	recorder *record.FakeRecorder
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	return newFixtureIn(t, Options{})
}

// newFixtureIn is newFixture with the mode and takeover of opts.
func newFixtureIn(t *testing.T, opts Options) *fixture {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	client := fake.NewClientset()
	factory := informers.NewSharedInformerFactory(client, 0)
	recorder := record.NewFakeRecorder(100)
	opts.FieldManager, opts.Recorder = testFieldManager, recorder
	dc, err := NewDeploymentController(ctx, AllNamespaces(factory, informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace("gray-system")), "gray-system"), client, opts)
	if err != nil {
		t.Fatalf("NewDeploymentController: %v", err)
	}
	dc.now = func() time.Time { return testNow }
	return &fixture{t: t, ctx: ctx, client: client, factory: factory, dc: dc, recorder: recorder}
}

// cache puts objects into the informer indexers only.
func (f *fixture) cache(objs ...runtime.Object) {
	f.t.Helper()
	for _, obj := range objs {
		var err error
		switch o := obj.(type) {
		case *appsv1.Deployment:
			err = f.factory.Apps().V1().Deployments().Informer().GetIndexer().Add(o)
		case *appsv1.ReplicaSet:
			err = f.factory.Apps().V1().ReplicaSets().Informer().GetIndexer().Add(o)
		case *corev1.Pod:
			// Kept as the informer keeps it, through its transform.
			err = f.factory.Core().V1().Pods().Informer().GetIndexer().Add(cached(o))
		default:
			err = fmt.Errorf("unexpected type %T", obj)
		}
		if err != nil {
			f.t.Fatalf("seeding cache: %v", err)
		}
	}
}

// server puts copies of objects into the fake API server only.
func (f *fixture) server(objs ...runtime.Object) {
	f.t.Helper()
	for _, obj := range objs {
		if err := f.client.Tracker().Add(obj.DeepCopyObject()); err != nil {
			f.t.Fatalf("seeding server: %v", err)
		}
	}
}

// both seeds cache and server with the same objects.
func (f *fixture) both(objs ...runtime.Object) {
	f.t.Helper()
	f.cache(objs...)
	f.server(objs...)
}

// actions returns the client actions so far, checking that every write carried our field manager.
func (f *fixture) actions() []clienttesting.Action {
	f.t.Helper()
	actions := f.client.Actions()
	for _, a := range actions {
		var manager string
		switch a := a.(type) {
		case clienttesting.CreateActionImpl:
			manager = a.CreateOptions.FieldManager
		case clienttesting.UpdateActionImpl:
			manager = a.UpdateOptions.FieldManager
		case clienttesting.PatchActionImpl:
			manager = a.PatchOptions.FieldManager
		default:
			continue
		}
		if manager != testFieldManager {
			f.t.Errorf("%s %s/%s carried field manager %q, want %q", a.GetVerb(), a.GetResource().Resource, a.GetSubresource(), manager, testFieldManager)
		}
	}
	return actions
}

// verbs summarizes actions as "verb resource[/subresource]" for order assertions.
func verbs(actions []clienttesting.Action) []string {
	out := make([]string, 0, len(actions))
	for _, a := range actions {
		s := a.GetVerb() + " " + a.GetResource().Resource
		if a.GetSubresource() != "" {
			s += "/" + a.GetSubresource()
		}
		out = append(out, s)
	}
	return out
}

// events drains the fake recorder.
func (f *fixture) events() []string {
	var out []string
	for {
		select {
		case e := <-f.recorder.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// queued drains the queue and returns the keys that were ready.
func queued(dc *DeploymentController) []string {
	var keys []string
	for dc.queue.Len() > 0 {
		k, _ := dc.queue.Get()
		dc.queue.Done(k)
		keys = append(keys, k)
	}
	return keys
}

// newDeployment builds a RollingUpdate Deployment with maxSurge 0 and maxUnavailable 0 (so the
// unavailable fencepost resolves to 1), selector and template labels foo=bar, one container,
// no progress deadline and no history limit unless options say otherwise.
func newDeployment(name string, replicas int32, opts ...testutil.DeploymentOption) *appsv1.Deployment {
	base := testutil.Options(testutil.WithTypeMeta(), testutil.WithUID(), testutil.WithReplicas(replicas),
		testutil.WithLabels(map[string]string{"foo": "bar"}), testutil.WithContainer("c", "foo/bar"),
		testutil.WithRollingUpdate(intstr.FromInt32(0), intstr.FromInt32(0)))
	return testutil.Deployment(name, append([]testutil.DeploymentOption{base}, opts...)...)
}

// podOf builds a pod controlled by rs.
func podOf(rs *appsv1.ReplicaSet, name string, phase corev1.PodPhase) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:            name,
			Namespace:       rs.Namespace,
			UID:             types.UID("uid-" + name),
			Labels:          maps.Clone(rs.Labels),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID, Controller: ptr.To(true)}},
		},
		Status: corev1.PodStatus{Phase: phase},
	}
}

// updatedReplicaSets returns the ReplicaSets written with update, in order.
func updatedReplicaSets(actions []clienttesting.Action) []*appsv1.ReplicaSet {
	var out []*appsv1.ReplicaSet
	for _, a := range actions {
		u, ok := a.(clienttesting.UpdateActionImpl)
		if !ok || a.GetResource().Resource != "replicasets" {
			continue
		}
		out = append(out, u.GetObject().(*appsv1.ReplicaSet))
	}
	return out
}

// lastStatusWrite returns the Deployment of the last update of deployments/status.
func lastStatusWrite(t *testing.T, actions []clienttesting.Action) *appsv1.Deployment {
	t.Helper()
	for i := len(actions) - 1; i >= 0; i-- {
		u, ok := actions[i].(clienttesting.UpdateActionImpl)
		if ok && u.GetResource().Resource == "deployments" && u.GetSubresource() == "status" {
			return u.GetObject().(*appsv1.Deployment)
		}
	}
	t.Fatalf("no deployments/status update in %v", verbs(actions))
	return nil
}

// cached is pod as the pod informer hands it on (StripPod).
func cached(pod *corev1.Pod) *cachedPod {
	obj, _ := StripPod(pod)
	return obj.(*cachedPod)
}
