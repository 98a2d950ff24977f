package graysync

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"

	"github.com/kubegray/kubectl-gray/controller/deployment"
	"github.com/kubegray/kubectl-gray/internal/testutil"
)

const testFieldManager = "gray-controller"

// testNow is the frozen controller clock of every test.
var testNow = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

// fixture is the deployment controller with this package as its gray hook, over a fake clientset
// whose informer indexers are seeded directly (the informers are never started, so nothing
// happens in the background).
type fixture struct {
	t        *testing.T
	ctx      context.Context
	client   *fake.Clientset
	factory  informers.SharedInformerFactory
	dc       *deployment.DeploymentController
	gs       *Controller
	recorder *record.FakeRecorder
	// now is the controller's clock; tests move it.
	now time.Time
	// enqueued are the keys the gray side queued (Port.Enqueue), in order.
	enqueued []string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	return newFixtureIn(t, Options{})
}

// newFixtureIn is newFixture with the mode and takeover of opts.
func newFixtureIn(t *testing.T, opts Options) *fixture {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	f := &fixture{t: t, ctx: ctx, client: fake.NewClientset(), recorder: record.NewFakeRecorder(100), now: testNow}
	f.start(opts)
	return f
}

// start builds the controller on new caches, as a restarted process or a new leader does.
func (f *fixture) start(opts Options) {
	f.t.Helper()
	f.factory = informers.NewSharedInformerFactory(f.client, 0)
	caches := deployment.AllNamespaces(f.factory, informers.NewSharedInformerFactoryWithOptions(f.client, 0, informers.WithNamespace("gray-system")), "gray-system")
	dc, err := deployment.NewDeploymentController(f.ctx, caches, f.client, deployment.Options{
		FieldManager: testFieldManager, Recorder: f.recorder, Now: func() time.Time { return f.now },
		Gray: func(ctx context.Context, port *deployment.DeploymentController) (deployment.GrayHook, error) {
			gs, err := New(ctx, recordingPort{DeploymentController: port, f: f}, caches, opts)
			f.gs = gs
			return gs, err
		},
	})
	if err != nil {
		f.t.Fatalf("NewDeploymentController: %v", err)
	}
	f.dc = dc
}

// recordingPort is the deployment controller with the Deployments the gray side queues recorded.
type recordingPort struct {
	*deployment.DeploymentController
	f *fixture
}

func (p recordingPort) Enqueue(d *appsv1.Deployment) {
	p.f.enqueued = append(p.f.enqueued, d.Namespace+"/"+d.Name)
	p.DeploymentController.Enqueue(d)
}

// cache puts objects into the informer indexers only, pods as the pod informer keeps them.
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
			var cached any
			if cached, err = deployment.StripPod(o); err == nil {
				err = f.factory.Core().V1().Pods().Informer().GetIndexer().Update(cached)
			}
		default:
			err = fmt.Errorf("unexpected type %T", obj)
		}
		if err != nil {
			f.t.Fatalf("seeding cache: %v", err)
		}
	}
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

// newDeployment builds a RollingUpdate Deployment with maxSurge 0 and maxUnavailable 0 (so the
// unavailable fencepost resolves to 1), selector and template labels foo=bar, one container,
// no progress deadline and no history limit unless options say otherwise.
func newDeployment(name string, replicas int32, opts ...testutil.DeploymentOption) *appsv1.Deployment {
	base := testutil.Options(testutil.WithTypeMeta(), testutil.WithUID(), testutil.WithReplicas(replicas),
		testutil.WithLabels(map[string]string{"foo": "bar"}), testutil.WithContainer("c", "foo/bar"),
		testutil.WithRollingUpdate(intstr.FromInt32(0), intstr.FromInt32(0)))
	return testutil.Deployment(name, append([]testutil.DeploymentOption{base}, opts...)...)
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
