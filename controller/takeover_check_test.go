package controller

import (
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2/ktesting"
)

// clusterWith is a fake cluster serving MutatingAdmissionPolicy v1 when served, with objs.
func clusterWith(served bool, objs ...runtime.Object) *fake.Clientset {
	client := fake.NewClientset(objs...)
	if served {
		client.Discovery().(*fakediscovery.FakeDiscovery).Resources = []*metav1.APIResourceList{{
			GroupVersion: "admissionregistration.k8s.io/v1",
			APIResources: []metav1.APIResource{{Name: "mutatingadmissionpolicies"}, {Name: "mutatingadmissionpolicybindings"},
				{Name: "validatingadmissionpolicies"}},
		}}
	}
	return client
}

func TestCheckTakeoverPolicies(t *testing.T) {
	policy := &admissionregistrationv1.MutatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "kubegray-takeover"}}
	binding := &admissionregistrationv1.MutatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: "kubegray-takeover"}}
	other := &admissionregistrationv1.MutatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: "someone-else"}}
	tests := []struct {
		name    string
		client  *fake.Clientset
		wantErr string
	}{
		{name: "installed", client: clusterWith(true, policy, binding)},
		{name: "not served (Kubernetes 1.35)", client: clusterWith(false),
			wantErr: "the cluster does not serve MutatingAdmissionPolicy admissionregistration.k8s.io/v1 (Kubernetes 1.36 or later)"},
		{name: "binding missing", client: clusterWith(true, policy, other),
			wantErr: "MutatingAdmissionPolicyBinding kubegray-takeover not found"},
		{name: "both missing", client: clusterWith(true),
			wantErr: "MutatingAdmissionPolicy kubegray-takeover and MutatingAdmissionPolicyBinding kubegray-takeover not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			err := checkTakeoverPolicies(ctx, tt.client)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("checkTakeoverPolicies: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
			}
			for _, fix := range []string{"refusing to start in --mode=alongside --takeover=admission", "manifests/alongside-eager", "--takeover=eager"} {
				if !strings.Contains(err.Error(), fix) {
					t.Fatalf("error %q does not say %q", err, fix)
				}
			}
		})
	}
}
