package controller

// The admission policies alongside mode stands on (manifests/guard, manifests/alongside), checked
// at start-up: without them, or when they exempt another identity than the one gray-controller
// runs as, alongside mode would either let the built-in deployment controller roll gray
// Deployments out or be refused its own writes.

import (
	"context"
	"errors"
	"fmt"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// Names of the admission policies and their bindings (each binding is named as its policy).
const (
	// TakeoverPolicyName is the MutatingAdmissionPolicy that takes gray Deployments over in
	// --takeover=admission (manifests/alongside).
	TakeoverPolicyName = "kubegray-takeover"
	// GuardPolicyName is the ValidatingAdmissionPolicy that keeps a taken-over Deployment taken
	// over (manifests/guard).
	GuardPolicyName = "kubegray-guard"
	// FreezePolicyName is the ValidatingAdmissionPolicy that lets only gray-controller resize
	// the ReplicaSets of a taken-over Deployment (manifests/guard).
	FreezePolicyName = "kubegray-freeze"
)

// exemptionCondition is the match condition of every policy that leaves gray-controller's own
// writes alone; its expression names gray-controller's user.
const exemptionCondition = "not-gray-controller"

// mutatingPolicyGroupVersion serves MutatingAdmissionPolicy as GA (on by
// default from Kubernetes 1.36; v1beta1 on 1.34/1.35 behind a feature gate
// and a runtime-config flag).
const mutatingPolicyGroupVersion = "admissionregistration.k8s.io/v1"

// checkAlongsidePolicies fails unless the guard and freeze policies (and with --takeover=admission
// the takeover policy) and their bindings are installed, exempt the user gray-controller runs
// as, and bind in every namespace it watches (namespaces; empty: every namespace).
func checkAlongsidePolicies(ctx context.Context, client kubernetes.Interface, takeover grayapi.Takeover, namespaces []string) error {
	user, err := whoAmI(ctx, client)
	if err != nil {
		return err
	}
	var exempting []policyConditions
	if takeover == grayapi.TakeoverAdmission {
		policy, err := checkTakeoverPolicy(ctx, client)
		if err != nil {
			return err
		}
		exempting = append(exempting, policy)
	}
	for _, name := range []string{GuardPolicyName, FreezePolicyName} {
		policy, err := checkValidatingPolicy(ctx, client, name)
		if err != nil {
			return err
		}
		exempting = append(exempting, policy)
	}
	for _, p := range exempting {
		if err := p.exempts(user); err != nil {
			return err
		}
		if err := p.binds(namespaces); err != nil {
			return err
		}
	}
	klog.FromContext(ctx).Info("The alongside admission policies are installed and exempt this controller", "user", user, "takeover", takeover)
	return nil
}

// whoAmI is the user the API server authenticates this controller as.
func whoAmI(ctx context.Context, client kubernetes.Interface) (string, error) {
	review, err := client.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("asking the API server who gray-controller runs as (SelfSubjectReview): %w", err)
	}
	if review.Status.UserInfo.Username == "" {
		return "", errors.New("asking the API server who gray-controller runs as (SelfSubjectReview): the answer names no user")
	}
	return review.Status.UserInfo.Username, nil
}

// policyConditions is what the check reads of one installed policy: its kind and name, the
// expression of its exemption condition ("" when it has none) and its binding's namespaces.
type policyConditions struct {
	kind, name, exemption string
	namespaceSelector     *metav1.LabelSelector
}

func exemptionOf(conditions []admissionregistrationv1.MatchCondition) string {
	for _, c := range conditions {
		if c.Name == exemptionCondition {
			return c.Expression
		}
	}
	return ""
}

// exempts fails unless the policy's exemption names user as a quoted CEL string.
func (p policyConditions) exempts(user string) error {
	if strings.Contains(p.exemption, "'"+user+"'") || strings.Contains(p.exemption, `"`+user+`"`) {
		return nil
	}
	found := "has no match condition " + exemptionCondition
	if p.exemption != "" {
		found = fmt.Sprintf("exempts another user (match condition %s: %s)", exemptionCondition, p.exemption)
	}
	return fmt.Errorf("refusing to start in --mode=alongside: %s %s %s, but gray-controller runs as %q, so the policy would refuse "+
		"its own writes (the release of every Deployment it took over). Install the policies for this ServiceAccount: the Helm chart "+
		"names its release's ServiceAccount; with kustomize keep the namespace gray-system and the ServiceAccount gray-controller of "+
		"manifests/base, or replace system:serviceaccount:gray-system:gray-controller in the policies' %s conditions with %s",
		p.kind, p.name, found, user, exemptionCondition, user)
}

// binds fails unless the binding's namespaceSelector selects every namespace gray-controller
// watches: with namespaces, each by its kubernetes.io/metadata.name label (the one label the API
// server gives every namespace, so the check needs no read of Namespaces); without, every
// namespace (no selector, or an empty one). A namespace left out would have gray rollouts the
// built-in deployment controller can move.
func (p policyConditions) binds(namespaces []string) error {
	sel := p.namespaceSelector
	if sel == nil || (len(sel.MatchLabels) == 0 && len(sel.MatchExpressions) == 0) {
		return nil
	}
	selector, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return fmt.Errorf("refusing to start in --mode=alongside: the namespaceSelector of %sBinding %s cannot be read: %w", p.kind, p.name, err)
	}
	if len(namespaces) == 0 {
		return fmt.Errorf("refusing to start in --mode=alongside: %sBinding %s binds only in the namespaces %s selects, but gray-controller "+
			"runs the gray Deployments of every namespace; pass --namespaces with the namespaces it binds in, or remove its namespaceSelector",
			p.kind, p.name, metav1.FormatLabelSelector(sel))
	}
	var missed []string
	for _, ns := range namespaces {
		if !selector.Matches(labels.Set{corev1.LabelMetadataName: ns}) {
			missed = append(missed, ns)
		}
	}
	if len(missed) > 0 {
		return fmt.Errorf("refusing to start in --mode=alongside: %sBinding %s does not bind in namespace %s (its namespaceSelector %s, "+
			"matched against the namespace's %s label), which --namespaces watches; add the namespace to the binding's selector",
			p.kind, p.name, strings.Join(missed, ", "), metav1.FormatLabelSelector(sel), corev1.LabelMetadataName)
	}
	return nil
}

// namespaceSelectorOf is the namespaceSelector of a binding's matchResources, nil when it has none.
func namespaceSelectorOf(resources *admissionregistrationv1.MatchResources) *metav1.LabelSelector {
	if resources == nil {
		return nil
	}
	return resources.NamespaceSelector
}

// checkValidatingPolicy fails unless the ValidatingAdmissionPolicy name and its binding exist.
func checkValidatingPolicy(ctx context.Context, client kubernetes.Interface, name string) (policyConditions, error) {
	policies := client.AdmissionregistrationV1()
	var missing []string
	policy, err := policies.ValidatingAdmissionPolicies().Get(ctx, name, metav1.GetOptions{})
	if err := missingOrErr(err, "ValidatingAdmissionPolicy "+name, &missing); err != nil {
		return policyConditions{}, err
	}
	binding, err := policies.ValidatingAdmissionPolicyBindings().Get(ctx, name, metav1.GetOptions{})
	if err := missingOrErr(err, "ValidatingAdmissionPolicyBinding "+name, &missing); err != nil {
		return policyConditions{}, err
	}
	if len(missing) > 0 {
		return policyConditions{}, errors.New("refusing to start in --mode=alongside: " + strings.Join(missing, " and ") +
			" not found; without " + name + " the built-in deployment controller can undo a takeover or resize the replica sets of a gray " +
			"rollout. Install manifests/alongside (Kubernetes 1.36+) or manifests/alongside-eager (1.30+), or the Helm chart with installGuardPolicy=true")
	}
	return policyConditions{kind: "ValidatingAdmissionPolicy", name: name, exemption: exemptionOf(policy.Spec.MatchConditions),
		namespaceSelector: namespaceSelectorOf(binding.Spec.MatchResources)}, nil
}

// missingOrErr records what as missing when err is NotFound, and returns any other error.
func missingOrErr(err error, what string, missing *[]string) error {
	switch {
	case apierrors.IsNotFound(err):
		*missing = append(*missing, what)
		return nil
	case err != nil:
		return fmt.Errorf("checking for %s: %w", what, err)
	}
	return nil
}

// checkTakeoverPolicy fails unless the cluster serves MutatingAdmissionPolicy v1 and has the
// kubegray-takeover policy and binding. Without them nothing takes a gray Deployment over before
// the built-in controller sees its new template, which would then roll it out to every replica:
// --takeover=admission must not start there.
func checkTakeoverPolicy(ctx context.Context, client kubernetes.Interface) (policyConditions, error) {
	resources, err := client.Discovery().ServerResourcesForGroupVersion(mutatingPolicyGroupVersion)
	if err != nil && !apierrors.IsNotFound(err) {
		return policyConditions{}, fmt.Errorf("checking for the %s takeover policy: discovery of %s: %w", TakeoverPolicyName, mutatingPolicyGroupVersion, err)
	}
	served := map[string]bool{}
	if resources != nil {
		for _, r := range resources.APIResources {
			served[r.Name] = true
		}
	}
	if !served["mutatingadmissionpolicies"] || !served["mutatingadmissionpolicybindings"] {
		return policyConditions{}, takeoverPolicyError(fmt.Sprintf("the cluster does not serve MutatingAdmissionPolicy %s (Kubernetes 1.36 or later)", mutatingPolicyGroupVersion))
	}
	var missing []string
	policies := client.AdmissionregistrationV1()
	policy, err := policies.MutatingAdmissionPolicies().Get(ctx, TakeoverPolicyName, metav1.GetOptions{})
	if err := missingOrErr(err, "MutatingAdmissionPolicy "+TakeoverPolicyName, &missing); err != nil {
		return policyConditions{}, err
	}
	binding, err := policies.MutatingAdmissionPolicyBindings().Get(ctx, TakeoverPolicyName, metav1.GetOptions{})
	if err := missingOrErr(err, "MutatingAdmissionPolicyBinding "+TakeoverPolicyName, &missing); err != nil {
		return policyConditions{}, err
	}
	if len(missing) > 0 {
		return policyConditions{}, takeoverPolicyError(strings.Join(missing, " and ") + " not found")
	}
	return policyConditions{kind: "MutatingAdmissionPolicy", name: TakeoverPolicyName, exemption: exemptionOf(policy.Spec.MatchConditions),
		namespaceSelector: namespaceSelectorOf(binding.Spec.MatchResources)}, nil
}

// takeoverPolicyError explains why --takeover=admission refuses to start and
// what to run instead.
func takeoverPolicyError(why string) error {
	return errors.New("refusing to start in --mode=alongside --takeover=admission: " + why +
		"; without the policy the built-in deployment controller would roll a new template out to every replica before a hold. " +
		"Install manifests/alongside (Kubernetes 1.36+), or on older clusters install manifests/alongside-eager, " +
		"which runs the controller with --takeover=eager (Helm: --set installPolicies=false)")
}
