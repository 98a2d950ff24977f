package cluster

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/tools/clientcmd"
)

// This file turns a pod's container into the process that stands for it.

// processSpec is how the stand-in kubelet runs a pod's container.
type processSpec struct {
	binary string
	args   []string
	env    []string
	dir    string // working directory, and HOME
}

// refusal says why the stand-in kubelet cannot run the pod, or "" when it can
// (as far as the pod's shape goes: its env is checked as it is resolved).
func refusal(pod *corev1.Pod) string {
	switch {
	case len(pod.Spec.InitContainers) > 0:
		return "the stand-in kubelet runs no init containers"
	case len(pod.Spec.Containers) != 1:
		return fmt.Sprintf("the stand-in kubelet runs pods of one container; this one has %d", len(pod.Spec.Containers))
	case len(pod.Spec.Containers[0].EnvFrom) > 0:
		return "the stand-in kubelet does not support envFrom"
	case pod.Spec.Containers[0].ReadinessProbe != nil && pod.Spec.Containers[0].ReadinessProbe.HTTPGet == nil:
		return "the stand-in kubelet runs only httpGet readiness probes"
	}
	return ""
}

// processSpec resolves the pod's container into the process that runs it:
// binary, args with $(VAR) expanded and listen addresses moved to the pod's
// host ports, and an env made of the container's and of the kubelet's own
// (PATH, HOME and TMPDIR in podDir, and KUBECONFIG acting as the pod's
// ServiceAccount). Nothing else of the test's environment leaks in.
func (k *Kubelet) processSpec(pod *corev1.Pod, binary string, hostPorts map[int32]int, podDir string) (processSpec, error) {
	container := &pod.Spec.Containers[0]
	names, values, err := containerEnv(pod, container)
	if err != nil {
		return processSpec{}, err
	}
	home, tmp := filepath.Join(podDir, "home"), filepath.Join(podDir, "tmp")
	for _, dir := range []string{home, tmp} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return processSpec{}, err
		}
	}
	kubeconfig := filepath.Join(podDir, "kubeconfig")
	if err := writeImpersonatingKubeconfig(k.cluster.Kubeconfig, kubeconfig, serviceAccountUser(pod)); err != nil {
		return processSpec{}, err
	}
	// Later entries win (os/exec keeps the last value of a name), so the
	// container's own env overrides the kubelet's, as in a real container.
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "TMPDIR=" + tmp, "KUBECONFIG=" + kubeconfig}
	for _, name := range names {
		env = append(env, name+"="+values[name])
	}
	var args []string
	if len(container.Command) > 0 {
		args = append(args, container.Command[1:]...)
	}
	args = append(args, container.Args...)
	for i, arg := range args {
		args[i] = rewriteListenAddress(expandVars(arg, values), hostPorts)
	}
	return processSpec{binary: binary, args: args, env: env, dir: home}, nil
}

// containerEnv resolves the container's env in order, each value expanded
// with the variables defined before it, as a kubelet does: the names in
// order of first definition, and each name's (last) value.
func containerEnv(pod *corev1.Pod, container *corev1.Container) ([]string, map[string]string, error) {
	var names []string
	values := map[string]string{}
	for _, v := range container.Env {
		value := expandVars(v.Value, values)
		if from := v.ValueFrom; from != nil {
			var err error
			switch {
			case from.FieldRef != nil:
				value, err = podField(pod, from.FieldRef.FieldPath)
			case from.ResourceFieldRef != nil:
				value, err = containerMemory(container, from.ResourceFieldRef)
			default:
				err = fmt.Errorf("the stand-in kubelet takes env values from fieldRef and resourceFieldRef only")
			}
			if err != nil {
				return nil, nil, fmt.Errorf("env %s: %w", v.Name, err)
			}
		}
		if _, seen := values[v.Name]; !seen {
			names = append(names, v.Name)
		}
		values[v.Name] = value
	}
	return names, values, nil
}

// podField is the value of a downward-API fieldRef.
func podField(pod *corev1.Pod, path string) (string, error) {
	switch path {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "spec.nodeName":
		return pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.podIP", "status.hostIP":
		return podIP, nil
	}
	return "", fmt.Errorf("the stand-in kubelet does not give fieldRef %s", path)
}

// containerMemory is the value of a resourceFieldRef to the container's
// memory limit or request, in units of its divisor rounded up, as a kubelet
// gives it. Without a limit the limit is the node's allocatable memory.
func containerMemory(container *corev1.Container, ref *corev1.ResourceFieldSelector) (string, error) {
	var memory resource.Quantity
	switch ref.Resource {
	case "limits.memory":
		memory = nodeAllocatable[corev1.ResourceMemory]
		if limit, ok := container.Resources.Limits[corev1.ResourceMemory]; ok {
			memory = limit
		}
	case "requests.memory":
		memory = container.Resources.Requests[corev1.ResourceMemory]
	default:
		return "", fmt.Errorf("the stand-in kubelet gives resourceFieldRef limits.memory and requests.memory only, not %s", ref.Resource)
	}
	divisor := int64(1)
	if !ref.Divisor.IsZero() {
		divisor = ref.Divisor.Value()
	}
	return strconv.FormatInt((memory.Value()+divisor-1)/divisor, 10), nil
}

// expandVars expands s as Kubernetes expands a container's command, args and
// env values: $(NAME) becomes the value of a defined variable, a reference to
// an undefined one stays as written, and $$ is a literal $.
func expandVars(s string, values map[string]string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteString(s[i:])
				return b.String()
			}
			reference := s[i : i+3+end]
			if value, ok := values[s[i+2:i+2+end]]; ok {
				b.WriteString(value)
			} else {
				b.WriteString(reference)
			}
			i += len(reference) - 1
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}

// rewriteListenAddress stands in for the pod's network namespace: an argument
// that ends in a wildcard address (empty host, 0.0.0.0 or [::]) on one of the
// pod's container ports, say "--health-probe-bind-address=:8081", is made to
// listen on 127.0.0.1 on the host port given to that container port, so that
// pods that listen on the same port do not collide.
func rewriteListenAddress(arg string, hostPorts map[int32]int) string {
	colon := strings.LastIndexByte(arg, ':')
	if colon < 0 {
		return arg
	}
	port, err := strconv.ParseInt(arg[colon+1:], 10, 32)
	if err != nil {
		return arg
	}
	hostPort, ok := hostPorts[int32(port)]
	if !ok {
		return arg
	}
	head := arg[:colon]
	host := head[strings.LastIndexByte(head, '=')+1:]
	if host != "" && host != "0.0.0.0" && host != "[::]" {
		return arg
	}
	return head[:len(head)-len(host)] + podIP + ":" + strconv.Itoa(hostPort)
}

// serviceAccountUser is the user name of the pod's ServiceAccount.
func serviceAccountUser(pod *corev1.Pod) string {
	account := pod.Spec.ServiceAccountName
	if account == "" {
		account = "default"
	}
	return "system:serviceaccount:" + pod.Namespace + ":" + account
}

// writeImpersonatingKubeconfig writes to path a copy of the kubeconfig at
// admin that acts as user: the pod's credentials, where a kubelet would mount
// a ServiceAccount token.
func writeImpersonatingKubeconfig(admin, path, user string) error {
	config, err := clientcmd.LoadFromFile(admin)
	if err != nil {
		return err
	}
	for _, auth := range config.AuthInfos {
		auth.Impersonate = user
	}
	return clientcmd.WriteToFile(*config, path)
}
