package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubegray/kubectl-gray/test/cluster"
)

// eventually polls cond every 100ms until it returns true or timeout passes;
// the last message explains a failure.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	err := cluster.Poll(context.Background(), timeout, 100*time.Millisecond, func(context.Context) (bool, string, error) {
		ok, msg := cond()
		return ok, msg, nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// consistently runs check every interval for d, the first time at once: a state that must
// last, looked at for as long as it must. check fails the test itself.
func consistently(d, interval time.Duration, check func()) {
	_ = cluster.Poll(context.Background(), d, interval, func(context.Context) (bool, string, error) {
		check()
		return false, "", nil
	})
}

// waitRolledOut waits until the Deployment's status says the rollout of its
// current generation finished, the way `kubectl rollout status` decides it.
func waitRolledOut(t *testing.T, client kubernetes.Interface, ns, name string, timeout time.Duration) *appsv1.Deployment {
	t.Helper()
	var d *appsv1.Deployment
	eventually(t, timeout, "deployment "+ns+"/"+name+" rolled out", func() (bool, string) {
		var err error
		d, err = client.AppsV1().Deployments(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		s := d.Status
		want := *d.Spec.Replicas
		done := s.ObservedGeneration >= d.Generation && s.UpdatedReplicas == want &&
			s.Replicas == want && s.AvailableReplicas == want
		return done, fmt.Sprintf("generation %d observed %d, replicas %d updated %d available %d, want %d",
			d.Generation, s.ObservedGeneration, s.Replicas, s.UpdatedReplicas, s.AvailableReplicas, want)
	})
	return d
}

func ownedReplicaSets(t *testing.T, client kubernetes.Interface, d *appsv1.Deployment) []appsv1.ReplicaSet {
	t.Helper()
	list, err := client.AppsV1().ReplicaSets(d.Namespace).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list replicasets: %v", err)
	}
	var owned []appsv1.ReplicaSet
	for _, rs := range list.Items {
		if ref := metav1.GetControllerOf(&rs); ref != nil && ref.UID == d.UID {
			owned = append(owned, rs)
		}
	}
	return owned
}
