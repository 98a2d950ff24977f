package e2e

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubegray/kubectl-gray/internal/testutil"
	"github.com/kubegray/kubectl-gray/test/cluster"
)

// settleNS is the namespace of TestSnapshotWaitsForPodsOnTheirWayToReady's objects.
const settleNS = "diff-settle"

// TestSnapshotWaitsForPodsOnTheirWayToReady: a ReplicaSet whose pods all exist is not settled
// while one of them has not been made Ready yet by kwok's stages, which a loaded machine delays
// past settleQuiet (the clean-clone run at 308a8bd compared both clusters of TestDifferential's
// "maxUnavailable 0" at old 1, new 4, the fourth new pod not yet Ready). A pod that kwok keeps
// unready on purpose (a never-ready or crash-looping template) does not hold the settling.
func TestSnapshotWaitsForPodsOnTheirWayToReady(t *testing.T) {
	d := testutil.Deployment("web", testutil.WithReplicas(1))
	d.Namespace, d.Generation, d.Status.ObservedGeneration = settleNS, 1, 1
	rs := testutil.ReplicaSet("web-1", 1, testutil.RSOwnedBy(d))
	rs.Namespace, rs.Generation = settleNS, 1
	rs.Status = appsv1.ReplicaSetStatus{ObservedGeneration: 1, Replicas: 1}
	pod := func(ready bool, annotations map[string]string) *corev1.Pod {
		status := corev1.ConditionFalse
		if ready {
			status = corev1.ConditionTrue
		}
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-1-a", Namespace: settleNS, Annotations: annotations},
			Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}}}
	}
	for _, tc := range []struct {
		name    string
		pod     *corev1.Pod
		settled bool
	}{
		{"ready", pod(true, nil), true},
		{"not ready yet", pod(false, nil), false},
		{"never ready", pod(false, map[string]string{cluster.NeverReadyAnnotation: "true"}), true},
		{"crash looping", pod(false, map[string]string{cluster.CrashLoopAnnotation: "true"}), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, settled, err := takeSnapshot(context.Background(), fake.NewClientset(d, rs, tc.pod), settleNS)
			if err != nil || settled != tc.settled {
				t.Errorf("settled = %v, %v; want %v", settled, err, tc.settled)
			}
		})
	}
}
