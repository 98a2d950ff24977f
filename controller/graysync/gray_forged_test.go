package graysync

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestForeignStatusWriter(t *testing.T) {
	status := `{"f:metadata":{"f:annotations":{"f:kubegray.io/status":{},"f:kubegray.io/percent":{}}}}`
	percent := `{"f:metadata":{"f:annotations":{"f:kubegray.io/percent":{}}}}`
	only := `{"f:metadata":{"f:annotations":{"f:kubegray.io/status":{}}}}`
	entry := func(manager, fields string) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: manager, FieldsV1: metav1.NewFieldsV1(fields)}
	}
	tests := []struct {
		name    string
		entries []metav1.ManagedFieldsEntry
		want    string
	}{
		{name: "ours", entries: []metav1.ManagedFieldsEntry{entry("kubectl-client-side-apply", percent), entry("gray-controller", status)}},
		{name: "kubectl annotate", entries: []metav1.ManagedFieldsEntry{entry("gray-controller", percent), entry("kubectl-annotate", status)},
			want: "kubectl-annotate"},
		{name: "shared with us by an apply of the same value", entries: []metav1.ManagedFieldsEntry{entry("argocd", status), entry("gray-controller", status)}},
		{name: "shared with us, as the Deployment cache keeps the owners (deployment.keepStatusOwners)",
			entries: []metav1.ManagedFieldsEntry{entry("gray-controller", only), entry("kubectl-annotate", only)}},
		{name: "nobody (managed fields dropped)"},
		{name: "unreadable fields", entries: []metav1.ManagedFieldsEntry{entry("someone", "{")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{ManagedFields: tt.entries}}
			if got := foreignStatusWriter(d, "gray-controller"); got != tt.want {
				t.Fatalf("foreignStatusWriter = %q, want %q", got, tt.want)
			}
		})
	}
	if got := foreignStatusWriter(nil, "gray-controller"); got != "" {
		t.Fatalf("foreignStatusWriter(nil) = %q", got)
	}
}
