package deployment

// Which broken caps are the built-in controller's takedown of a hold (restored at once) and
// which are a lowered hold point (restored within maxSurge and maxUnavailable).

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegray/kubectl-gray/internal/testutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// sizedBy is a ReplicaSet of size replicas whose spec.replicas manager last wrote.
func sizedBy(name string, replicas int32, manager string) *appsv1.ReplicaSet {
	rs := testutil.ReplicaSet(name, replicas, testutil.RSCreatedAt(metav1.Now().Time))
	rs.ManagedFields = []metav1.ManagedFieldsEntry{{
		Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, FieldsType: "FieldsV1",
		FieldsV1: metav1.NewFieldsV1(`{"f:spec":{"f:replicas":{}}}`),
	}}
	return rs
}

func TestBuiltInTookHoldApart(t *testing.T) {
	const ours, builtIn = "gray-controller", "kube-controller-manager"
	for _, tc := range []struct {
		name     string
		replicas int32
		target   int32
		canary   *appsv1.ReplicaSet
		old      []*appsv1.ReplicaSet
		want     bool
	}{
		{name: "lone canary of 1 scaled to 6 by the built-in controller", replicas: 6, target: 5,
			canary: sizedBy("v2", 6, builtIn), old: []*appsv1.ReplicaSet{sizedBy("v1", 0, ours)}, want: true},
		{name: "old ReplicaSet emptied next to a canary at R", replicas: 6, target: 5,
			canary: sizedBy("v2", 6, ours), old: []*appsv1.ReplicaSet{sizedBy("v1", 0, builtIn)}, want: true},
		// random-6 of the 200-scenario run: the hold point lowered from 50% to 20%, an old
		// ReplicaSet whose size the built-in controller wrote long before.
		{name: "lowered hold point next to an old ReplicaSet the built-in controller sized once", replicas: 10, target: 2,
			canary: sizedBy("v2", 5, ours), old: []*appsv1.ReplicaSet{sizedBy("v1", 5, ours), sizedBy("v0", 0, builtIn)}, want: false},
		{name: "lowered hold point, every size ours", replicas: 10, target: 2,
			canary: sizedBy("v2", 5, ours), old: []*appsv1.ReplicaSet{sizedBy("v1", 5, ours)}, want: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			replicas := tc.replicas
			g := &graySync{
				dc:     &DeploymentController{fieldManager: ours},
				d:      &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Replicas: &replicas}},
				st:     grayapi.Status{Target: tc.target},
				newRS:  tc.canary,
				oldRSs: tc.old,
			}
			if got := g.builtInTookHoldApart(); got != tc.want {
				t.Errorf("builtInTookHoldApart() = %t, want %t", got, tc.want)
			}
		})
	}
}
