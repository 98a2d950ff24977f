package deployment

// getNewReplicaSet: the new ReplicaSet's name, hash collisions, one that already exists,
// create errors, and the annotations synced onto an existing new ReplicaSet.

import (
	"reflect"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubegray/kubectl-gray/internal/testutil"
)

func TestDeploymentController_generateReplicaSetName(t *testing.T) {
	// The template hashes to 8479cb96c7 (10 characters), leaving 253−1−10 = 242 for the name.
	tests := []struct {
		name           string
		deploymentName string
		want           string
	}{
		{name: "short name", deploymentName: "my-deployment", want: "my-deployment-8479cb96c7"},
		{name: "very long name truncated", deploymentName: strings.Repeat("a", 250), want: strings.Repeat("a", 242) + "-8479cb96c7"},
		{name: "longest name not truncated", deploymentName: strings.Repeat("a", 242), want: strings.Repeat("a", 242) + "-8479cb96c7"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			d := newDeployment(tc.deploymentName, 1, testutil.WithLabels(map[string]string{"app": "x"}), testutil.WithImage("nginx"))
			f.both(d)
			if _, err := f.dc.getNewReplicaSet(f.ctx, d, nil, nil, true); err != nil {
				t.Fatalf("getNewReplicaSet: %v", err)
			}
			actions := f.actions()
			create, ok := actions[0].(clienttesting.CreateActionImpl)
			if !ok {
				t.Fatalf("first action = %v, want a create", verbs(actions))
			}
			if got := create.GetObject().(*appsv1.ReplicaSet).Name; got != tc.want {
				t.Errorf("name = %q (%d chars), want %q", got, len(got), tc.want)
			}
		})
	}
}

func TestGetNewReplicaSetHashCollision(t *testing.T) {
	f := newFixture(t)
	d := newDeployment("foo", 1, testutil.WithLabels(map[string]string{"app": "x"}), testutil.WithImage("nginx"))
	// Someone else's ReplicaSet already has our name.
	other := newDeployment("other", 1, testutil.WithLabels(map[string]string{"app": "x"}), testutil.WithImage("nginx"))
	squatter := testutil.ReplicaSet("foo-8479cb96c7", 1, testutil.RSOwnedBy(other))
	f.both(d, squatter)

	_, err := f.dc.getNewReplicaSet(f.ctx, d, nil, nil, true)
	if !apierrors.IsAlreadyExists(err) {
		t.Fatalf("getNewReplicaSet error = %v, want AlreadyExists", err)
	}
	actions := f.actions()
	if got, want := verbs(actions), []string{"create replicasets", "update deployments/status"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("actions = %v, want %v", got, want)
	}
	if got := lastStatusWrite(t, actions).Status.CollisionCount; got == nil || *got != 1 {
		t.Errorf("collisionCount = %v, want 1", got)
	}
	if got := f.events(); len(got) != 0 {
		t.Errorf("events = %v, want none", got)
	}
}

func TestGetNewReplicaSetAlreadyExistsAndOurs(t *testing.T) {
	f := newFixture(t)
	d := newDeployment("foo", 1, testutil.WithLabels(map[string]string{"app": "x"}), testutil.WithImage("nginx"), testutil.WithProgressDeadline(600))
	// Our own ReplicaSet that the claimed list missed (slow cache).
	ours := testutil.ReplicaSet("foo-8479cb96c7", 1, testutil.RSOwnedBy(d))
	ours.Spec.Template.Labels["pod-template-hash"] = "8479cb96c7"
	f.both(d, ours)

	got, err := f.dc.getNewReplicaSet(f.ctx, d, nil, nil, true)
	if err != nil {
		t.Fatalf("getNewReplicaSet: %v", err)
	}
	if got.Name != "foo-8479cb96c7" {
		t.Errorf("new replica set = %s, want foo-8479cb96c7", got.Name)
	}
	actions := f.actions()
	if want := []string{"create replicasets", "update deployments/status"}; !reflect.DeepEqual(verbs(actions), want) {
		t.Fatalf("actions = %v, want %v", verbs(actions), want)
	}
	written := lastStatusWrite(t, actions)
	if written.Annotations["deployment.kubernetes.io/revision"] != "1" {
		t.Errorf("revision annotation = %q, want 1", written.Annotations["deployment.kubernetes.io/revision"])
	}
	if c := progressing(written); c != nil {
		t.Errorf("Progressing = %+v, want none for an already existing replica set", c)
	}
	if ev := f.events(); len(ev) != 0 {
		t.Errorf("events = %v, want none", ev)
	}
}

func TestGetNewReplicaSetCreateError(t *testing.T) {
	forbidden := apierrors.NewForbidden(schema.GroupResource{Group: "apps", Resource: "replicasets"}, "foo-8479cb96c7", errString("quota exceeded"))
	terminating := apierrors.NewForbidden(schema.GroupResource{Group: "apps", Resource: "replicasets"}, "foo-8479cb96c7", errString("namespace is terminating"))
	terminating.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause}}
	tests := []struct {
		name        string
		err         error
		wantActions []string
		wantEvent   bool
	}{
		{name: "reported in status and events", err: forbidden, wantActions: []string{"create replicasets", "update deployments/status"}, wantEvent: true},
		{name: "terminating namespace is not reported", err: terminating, wantActions: []string{"create replicasets"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			d := newDeployment("foo", 1, testutil.WithLabels(map[string]string{"app": "x"}), testutil.WithImage("nginx"), testutil.WithProgressDeadline(600))
			f.both(d)
			f.client.PrependReactor("create", "replicasets", func(clienttesting.Action) (bool, runtime.Object, error) {
				return true, nil, tc.err
			})
			if _, err := f.dc.getNewReplicaSet(f.ctx, d, nil, nil, true); err == nil {
				t.Fatal("getNewReplicaSet succeeded, want the create error")
			}
			actions := f.actions()
			if got := verbs(actions); !reflect.DeepEqual(got, tc.wantActions) {
				t.Fatalf("actions = %v, want %v", got, tc.wantActions)
			}
			msg := `Failed to create new replica set "foo-8479cb96c7": ` + forbidden.Error()
			if !tc.wantEvent {
				if ev := f.events(); len(ev) != 0 {
					t.Errorf("events = %v, want none", ev)
				}
				return
			}
			want := appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: "ReplicaSetCreateError",
				Message: msg, LastUpdateTime: metav1.NewTime(testNow), LastTransitionTime: metav1.NewTime(testNow)}
			if got := progressing(lastStatusWrite(t, actions)); got == nil || !reflect.DeepEqual(*got, want) {
				t.Errorf("Progressing = %+v, want %+v", got, want)
			}
			if got, want := f.events(), []string{"Warning ReplicaSetCreateError " + msg}; !reflect.DeepEqual(got, want) {
				t.Errorf("events = %v, want %v", got, want)
			}
		})
	}
}

func TestGetNewReplicaSetSyncsExistingAnnotations(t *testing.T) {
	f := newFixture(t)
	d := newDeployment("foo", 1, testutil.WithProgressDeadline(600))
	d.Annotations = map[string]string{
		"team": "a",
		"kubectl.kubernetes.io/last-applied-configuration": "{}",
		"deployment.kubernetes.io/revision":                "3",
	}
	d.Spec.MinReadySeconds = 5
	// Rolling back to the template of revision 1 while revision 3 is the newest.
	current := testutil.ReplicaSet("foo-v1", 1, testutil.RSOwnedBy(d), testutil.RSRevision(1))
	oldD := newDeployment("foo", 1, testutil.WithImage("v3"))
	old := testutil.ReplicaSet("foo-v3", 0, testutil.RSOwnedBy(oldD), testutil.RSRevision(3))
	f.both(d, current, old)

	got, err := f.dc.getNewReplicaSet(f.ctx, d, []*appsv1.ReplicaSet{current, old}, []*appsv1.ReplicaSet{old}, false)
	if err != nil {
		t.Fatalf("getNewReplicaSet: %v", err)
	}
	actions := f.actions()
	if want := []string{"update replicasets"}; !reflect.DeepEqual(verbs(actions), want) {
		t.Fatalf("actions = %v, want %v (the deployment follows on a later sync)", verbs(actions), want)
	}
	written := updatedReplicaSets(actions)[0]
	wantAnnotations := map[string]string{
		"team":                              "a",
		"deployment.kubernetes.io/revision": "4",
		"deployment.kubernetes.io/revision-history": "1",
	}
	if !reflect.DeepEqual(written.Annotations, wantAnnotations) {
		t.Errorf("annotations = %v, want %v", written.Annotations, wantAnnotations)
	}
	if written.Spec.MinReadySeconds != 5 {
		t.Errorf("minReadySeconds = %d, want 5", written.Spec.MinReadySeconds)
	}
	if got.Name != "foo-v1" {
		t.Errorf("returned %s, want foo-v1", got.Name)
	}

	// Next sync: the ReplicaSet is up to date, so the Deployment mirrors its revision and, having
	// no Progressing condition yet, records that it found the new ReplicaSet.
	f2 := newFixture(t)
	d2 := d.DeepCopy()
	f2.both(d2, written, old)
	if _, err := f2.dc.getNewReplicaSet(f2.ctx, d2, []*appsv1.ReplicaSet{written, old}, []*appsv1.ReplicaSet{old}, false); err != nil {
		t.Fatalf("second getNewReplicaSet: %v", err)
	}
	actions = f2.actions()
	if want := []string{"update deployments/status"}; !reflect.DeepEqual(verbs(actions), want) {
		t.Fatalf("second actions = %v, want %v", verbs(actions), want)
	}
	status := lastStatusWrite(t, actions)
	if status.Annotations["deployment.kubernetes.io/revision"] != "4" {
		t.Errorf("deployment revision = %q, want 4", status.Annotations["deployment.kubernetes.io/revision"])
	}
	wantCond := appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "FoundNewReplicaSet",
		Message: `Found new replica set "foo-v1"`, LastUpdateTime: metav1.NewTime(testNow), LastTransitionTime: metav1.NewTime(testNow)}
	if c := progressing(status); c == nil || !reflect.DeepEqual(*c, wantCond) {
		t.Errorf("Progressing = %+v, want %+v", c, wantCond)
	}
}

type errString string

func (e errString) Error() string { return string(e) }
