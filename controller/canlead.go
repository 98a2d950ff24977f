package controller

import (
	"context"
	"fmt"
	"slices"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
)

// canLeadRecheck is how often a standby asks again: a ClusterRoleBinding removed from a running
// standby shows on its /readyz within this time.
const canLeadRecheck = 30 * time.Second

// leadCheck is what a standby proves before it reports ready: that, elected now, it could
// start the controller and write. In instead mode gray-controller rolls out its own
// Deployment, and an upgrade waits for the new pod's readiness before it removes an old one
// (maxUnavailable 0): a new version that cannot lead must not pass for one.
type leadCheck struct {
	client kubernetes.Interface
	// leaseNamespace and leaseName name the leader-election Lease.
	leaseNamespace, leaseName string
	// namespaces are those --namespaces watches (empty: every namespace); ownNamespace's gate
	// ConfigMaps are read too.
	namespaces   []string
	ownNamespace string
}

// scopes are the namespaces the leader reads and writes Deployments in; "" is every namespace.
func (c leadCheck) scopes() []string {
	if len(c.namespaces) == 0 {
		return []string{metav1.NamespaceAll}
	}
	return c.namespaces
}

// permissionsToLead are the requests the leader makes in every mode: its informers' lists
// and watches, the rollout's writes, its events and the Lease it renews. A rule the manifests
// do not grant must not be here, or no standby would ever be ready.
func (c leadCheck) permissionsToLead() []authorizationv1.ResourceAttributes {
	var attrs []authorizationv1.ResourceAttributes
	add := func(namespace, group, resource, subresource string, verbs ...string) {
		for _, verb := range verbs {
			attrs = append(attrs, authorizationv1.ResourceAttributes{Namespace: namespace, Group: group, Resource: resource,
				Subresource: subresource, Verb: verb})
		}
	}
	for _, ns := range c.scopes() {
		add(ns, "apps", "deployments", "", "list", "watch", "update")
		add(ns, "apps", "deployments", "status", "update")
		add(ns, "apps", "replicasets", "", "list", "watch", "create", "update", "delete")
		add(ns, "", "pods", "", "list", "watch")
		add(ns, "", "configmaps", "", "list", "watch")
		add(ns, "", "events", "", "create")
	}
	if len(c.namespaces) > 0 && !slices.Contains(c.namespaces, c.ownNamespace) {
		add(c.ownNamespace, "", "configmaps", "", "list", "watch")
	}
	for _, verb := range []string{"get", "update"} {
		attrs = append(attrs, authorizationv1.ResourceAttributes{Group: "coordination.k8s.io", Resource: "leases",
			Namespace: c.leaseNamespace, Name: c.leaseName, Verb: verb})
	}
	return attrs
}

// run returns nil when this replica could lead, else what it lacks. Each permission is a
// SelfSubjectAccessReview (every authenticated user may ask); then a one-item list of each
// resource the informers watch proves that the server answers this version's client in a
// form it decodes.
func (c leadCheck) run(ctx context.Context) error {
	for _, attrs := range c.permissionsToLead() {
		review, err := c.client.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx,
			&authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &attrs}},
			metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("asking whether it may %s: %w", describe(attrs), err)
		}
		if !review.Status.Allowed {
			return fmt.Errorf("may not %s", describe(attrs))
		}
	}
	one := metav1.ListOptions{Limit: 1}
	for _, ns := range c.scopes() {
		if _, err := c.client.AppsV1().Deployments(ns).List(ctx, one); err != nil {
			return fmt.Errorf("listing deployments%s: %w", inNamespace(ns), err)
		}
		if _, err := c.client.AppsV1().ReplicaSets(ns).List(ctx, one); err != nil {
			return fmt.Errorf("listing replicasets%s: %w", inNamespace(ns), err)
		}
		if _, err := c.client.CoreV1().Pods(ns).List(ctx, one); err != nil {
			return fmt.Errorf("listing pods%s: %w", inNamespace(ns), err)
		}
	}
	return nil
}

// watch runs the check now and every canLeadRecheck until ctx ends, reporting each result.
func (c leadCheck) watch(ctx context.Context, report func(error)) {
	logger := klog.FromContext(ctx)
	var last string
	wait.UntilWithContext(ctx, func(ctx context.Context) {
		err := c.run(ctx)
		if ctx.Err() != nil {
			return
		}
		report(err)
		if now := fmt.Sprint(err); now != last {
			last = now
			if err != nil {
				logger.Info("This replica could not lead now; not ready", "err", err)
			} else {
				logger.V(2).Info("This replica could lead")
			}
		}
	}, canLeadRecheck)
}

// describe says a permission as RBAC would: "update deployments.apps/status",
// "get leases.coordination.k8s.io gray-controller in gray-system".
func describe(a authorizationv1.ResourceAttributes) string {
	s := a.Verb + " " + a.Resource
	if a.Group != "" {
		s += "." + a.Group
	}
	if a.Subresource != "" {
		s += "/" + a.Subresource
	}
	if a.Name != "" {
		s += " " + a.Name
	}
	return s + inNamespace(a.Namespace)
}

// inNamespace is " in <namespace>", or nothing for every namespace.
func inNamespace(namespace string) string {
	if namespace == metav1.NamespaceAll {
		return ""
	}
	return " in " + namespace
}
