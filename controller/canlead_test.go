package controller

import (
	"context"
	"errors"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// reviewer answers SelfSubjectAccessReviews: every permission is allowed but denied.
func reviewer(client *fake.Clientset, denied string) *[]string {
	var asked []string
	client.PrependReactor("create", "selfsubjectaccessreviews", func(action k8stesting.Action) (bool, runtime.Object, error) {
		review := action.(k8stesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview)
		what := describe(*review.Spec.ResourceAttributes)
		asked = append(asked, what)
		review.Status.Allowed = what != denied
		return true, review, nil
	})
	return &asked
}

func TestLeadCheck(t *testing.T) {
	check := func(client *fake.Clientset) error {
		return leadCheck{client: client, leaseNamespace: "gray-system", leaseName: "gray-controller"}.run(context.Background())
	}

	t.Run("every permission granted", func(t *testing.T) {
		client := fake.NewClientset()
		asked := reviewer(client, "")
		if err := check(client); err != nil {
			t.Fatalf("could lead: %v, want nil", err)
		}
		// Written by hand from manifests/base/rbac.yaml: the rules the leader uses in every mode.
		want := []string{
			"list deployments.apps", "watch deployments.apps", "update deployments.apps", "update deployments.apps/status",
			"list replicasets.apps", "watch replicasets.apps", "create replicasets.apps", "update replicasets.apps", "delete replicasets.apps",
			"list pods", "watch pods", "list configmaps", "watch configmaps", "create events",
			"get leases.coordination.k8s.io gray-controller in gray-system", "update leases.coordination.k8s.io gray-controller in gray-system",
		}
		if len(*asked) != len(want) {
			t.Fatalf("asked %q, want %q", *asked, want)
		}
		for i := range want {
			if (*asked)[i] != want[i] {
				t.Errorf("review %d asks %q, want %q", i, (*asked)[i], want[i])
			}
		}
	})

	t.Run("some namespaces", func(t *testing.T) {
		client := fake.NewClientset()
		asked := reviewer(client, "")
		var listed []string
		for _, resource := range []string{"deployments", "replicasets", "pods"} {
			client.PrependReactor("list", resource, func(action k8stesting.Action) (bool, runtime.Object, error) {
				listed = append(listed, resource+" in "+action.GetNamespace())
				return false, nil, nil
			})
		}
		c := leadCheck{client: client, leaseNamespace: "gray-system", leaseName: "gray-controller", namespaces: []string{"shop"}, ownNamespace: "gray-system"}
		if err := c.run(context.Background()); err != nil {
			t.Fatalf("could lead: %v, want nil", err)
		}
		// A RoleBinding in shop grants the workload rules; the gate ConfigMaps are read in
		// gray-system too.
		want := []string{
			"list deployments.apps in shop", "watch deployments.apps in shop", "update deployments.apps in shop", "update deployments.apps/status in shop",
			"list replicasets.apps in shop", "watch replicasets.apps in shop", "create replicasets.apps in shop", "update replicasets.apps in shop",
			"delete replicasets.apps in shop", "list pods in shop", "watch pods in shop", "list configmaps in shop", "watch configmaps in shop",
			"create events in shop", "list configmaps in gray-system", "watch configmaps in gray-system",
			"get leases.coordination.k8s.io gray-controller in gray-system", "update leases.coordination.k8s.io gray-controller in gray-system",
		}
		if strings.Join(*asked, "\n") != strings.Join(want, "\n") {
			t.Errorf("asked\n%s\nwant\n%s", strings.Join(*asked, "\n"), strings.Join(want, "\n"))
		}
		if want := "deployments in shop,replicasets in shop,pods in shop"; strings.Join(listed, ",") != want {
			t.Errorf("listed %s, want %s", strings.Join(listed, ","), want)
		}
		reviewer(client, "delete replicasets.apps in shop")
		if err := c.run(context.Background()); err == nil || err.Error() != "may not delete replicasets.apps in shop" {
			t.Errorf("could lead: %v, want %q", err, "may not delete replicasets.apps in shop")
		}
	})

	t.Run("one permission missing", func(t *testing.T) {
		client := fake.NewClientset()
		reviewer(client, "delete replicasets.apps")
		if err := check(client); err == nil || err.Error() != "may not delete replicasets.apps" {
			t.Errorf("could lead: %v, want %q", err, "may not delete replicasets.apps")
		}
	})

	t.Run("the server cannot list pods", func(t *testing.T) {
		client := fake.NewClientset()
		reviewer(client, "")
		client.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, errors.New("the server is currently unable to handle the request")
		})
		if err := check(client); err == nil || err.Error() != "listing pods: the server is currently unable to handle the request" {
			t.Errorf("could lead: %v, want the list's error", err)
		}
	})
}

func TestLeadCheckReportsEachResult(t *testing.T) {
	client := fake.NewClientset()
	reviewer(client, "create events")
	ctx, cancel := context.WithCancel(context.Background())
	ready := newReadiness(true)
	done := make(chan struct{})
	go func() {
		defer close(done)
		leadCheck{client: client, leaseNamespace: "gray-system", leaseName: "gray-controller"}.watch(ctx, func(err error) {
			ready.couldLead(err)
			cancel()
		})
	}()
	<-done
	if ok, msg := ready.check(); ok || msg != "standby, could not lead now: may not create events" {
		t.Errorf("readiness after the check = %v %q, want not ready for want of events", ok, msg)
	}
}
