package deployutil

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestFieldOwner(t *testing.T) {
	entries := []metav1.ManagedFieldsEntry{
		{Manager: "kubectl", FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{"f:labels":{}}}`)},
		{Manager: "nobody"},
		{Manager: "kube-controller-manager", FieldsV1: metav1.NewFieldsV1(`{"f:spec":{"f:replicas":{}}}`)},
		{Manager: "gray-controller", Subresource: "status", FieldsV1: metav1.NewFieldsV1(`{"f:status":{"f:observedGeneration":{}}}`)},
	}
	tests := []struct {
		path []string
		want string
	}{
		{path: []string{"f:spec", "f:replicas"}, want: "kube-controller-manager"},
		{path: []string{"f:status", "f:observedGeneration"}, want: "gray-controller"},
		{path: []string{"f:spec", "f:template"}, want: ""},
		{path: []string{"f:metadata", "f:labels"}, want: "kubectl"},
	}
	for _, tt := range tests {
		if got := FieldOwner(entries, tt.path...); got != tt.want {
			t.Errorf("FieldOwner(%v) = %q, want %q", tt.path, got, tt.want)
		}
	}
}
