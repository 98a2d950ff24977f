package e2e

import (
	"context"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegray/kubectl-gray/test/cluster"
)

// TestStandbyReadyOnlyOnceItCouldLead runs a leader as the manifests' ServiceAccount and a second
// replica as one bound to the same ClusterRole less one verb, delete on replicasets (what
// revisionHistoryLimit needs): the second is a standby that is not ready and says what it
// lacks, so an upgrade to a version that could not lead stops at its first pod. A standby with
// the manifests' RBAC is ready and says it could lead.
func TestStandbyReadyOnlyOnceItCouldLead(t *testing.T) {
	c := cluster.StartForTest(t, cluster.Options{Controllers: cluster.WithoutDeploymentController})
	ctx := context.Background()
	startGrayController(t, c, "--mode=instead")

	role, err := c.Client.RbacV1().ClusterRoles().Get(ctx, "gray-controller", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	partial := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "gray-controller-partial"}}
	for _, rule := range role.Rules {
		if slices.Contains(rule.Resources, "replicasets") {
			rule.Verbs = slices.DeleteFunc(slices.Clone(rule.Verbs), func(v string) bool { return v == "delete" })
		}
		partial.Rules = append(partial.Rules, rule)
	}
	const partialUser = "system:serviceaccount:gray-system:gray-controller-partial"
	subject := []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: partialUser}}
	if _, err := c.Client.RbacV1().ClusterRoles().Create(ctx, partial, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Client.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "gray-controller-partial"}, Subjects: subject,
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "gray-controller-partial"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Client.RbacV1().RoleBindings("gray-system").Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "gray-controller-partial"}, Subjects: subject,
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "gray-controller-leader-election"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	standby := func(name, user string) string {
		flags, readyz, err := grayControllerFlags(impersonatingKubeconfig(t, c, user), "--mode=instead")
		if err != nil {
			t.Fatal(err)
		}
		if err := c.StartComponent(ctx, name, ourBinary(t, "gray-controller"), "", flags...); err != nil {
			t.Fatal(err)
		}
		return readyz
	}
	wantReadyz := func(readyz string, code int, body string) {
		t.Helper()
		eventually(t, 30*time.Second, "GET "+readyz+" answering "+body, func() (bool, string) {
			gotCode, got := getText(readyz)
			return gotCode == code && got == body, got
		})
	}
	wantReadyz(standby("partial", partialUser), http.StatusServiceUnavailable,
		"standby, could not lead now: may not delete replicasets.apps")
	wantReadyz(standby("second", controllerSA), http.StatusOK,
		"ok: standby, not the leader, could lead; informer caches are started when this replica acquires the lease")
}

// getText GETs url and returns its code and body (0 and the error when it cannot).
func getText(url string) (int, string) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err.Error()
	}
	return resp.StatusCode, strings.TrimSpace(string(body))
}
