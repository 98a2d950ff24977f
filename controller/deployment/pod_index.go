package deployment

// The pod cache's index by controller: Recreate and the gray pods gate find a ReplicaSet's pods by
// their owner's UID, without a label selector.

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/kubegray/kubectl-gray/pkg/podhealth"
)

// podControllerUIDIndex indexes pods by the UID of their controller ownerReference (orphan pods
// are not indexed at all, which keeps the index small).
const podControllerUIDIndex = "kubegray.io/pod-controller-uid"

// addPodControllerUIDIndexer indexes pods by their controller's UID (idempotent per informer).
func addPodControllerUIDIndexer(informer cache.SharedIndexInformer) error {
	if _, exists := informer.GetIndexer().GetIndexers()[podControllerUIDIndex]; exists {
		return nil
	}
	return informer.AddIndexers(cache.Indexers{podControllerUIDIndex: controllerUID})
}

// controllerUID is the podControllerUIDIndex function: the UID of the object's controller.
func controllerUID(obj any) ([]string, error) {
	o, ok := obj.(metav1.Object)
	if !ok {
		return nil, nil
	}
	ref := metav1.GetControllerOfNoCopy(o)
	if ref == nil {
		return nil, nil
	}
	return []string{string(ref.UID)}, nil
}

// GetPodMapForDeployment maps each ReplicaSet's UID to the pods it controls according to their
// controller ref, terminal and terminating pods included, regardless of labels. The pods share
// the cache's metadata (StripPod) and must not be modified.
func (dc *DeploymentController) GetPodMapForDeployment(d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) (map[types.UID][]*corev1.Pod, error) {
	podMap := make(map[types.UID][]*corev1.Pod, len(rsList))
	for _, rs := range rsList {
		objs, err := dc.podIndexer.ByIndex(podControllerUIDIndex, string(rs.UID))
		if err != nil {
			return nil, fmt.Errorf("deployment %s/%s: listing pods of replica set %s: %w", d.Namespace, d.Name, rs.Name, err)
		}
		pods := []*corev1.Pod{}
		for _, obj := range objs {
			pod, ok := obj.(*cachedPod)
			if !ok || pod.Namespace != rs.Namespace {
				continue
			}
			// Same owner identity as upstream's namespace/Kind/Name/UID index key.
			ref := metav1.GetControllerOfNoCopy(pod)
			if ref == nil || ref.Kind != "ReplicaSet" || ref.Name != rs.Name {
				continue
			}
			pods = append(pods, pod.pod())
		}
		podMap[rs.UID] = pods
	}
	return podMap, nil
}

// PodHealth is the health summary (podhealth.Pod) of each pod the ReplicaSet of rsUID
// controls that is not terminating: what the gray pods gate reads.
func (dc *DeploymentController) PodHealth(rsUID types.UID) []podhealth.Pod {
	objs, err := dc.podIndexer.ByIndex(podControllerUIDIndex, string(rsUID))
	if err != nil {
		return nil
	}
	var pods []podhealth.Pod
	for _, obj := range objs {
		if pod, ok := obj.(*cachedPod); ok && pod.DeletionTimestamp == nil {
			pods = append(pods, pod.health)
		}
	}
	return pods
}
