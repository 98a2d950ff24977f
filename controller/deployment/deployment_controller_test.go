package deployment

import (
	"context"
	"errors"
	"reflect"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/kubegray/kubectl-gray/internal/testutil"
)

func TestSyncDeploymentCreatesReplicaSet(t *testing.T) {
	f := newFixture(t)
	// The template of the hash example of docs/worked-numbers.md: labels app=x, one container c/nginx,
	// which hashes to 8479cb96c7 with k8s.io/api v0.37.2.
	d := newDeployment("foo", 1, testutil.WithLabels(map[string]string{"app": "x"}), testutil.WithImage("nginx"))
	d.Generation = 1
	f.both(d)

	if err := f.dc.syncDeployment(f.ctx, "default/foo"); err != nil {
		t.Fatalf("syncDeployment: %v", err)
	}

	actions := f.actions()
	if got, want := verbs(actions), []string{"create replicasets", "update deployments/status", "update deployments/status"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("actions = %v, want %v", got, want)
	}
	rs := actions[0].(clienttesting.CreateActionImpl).GetObject().(*appsv1.ReplicaSet)
	if rs.Name != "foo-8479cb96c7" {
		t.Errorf("created replica set name = %q, want foo-8479cb96c7", rs.Name)
	}
	wantLabels := map[string]string{"app": "x", "pod-template-hash": "8479cb96c7"}
	if !reflect.DeepEqual(rs.Labels, wantLabels) || !reflect.DeepEqual(rs.Spec.Template.Labels, wantLabels) || !reflect.DeepEqual(rs.Spec.Selector.MatchLabels, wantLabels) {
		t.Errorf("labels/template labels/selector = %v / %v / %v, want all %v", rs.Labels, rs.Spec.Template.Labels, rs.Spec.Selector.MatchLabels, wantLabels)
	}
	if *rs.Spec.Replicas != 1 {
		t.Errorf("created replicas = %d, want 1", *rs.Spec.Replicas)
	}
	wantAnnotations := map[string]string{
		"deployment.kubernetes.io/revision":         "1",
		"deployment.kubernetes.io/desired-replicas": "1",
		"deployment.kubernetes.io/max-replicas":     "1",
	}
	if !reflect.DeepEqual(rs.Annotations, wantAnnotations) {
		t.Errorf("annotations = %v, want %v", rs.Annotations, wantAnnotations)
	}
	wantRef := []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "foo", UID: "uid-foo", Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}
	if !reflect.DeepEqual(rs.OwnerReferences, wantRef) {
		t.Errorf("ownerReferences = %+v, want %+v", rs.OwnerReferences, wantRef)
	}

	first := actions[1].(clienttesting.UpdateActionImpl).GetObject().(*appsv1.Deployment)
	if got := first.Annotations["deployment.kubernetes.io/revision"]; got != "1" {
		t.Errorf("first status write revision annotation = %q, want 1", got)
	}
	final := actions[2].(clienttesting.UpdateActionImpl).GetObject().(*appsv1.Deployment)
	if final.Status.ObservedGeneration != 1 {
		t.Errorf("observedGeneration = %d, want 1", final.Status.ObservedGeneration)
	}
	// R=1 with 0/0 fenceposts resolves maxUnavailable to 1, so 0 available is enough.
	wantAvailable := appsv1.DeploymentCondition{
		Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable",
		Message: "Deployment has minimum availability.", LastUpdateTime: metav1.NewTime(testNow), LastTransitionTime: metav1.NewTime(testNow),
	}
	if !reflect.DeepEqual(final.Status.Conditions, []appsv1.DeploymentCondition{wantAvailable}) {
		t.Errorf("conditions = %+v, want only %+v", final.Status.Conditions, wantAvailable)
	}
	if got, want := f.events(), []string{"Normal ScalingReplicaSet Scaled up replica set foo-8479cb96c7 from 0 to 1"}; !reflect.DeepEqual(got, want) {
		t.Errorf("events = %v, want %v", got, want)
	}
}

func TestSyncDeploymentDontDoAnythingDuringDeletion(t *testing.T) {
	f := newFixture(t)
	d := newDeployment("foo", 1)
	d.DeletionTimestamp = ptr.To(metav1.NewTime(testNow))
	f.both(d)

	if err := f.dc.syncDeployment(f.ctx, "default/foo"); err != nil {
		t.Fatalf("syncDeployment: %v", err)
	}
	if got, want := verbs(f.actions()), []string{"update deployments/status"}; !reflect.DeepEqual(got, want) {
		t.Errorf("actions = %v, want %v", got, want)
	}
}

func TestSyncDeploymentDeletionRace(t *testing.T) {
	f := newFixture(t)
	d := newDeployment("foo", 1)
	// The cache says live, the server says deleting; the server is more recent.
	f.cache(d)
	deleting := d.DeepCopy()
	deleting.DeletionTimestamp = ptr.To(metav1.NewTime(testNow))
	deleting.Finalizers = []string{"test/hold"}
	f.server(deleting)
	// The recheck only happens when there is an orphan to adopt.
	orphan := testutil.ReplicaSet("rs1", 1, testutil.RSOwnedBy(d))
	orphan.OwnerReferences = nil
	f.both(orphan)

	if err := f.dc.syncDeployment(f.ctx, "default/foo"); err == nil {
		t.Fatal("syncDeployment succeeded, want an error so the key is retried once the cache catches up")
	}
	actions := f.actions()
	if got, want := verbs(actions), []string{"get deployments"}; !reflect.DeepEqual(got, want) {
		t.Errorf("actions = %v, want only the uncached recheck %v", got, want)
	}
}

func TestDontSyncDeploymentsWithEmptyPodSelector(t *testing.T) {
	tests := []struct {
		name               string
		generation         int64
		observedGeneration int64
		wantActions        []string
	}{
		{name: "generation already observed", wantActions: []string{}},
		{name: "new generation is recorded", generation: 2, observedGeneration: 1, wantActions: []string{"update deployments/status"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			d := newDeployment("foo", 1)
			d.Spec.Selector = &metav1.LabelSelector{}
			d.Generation = tc.generation
			d.Status.ObservedGeneration = tc.observedGeneration
			f.both(d)

			if err := f.dc.syncDeployment(f.ctx, "default/foo"); err != nil {
				t.Fatalf("syncDeployment: %v", err)
			}
			actions := f.actions()
			if got := verbs(actions); !reflect.DeepEqual(got, tc.wantActions) {
				t.Errorf("actions = %v, want %v", got, tc.wantActions)
			}
			if len(tc.wantActions) > 0 {
				if got := lastStatusWrite(t, actions).Status.ObservedGeneration; got != tc.generation {
					t.Errorf("observedGeneration = %d, want %d", got, tc.generation)
				}
			}
			want := []string{"Warning SelectingAll This deployment is selecting all pods. A non-empty selector is required."}
			if got := f.events(); !reflect.DeepEqual(got, want) {
				t.Errorf("events = %v, want %v", got, want)
			}
		})
	}
}

func TestReentrantRollback(t *testing.T) {
	tests := []struct {
		name          string
		rollbackTo    string
		oldTemplate   bool // whether revision 1 runs a different template
		wantEvents    []string
		wantGrace     *int64
		wantRevision  string
		wantTemplated bool
	}{
		{
			name:        "last revision with another template",
			rollbackTo:  "0",
			oldTemplate: true,
			wantEvents:  []string{`Normal DeploymentRollback Rolled back deployment "foo" to revision 1`},
			wantGrace:   ptr.To[int64](1),
		},
		{
			name:       "revision with the same template",
			rollbackTo: "2",
			wantEvents: []string{`Warning DeploymentRollbackTemplateUnchanged The rollback revision contains the same template as current deployment "foo"`},
		},
		{
			name:        "unknown revision",
			rollbackTo:  "5",
			oldTemplate: true,
			wantEvents:  []string{"Warning DeploymentRollbackRevisionNotFound Unable to find the revision to rollback to."},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			d := newDeployment("foo", 1)
			d.Annotations = map[string]string{
				"deployment.kubernetes.io/revision": "2",
				"deprecated.deployment.rollback.to": tc.rollbackTo,
			}
			rs1 := testutil.ReplicaSet("foo-old", 0, testutil.RSOwnedBy(d), testutil.RSRevision(1))
			if tc.oldTemplate {
				rs1.Spec.Template.Spec.TerminationGracePeriodSeconds = ptr.To[int64](1)
			}
			rs1.Spec.Template.Labels["pod-template-hash"] = "old"
			rs2 := testutil.ReplicaSet("foo-new", 1, testutil.RSOwnedBy(d), testutil.RSRevision(2))
			rs2.Spec.Template.Labels["pod-template-hash"] = "new"
			f.both(d, rs1, rs2)

			if err := f.dc.syncDeployment(f.ctx, "default/foo"); err != nil {
				t.Fatalf("syncDeployment: %v", err)
			}
			actions := f.actions()
			if got, want := verbs(actions), []string{"update deployments"}; !reflect.DeepEqual(got, want) {
				t.Fatalf("actions = %v, want %v (no replica set writes)", got, want)
			}
			updated := actions[0].(clienttesting.UpdateActionImpl).GetObject().(*appsv1.Deployment)
			if got, want := updated.Annotations, map[string]string{"deployment.kubernetes.io/revision": "2"}; !reflect.DeepEqual(got, want) {
				t.Errorf("annotations = %v, want %v (rollback annotation cleared)", got, want)
			}
			if got := updated.Spec.Template.Spec.TerminationGracePeriodSeconds; !reflect.DeepEqual(got, tc.wantGrace) {
				t.Errorf("template terminationGracePeriodSeconds = %v, want %v", got, tc.wantGrace)
			}
			if _, ok := updated.Spec.Template.Labels["pod-template-hash"]; ok {
				t.Errorf("template labels %v carry the pod-template-hash", updated.Spec.Template.Labels)
			}
			if got := f.events(); !reflect.DeepEqual(got, tc.wantEvents) {
				t.Errorf("events = %v, want %v", got, tc.wantEvents)
			}
		})
	}
}

func TestRollbackWithoutLastRevision(t *testing.T) {
	f := newFixture(t)
	d := newDeployment("foo", 1)
	d.Annotations = map[string]string{"deployment.kubernetes.io/revision": "1", "deprecated.deployment.rollback.to": "0"}
	f.both(d, testutil.ReplicaSet("foo-only", 1, testutil.RSOwnedBy(d), testutil.RSRevision(1)))

	if err := f.dc.syncDeployment(f.ctx, "default/foo"); err != nil {
		t.Fatalf("syncDeployment: %v", err)
	}
	if got, want := verbs(f.actions()), []string{"update deployments"}; !reflect.DeepEqual(got, want) {
		t.Errorf("actions = %v, want %v", got, want)
	}
	if got, want := f.events(), []string{"Warning DeploymentRollbackRevisionNotFound Unable to find last revision."}; !reflect.DeepEqual(got, want) {
		t.Errorf("events = %v, want %v", got, want)
	}
}

func TestHandleErr(t *testing.T) {
	terminating := &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: 403, Reason: metav1.StatusReasonForbidden,
		Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause}}},
	}}
	tests := []struct {
		name          string
		err           error
		priorRequeues int
		wantRequeues  int
	}{
		{name: "success forgets", err: nil, priorRequeues: 3, wantRequeues: 0},
		{name: "terminating namespace forgets", err: terminating, priorRequeues: 3, wantRequeues: 0},
		{name: "wrapped terminating namespace forgets", err: errorsJoin(terminating), priorRequeues: 3, wantRequeues: 0},
		{name: "transient error is retried", err: errors.New("boom"), priorRequeues: 0, wantRequeues: 1},
		{name: "14th retry still retried", err: errors.New("boom"), priorRequeues: 14, wantRequeues: 15},
		{name: "dropped after 15 retries", err: errors.New("boom"), priorRequeues: 15, wantRequeues: 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			const key = "default/foo"
			for range tc.priorRequeues {
				f.dc.queue.AddRateLimited(key)
			}
			f.dc.handleErr(f.ctx, tc.err, key)
			if got := f.dc.queue.NumRequeues(key); got != tc.wantRequeues {
				t.Errorf("NumRequeues = %d, want %d", got, tc.wantRequeues)
			}
			f.dc.queue.ShutDown()
		})
	}
}

func TestProcessNextWorkItem(t *testing.T) {
	f := newFixture(t)
	var synced []string
	f.dc.syncHandler = func(_ context.Context, key string) error {
		synced = append(synced, key)
		return errors.New("boom")
	}
	f.dc.queue.Add("default/foo")
	if !f.dc.processNextWorkItem(f.ctx) {
		t.Fatal("processNextWorkItem returned false with an item queued")
	}
	if !reflect.DeepEqual(synced, []string{"default/foo"}) {
		t.Errorf("synced %v, want [default/foo]", synced)
	}
	if got := f.dc.queue.NumRequeues("default/foo"); got != 1 {
		t.Errorf("NumRequeues = %d, want 1 after a failed sync", got)
	}
	f.dc.queue.ShutDown()
	if f.dc.processNextWorkItem(f.ctx) {
		t.Error("processNextWorkItem returned true after shutdown")
	}
}

func TestNewDeploymentControllerRegistersPodIndexAndTransform(t *testing.T) {
	f := newFixture(t)
	informer := f.factory.Core().V1().Pods().Informer()
	if _, ok := informer.GetIndexer().GetIndexers()[podControllerUIDIndex]; !ok {
		t.Errorf("pod informer has no %q index", podControllerUIDIndex)
	}
	if f.dc.HasSynced() {
		t.Error("HasSynced = true before the informers ran")
	}
	// A second controller on the same factory must not fail on the existing index.
	if _, err := NewDeploymentController(f.ctx, AllNamespaces(f.factory, informers.NewSharedInformerFactoryWithOptions(f.client, 0, informers.WithNamespace("gray-system")), "gray-system"), f.client, Options{}); err != nil {
		t.Errorf("second NewDeploymentController on the same factory: %v", err)
	}
}

func TestSyncDeploymentMissingIsNoop(t *testing.T) {
	f := newFixture(t)
	if err := f.dc.syncDeployment(f.ctx, "default/gone"); err != nil {
		t.Errorf("syncDeployment of a missing deployment = %v, want nil", err)
	}
	if got := verbs(f.actions()); len(got) != 0 {
		t.Errorf("actions = %v, want none", got)
	}
}

func TestSyncDeploymentUnknownStrategy(t *testing.T) {
	f := newFixture(t)
	d := newDeployment("foo", 1)
	d.Spec.Strategy = appsv1.DeploymentStrategy{Type: "Canary"}
	f.both(d)
	err := f.dc.syncDeployment(f.ctx, "default/foo")
	if err == nil || err.Error() != "unexpected deployment strategy type: Canary" {
		t.Errorf("syncDeployment = %v, want unexpected deployment strategy type: Canary", err)
	}
}

func errorsJoin(err error) error { return errors.Join(errors.New("context"), err) }
