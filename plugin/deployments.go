package plugin

import (
	"context"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/resource"
	"k8s.io/client-go/kubernetes"
)

// deploymentName resolves arg, NAME or TYPE/NAME, to the name of a Deployment in namespace: TYPE
// as kubectl resolves it, by cli-runtime's resource.Builder through the server's discovery
// (deploy/web, deployments.v1.apps/web, or a short name the server defines); a NAME alone is a
// Deployment's. Nothing is read but discovery (cached on disk as kubectl caches it): each verb
// reads the Deployment itself. Another kind is refused, since only Deployments roll out in gray.
func deploymentName(getter genericclioptions.RESTClientGetter, namespace, arg string) (string, error) {
	typ, name, qualified := strings.Cut(arg, "/")
	if !qualified {
		typ, name = "deployments", arg
	}
	if typ == "" || name == "" || strings.Contains(name, "/") {
		return "", fmt.Errorf("%q is not a Deployment name; use NAME or deployment/NAME", arg)
	}
	infos, err := deploymentsBuilder(getter, namespace).ResourceTypeOrNameArgs(false, typ+"/"+name).RequireObject(false).Do().Infos()
	if err != nil {
		return "", fmt.Errorf("%q is not a Deployment: %w", arg, err)
	}
	if len(infos) != 1 {
		return "", fmt.Errorf("%q names %d objects, want one Deployment", arg, len(infos))
	}
	if gk := infos[0].Mapping.GroupVersionKind.GroupKind(); gk != appsv1.SchemeGroupVersion.WithKind("Deployment").GroupKind() {
		return "", fmt.Errorf("%q is not a Deployment (it names a %s): kubectl gray works on Deployments only (NAME, deploy/NAME or deployment.apps/NAME)",
			arg, gk)
	}
	return infos[0].Name, nil
}

// deploymentsBuilder is the resource.Builder deploymentName and selectedDeployments start from:
// kubectl's, in namespace, reading objects as unstructured (they need names and kinds only).
func deploymentsBuilder(getter genericclioptions.RESTClientGetter, namespace string) *resource.Builder {
	return resource.NewBuilder(getter).Unstructured().NamespaceParam(namespace).DefaultNamespace()
}

// selectedDeployments lists the names of the Deployments in namespace that selector matches, as
// `kubectl get deployments -l` lists them: one list through cli-runtime's resource.Builder, in
// the server's order.
func selectedDeployments(getter genericclioptions.RESTClientGetter, namespace, selector string) ([]string, error) {
	infos, err := deploymentsBuilder(getter, namespace).ResourceTypes("deployments").LabelSelectorParam(selector).Flatten().Do().Infos()
	if err != nil {
		return nil, fmt.Errorf("listing Deployments in namespace %s with selector %q: %w", namespace, selector, err)
	}
	if len(infos) == 0 {
		return nil, fmt.Errorf("no Deployments in namespace %s match selector %q", namespace, selector)
	}
	names := make([]string, len(infos))
	for i, info := range infos {
		names[i] = info.Name
	}
	return names, nil
}

// deploymentRef is how results name a Deployment, as kubectl does.
func deploymentRef(name string) string {
	return "deployment.apps/" + name
}

// ownedReplicaSets lists the ReplicaSets d controls: selected by d's
// selector and carrying d as controller owner, as the Deployment controller
// and kubectl rollout history count them.
func ownedReplicaSets(ctx context.Context, client kubernetes.Interface, d *appsv1.Deployment) ([]*appsv1.ReplicaSet, string, error) {
	selector, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return nil, "", fmt.Errorf("deployment %s/%s has an invalid selector: %w", d.Namespace, d.Name, err)
	}
	list, err := client.AppsV1().ReplicaSets(d.Namespace).List(ctx, metav1.ListOptions{LabelSelector: selector.String()})
	if err != nil {
		return nil, "", fmt.Errorf("listing ReplicaSets of deployment %s/%s: %w", d.Namespace, d.Name, err)
	}
	var owned []*appsv1.ReplicaSet
	for i := range list.Items {
		rs := &list.Items[i]
		if ref := metav1.GetControllerOf(rs); ref != nil && ref.UID == d.UID {
			owned = append(owned, rs)
		}
	}
	return owned, list.ResourceVersion, nil
}

// ContainerImage is one container of a pod template and its image.
type ContainerImage struct {
	// Name of the container.
	Name string `json:"name"`
	// Image of the container.
	Image string `json:"image"`
	// Init is true for an init container.
	Init bool `json:"init,omitempty"`
}

// templateImages lists the images of a pod template, init containers first
// as the kubelet starts them.
func templateImages(spec *corev1.PodSpec) []ContainerImage {
	var out []ContainerImage
	for _, c := range spec.InitContainers {
		out = append(out, ContainerImage{Name: c.Name, Image: c.Image, Init: true})
	}
	for _, c := range spec.Containers {
		out = append(out, ContainerImage{Name: c.Name, Image: c.Image})
	}
	return out
}

// formatImages renders images as "app=nginx:1.27,sidecar=envoy:1.30".
func formatImages(images []ContainerImage) string {
	s := make([]string, len(images))
	for i, c := range images {
		s[i] = c.Name + "=" + c.Image
	}
	return strings.Join(s, ",")
}

// imageChanges describes how images moved from before to after, e.g.
// "app: nginx:1.26 -> nginx:1.27"; empty when no image changed.
func imageChanges(before, after []ContainerImage) string {
	old := map[string]string{}
	for _, c := range before {
		old[c.Name] = c.Image
	}
	seen := map[string]bool{}
	var changes []string
	for _, c := range after {
		seen[c.Name] = true
		was, ok := old[c.Name]
		switch {
		case !ok:
			changes = append(changes, fmt.Sprintf("%s: (none) -> %s", c.Name, c.Image))
		case was != c.Image:
			changes = append(changes, fmt.Sprintf("%s: %s -> %s", c.Name, was, c.Image))
		}
	}
	for _, c := range before {
		if !seen[c.Name] {
			changes = append(changes, fmt.Sprintf("%s: %s -> (none)", c.Name, c.Image))
		}
	}
	return strings.Join(changes, ", ")
}
