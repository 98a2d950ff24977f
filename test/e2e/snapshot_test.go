package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubegray/kubectl-gray/test/cluster"
)

// snapshot is the observable result of a deployment controller in one
// namespace, normalised so two clusters can be compared: no uids, resource
// versions or timestamps; conditions by type; objects sorted by name.
type snapshot struct {
	Deployments []deploymentSnapshot `json:"deployments"`
	ReplicaSets []replicaSetSnapshot `json:"replicaSets"`
}

type deploymentSnapshot struct {
	Name               string            `json:"name"`
	Generation         int64             `json:"generation"`
	ObservedGeneration int64             `json:"observedGeneration"`
	Paused             bool              `json:"paused,omitempty"`
	Annotations        map[string]string `json:"annotations,omitempty"`
	Replicas           int32             `json:"replicas"`
	UpdatedReplicas    int32             `json:"updatedReplicas"`
	ReadyReplicas      int32             `json:"readyReplicas"`
	AvailableReplicas  int32             `json:"availableReplicas"`
	Unavailable        int32             `json:"unavailableReplicas"`
	Terminating        *int32            `json:"terminatingReplicas,omitempty"`
	CollisionCount     *int32            `json:"collisionCount,omitempty"`
	Conditions         []string          `json:"conditions"`
}

type replicaSetSnapshot struct {
	Name              string            `json:"name"`
	Owner             string            `json:"owner"`
	Replicas          int32             `json:"replicas"`
	Annotations       map[string]string `json:"annotations,omitempty"`
	MinReadySeconds   int32             `json:"minReadySeconds,omitempty"`
	StatusReplicas    int32             `json:"statusReplicas"`
	AvailableReplicas int32             `json:"availableReplicas"`
}

// controllerAnnotations are the annotations a deployment controller writes.
func controllerAnnotations(in map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range in {
		if strings.HasPrefix(k, "deployment.kubernetes.io/") || k == "deprecated.deployment.rollback.to" {
			out[k] = v
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// takeSnapshot reads the namespace and reports whether every object is
// settled as far as a single read can tell (generations observed, every
// ReplicaSet's pods created or removed, every pod kwok will make Ready made so).
func takeSnapshot(ctx context.Context, client kubernetes.Interface, ns string) (snapshot, bool, error) {
	var s snapshot
	deployments, err := client.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return s, false, err
	}
	replicaSets, err := client.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return s, false, err
	}
	settled := true
	for _, d := range deployments.Items {
		if d.Status.ObservedGeneration < d.Generation {
			settled = false
		}
		var conditions []string
		for _, c := range d.Status.Conditions {
			conditions = append(conditions, fmt.Sprintf("%s=%s/%s", c.Type, c.Status, c.Reason))
		}
		sort.Strings(conditions)
		s.Deployments = append(s.Deployments, deploymentSnapshot{
			Name: d.Name, Generation: d.Generation, ObservedGeneration: d.Status.ObservedGeneration,
			Paused: d.Spec.Paused, Annotations: controllerAnnotations(d.Annotations),
			Replicas: d.Status.Replicas, UpdatedReplicas: d.Status.UpdatedReplicas,
			ReadyReplicas: d.Status.ReadyReplicas, AvailableReplicas: d.Status.AvailableReplicas,
			Unavailable: d.Status.UnavailableReplicas, Terminating: d.Status.TerminatingReplicas,
			CollisionCount: d.Status.CollisionCount, Conditions: conditions,
		})
	}
	for _, rs := range replicaSets.Items {
		owner := "<none>"
		if ref := metav1.GetControllerOf(&rs); ref != nil {
			owner = ref.Kind + "/" + ref.Name
		}
		spec := int32(1)
		if rs.Spec.Replicas != nil {
			spec = *rs.Spec.Replicas
		}
		if rs.Status.ObservedGeneration < rs.Generation || rs.Status.Replicas != spec {
			settled = false
		}
		// Ready but not yet available pods are waiting out minReadySeconds:
		// the ReplicaSet controller will write again without any other event.
		if rs.DeletionTimestamp != nil || rs.Status.ReadyReplicas != rs.Status.AvailableReplicas {
			settled = false
		}
		s.ReplicaSets = append(s.ReplicaSets, replicaSetSnapshot{
			Name: rs.Name, Owner: owner, Replicas: spec, Annotations: controllerAnnotations(rs.Annotations),
			MinReadySeconds: rs.Spec.MinReadySeconds, StatusReplicas: rs.Status.Replicas,
			AvailableReplicas: rs.Status.AvailableReplicas,
		})
	}
	pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return s, false, err
	}
	for i := range pods.Items {
		if onItsWayToReady(&pods.Items[i]) {
			settled = false
		}
	}
	sort.Slice(s.Deployments, func(i, j int) bool { return s.Deployments[i].Name < s.Deployments[j].Name })
	sort.Slice(s.ReplicaSets, func(i, j int) bool { return s.ReplicaSets[i].Name < s.ReplicaSets[j].Name })
	return s, settled, nil
}

// onItsWayToReady reports whether kwok's stages will still make pod Ready: it is not Ready, not
// terminating, and its template does not keep it unready on purpose. On a loaded machine that can
// take longer than settleQuiet, and a rollout waiting for it looks settled meanwhile.
func onItsWayToReady(pod *corev1.Pod) bool {
	if pod.DeletionTimestamp != nil {
		return false
	}
	for _, a := range []string{cluster.NeverReadyAnnotation, cluster.CrashLoopAnnotation, cluster.FlapReadinessAnnotation} {
		if _, ok := pod.Annotations[a]; ok {
			return false
		}
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status != corev1.ConditionTrue
		}
	}
	return true
}

func (s snapshot) String() string {
	b, _ := json.MarshalIndent(s, "", "  ")
	return string(b)
}

// settleQuiet is how long a namespace must stay unchanged to count as
// settled: several times longer than any controller reaction here.
const settleQuiet = 1500 * time.Millisecond

// waitSettled polls until the namespace is settled and unchanged for
// settleQuiet, and returns that snapshot.
func waitSettled(ctx context.Context, client kubernetes.Interface, ns string, timeout time.Duration) (snapshot, error) {
	var last string
	var lastSnap snapshot
	stableSince := time.Time{}
	err := cluster.Poll(ctx, timeout, 250*time.Millisecond, func(ctx context.Context) (bool, string, error) {
		s, settled, err := takeSnapshot(ctx, client, ns)
		if err != nil {
			return false, fmt.Sprintf("last error: %v; last snapshot:\n%s", err, last), nil
		}
		cur := s.String()
		switch {
		case !settled:
			stableSince = time.Time{}
		case cur != last || stableSince.IsZero():
			stableSince = time.Now()
		case time.Since(stableSince) >= settleQuiet:
			lastSnap = s
			return true, "", nil
		}
		last, lastSnap = cur, s
		return false, "last snapshot:\n" + cur, nil
	})
	if err != nil {
		return lastSnap, fmt.Errorf("namespace %s not settled: %w", ns, err)
	}
	return lastSnap, nil
}

// replicaSetsByRevision maps revision → spec.replicas of a snapshot's
// ReplicaSets, for assertions that read like the spec's worked examples.
func (s snapshot) replicaSetsByRevision() map[string]int32 {
	out := map[string]int32{}
	for _, rs := range s.ReplicaSets {
		out[rs.Annotations["deployment.kubernetes.io/revision"]] = rs.Replicas
	}
	return out
}
