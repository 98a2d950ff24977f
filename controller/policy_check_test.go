package controller

import (
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2/ktesting"

	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

const installedUser = "system:serviceaccount:gray-system:gray-controller"

// clusterWith is a fake cluster serving MutatingAdmissionPolicy v1 when served, with objs, where
// gray-controller is authenticated as user.
func clusterWith(served bool, user string, objs ...runtime.Object) *fake.Clientset {
	client := fake.NewClientset(objs...)
	if served {
		client.Discovery().(*fakediscovery.FakeDiscovery).Resources = []*metav1.APIResourceList{{
			GroupVersion: "admissionregistration.k8s.io/v1",
			APIResources: []metav1.APIResource{{Name: "mutatingadmissionpolicies"}, {Name: "mutatingadmissionpolicybindings"},
				{Name: "validatingadmissionpolicies"}},
		}}
	}
	client.PrependReactor("create", "selfsubjectreviews", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, &authenticationv1.SelfSubjectReview{Status: authenticationv1.SelfSubjectReviewStatus{
			UserInfo: authenticationv1.UserInfo{Username: user}}}, nil
	})
	return client
}

// exempting is the match condition every policy of manifests/ carries, naming user.
func exempting(user string) []admissionregistrationv1.MatchCondition {
	return []admissionregistrationv1.MatchCondition{
		{Name: "taken-over", Expression: "has(object.metadata.annotations)"},
		{Name: "not-gray-controller", Expression: "request.userInfo.username != '" + user + "'"},
	}
}

// installed is every policy and binding of manifests/alongside, exempting user.
func installed(user string) []runtime.Object {
	objs := []runtime.Object{
		&admissionregistrationv1.MutatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "kubegray-takeover"},
			Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{MatchConditions: exempting(user)}},
		&admissionregistrationv1.MutatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: "kubegray-takeover"}},
	}
	for _, name := range []string{"kubegray-guard", "kubegray-freeze"} {
		objs = append(objs,
			&admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{MatchConditions: exempting(user)}},
			&admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: name}})
	}
	return objs
}

// without drops the objects of a kind and name from objs.
func without(objs []runtime.Object, kind, name string) []runtime.Object {
	var out []runtime.Object
	for _, o := range objs {
		if m, _ := o.(metav1.Object); kindOf(o) == kind && m.GetName() == name {
			continue
		}
		out = append(out, o)
	}
	return out
}

// kindOf is the kind of one of installed's objects.
func kindOf(o runtime.Object) string {
	switch o.(type) {
	case *admissionregistrationv1.MutatingAdmissionPolicy:
		return "MutatingAdmissionPolicy"
	case *admissionregistrationv1.MutatingAdmissionPolicyBinding:
		return "MutatingAdmissionPolicyBinding"
	case *admissionregistrationv1.ValidatingAdmissionPolicy:
		return "ValidatingAdmissionPolicy"
	}
	return "ValidatingAdmissionPolicyBinding"
}

// boundIn gives every binding among objs a namespaceSelector choosing the namespaces by name, as
// the chart renders it for its namespaces value.
func boundIn(objs []runtime.Object, namespaces ...string) []runtime.Object {
	resources := &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpIn, Values: namespaces}}}}
	var out []runtime.Object
	for _, o := range objs {
		switch b := o.DeepCopyObject().(type) {
		case *admissionregistrationv1.MutatingAdmissionPolicyBinding:
			b.Spec.MatchResources = resources
			o = b
		case *admissionregistrationv1.ValidatingAdmissionPolicyBinding:
			b.Spec.MatchResources = resources
			o = b
		}
		out = append(out, o)
	}
	return out
}

func TestCheckAlongsidePolicies(t *testing.T) {
	const overlaid = "system:serviceaccount:platform:gray"
	eagerOnly := without(without(installed(installedUser), "MutatingAdmissionPolicy", "kubegray-takeover"),
		"MutatingAdmissionPolicyBinding", "kubegray-takeover")
	tests := []struct {
		name     string
		takeover grayapi.Takeover
		client   *fake.Clientset
		// namespaces is --namespaces.
		namespaces []string
		// wantErr is every part the refusal must say; none means it starts.
		wantErr []string
	}{
		{name: "admission: installed", takeover: grayapi.TakeoverAdmission, client: clusterWith(true, installedUser, installed(installedUser)...)},
		{name: "eager: guard and freeze installed", takeover: grayapi.TakeoverEager, client: clusterWith(false, installedUser, eagerOnly...)},
		{name: "admission: not served (Kubernetes 1.35)", takeover: grayapi.TakeoverAdmission, client: clusterWith(false, installedUser, eagerOnly...),
			wantErr: []string{"refusing to start in --mode=alongside --takeover=admission",
				"the cluster does not serve MutatingAdmissionPolicy admissionregistration.k8s.io/v1 (Kubernetes 1.36 or later)",
				"manifests/alongside-eager", "--takeover=eager"}},
		{name: "admission: takeover binding missing", takeover: grayapi.TakeoverAdmission,
			client:  clusterWith(true, installedUser, without(installed(installedUser), "MutatingAdmissionPolicyBinding", "kubegray-takeover")...),
			wantErr: []string{"MutatingAdmissionPolicyBinding kubegray-takeover not found", "manifests/alongside-eager"}},
		{name: "admission: takeover policy and binding missing", takeover: grayapi.TakeoverAdmission, client: clusterWith(true, installedUser, eagerOnly...),
			wantErr: []string{"MutatingAdmissionPolicy kubegray-takeover and MutatingAdmissionPolicyBinding kubegray-takeover not found"}},
		{name: "eager: freeze policy missing", takeover: grayapi.TakeoverEager,
			client: clusterWith(false, installedUser, without(eagerOnly, "ValidatingAdmissionPolicy", "kubegray-freeze")...),
			wantErr: []string{"refusing to start in --mode=alongside: ValidatingAdmissionPolicy kubegray-freeze not found",
				"manifests/alongside-eager", "installGuardPolicy=true"}},
		{name: "eager: nothing installed", takeover: grayapi.TakeoverEager, client: clusterWith(false, installedUser),
			wantErr: []string{"ValidatingAdmissionPolicy kubegray-guard and ValidatingAdmissionPolicyBinding kubegray-guard not found"}},
		{name: "admission: running as another ServiceAccount than the policies exempt", takeover: grayapi.TakeoverAdmission,
			client: clusterWith(true, overlaid, installed(installedUser)...),
			wantErr: []string{"MutatingAdmissionPolicy kubegray-takeover exempts another user",
				"request.userInfo.username != '" + installedUser + "'", `gray-controller runs as "` + overlaid + `"`,
				"with " + overlaid}},
		{name: "eager: running as another ServiceAccount than the policies exempt", takeover: grayapi.TakeoverEager,
			client:  clusterWith(false, overlaid, eagerOnly...),
			wantErr: []string{"ValidatingAdmissionPolicy kubegray-guard exempts another user", `gray-controller runs as "` + overlaid + `"`}},
		{name: "admission: policies rendered for the identity it runs as", takeover: grayapi.TakeoverAdmission,
			client: clusterWith(true, overlaid, installed(overlaid)...)},
		{name: "admission: bound in the namespaces it watches, and more", takeover: grayapi.TakeoverAdmission, namespaces: []string{"shop"},
			client: clusterWith(true, installedUser, boundIn(installed(installedUser), "shop", "web")...)},
		{name: "admission: bound everywhere, watching some namespaces", takeover: grayapi.TakeoverAdmission, namespaces: []string{"shop"},
			client: clusterWith(true, installedUser, installed(installedUser)...)},
		{name: "eager: a binding leaves out a namespace it watches", takeover: grayapi.TakeoverEager, namespaces: []string{"shop", "api", "web"},
			client: clusterWith(false, installedUser, boundIn(eagerOnly, "shop")...),
			wantErr: []string{"refusing to start in --mode=alongside: ValidatingAdmissionPolicyBinding kubegray-guard does not bind in namespace api, web",
				"its namespaceSelector kubernetes.io/metadata.name in (shop)", "add the namespace to the binding's selector"}},
		{name: "admission: bound in some namespaces, watching every namespace", takeover: grayapi.TakeoverAdmission,
			client: clusterWith(true, installedUser, boundIn(installed(installedUser), "shop")...),
			wantErr: []string{"MutatingAdmissionPolicyBinding kubegray-takeover binds only in the namespaces kubernetes.io/metadata.name in (shop) selects",
				"pass --namespaces with the namespaces it binds in"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			err := checkAlongsidePolicies(ctx, tt.client, tt.takeover, tt.namespaces)
			if len(tt.wantErr) == 0 {
				if err != nil {
					t.Fatalf("checkAlongsidePolicies: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("started; want a refusal saying %q", tt.wantErr)
			}
			for _, want := range tt.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Fatalf("refusal %q does not say %q", err, want)
				}
			}
		})
	}
}
