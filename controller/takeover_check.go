package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
)

// TakeoverPolicyName names the MutatingAdmissionPolicy and its binding that
// take gray Deployments over in --takeover=admission (manifests/alongside).
const TakeoverPolicyName = "kubegray-takeover"

// mutatingPolicyGroupVersion serves MutatingAdmissionPolicy as GA (on by
// default from Kubernetes 1.36; v1beta1 on 1.34/1.35 behind a feature gate
// and a runtime-config flag).
const mutatingPolicyGroupVersion = "admissionregistration.k8s.io/v1"

// checkTakeoverPolicies fails unless the cluster serves MutatingAdmissionPolicy
// v1 and has the kubegray-takeover policy and binding. Without them nothing
// takes a gray Deployment over before the built-in controller sees its new
// template, which would then roll it out to every replica: --takeover=admission
// must not start there.
func checkTakeoverPolicies(ctx context.Context, client kubernetes.Interface) error {
	resources, err := client.Discovery().ServerResourcesForGroupVersion(mutatingPolicyGroupVersion)
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("checking for the %s takeover policy: discovery of %s: %w", TakeoverPolicyName, mutatingPolicyGroupVersion, err)
	}
	served := map[string]bool{}
	if resources != nil {
		for _, r := range resources.APIResources {
			served[r.Name] = true
		}
	}
	if !served["mutatingadmissionpolicies"] || !served["mutatingadmissionpolicybindings"] {
		return takeoverPolicyError(fmt.Sprintf("the cluster does not serve MutatingAdmissionPolicy %s (Kubernetes 1.36 or later)", mutatingPolicyGroupVersion))
	}
	var missing []string
	policies := client.AdmissionregistrationV1()
	if _, err := policies.MutatingAdmissionPolicies().Get(ctx, TakeoverPolicyName, metav1.GetOptions{}); err != nil {
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("checking for the %s takeover policy: %w", TakeoverPolicyName, err)
		}
		missing = append(missing, "MutatingAdmissionPolicy "+TakeoverPolicyName)
	}
	if _, err := policies.MutatingAdmissionPolicyBindings().Get(ctx, TakeoverPolicyName, metav1.GetOptions{}); err != nil {
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("checking for the %s takeover policy binding: %w", TakeoverPolicyName, err)
		}
		missing = append(missing, "MutatingAdmissionPolicyBinding "+TakeoverPolicyName)
	}
	if len(missing) > 0 {
		return takeoverPolicyError(strings.Join(missing, " and ") + " not found")
	}
	klog.FromContext(ctx).Info("The takeover policy is installed", "policy", TakeoverPolicyName)
	return nil
}

// takeoverPolicyError explains why --takeover=admission refuses to start and
// what to run instead.
func takeoverPolicyError(why string) error {
	return errors.New("refusing to start in --mode=alongside --takeover=admission: " + why +
		"; without the policy the built-in deployment controller would roll a new template out to every replica before a hold. " +
		"Install manifests/alongside (Kubernetes 1.36+), or on older clusters install manifests/alongside-eager, " +
		"which runs the controller with --takeover=eager (Helm: --set installPolicies=false)")
}
