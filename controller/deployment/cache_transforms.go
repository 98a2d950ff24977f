package deployment

// What the informers keep of each object. Caches are most of this controller's memory, so each
// keeps only what the controller reads: a pod its owner, phase, deletion and what the pods gate
// counts (restarts, OOMKills, readiness), a ReplicaSet everything but its managed fields, a
// Deployment everything but the managed fields of other fields than kubegray.io/status (who
// wrote it: controller/graysync/gray_forged.go). Writes are unaffected: Deployment Updates go
// without managedFields (recordingClient), which keeps the server's, and the two other places
// that read them (the built-in controller check, the conflict diagnosis of controller/alongside)
// read live objects.

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"github.com/kubegray/kubectl-gray/pkg/deployutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
	"github.com/kubegray/kubectl-gray/pkg/podhealth"
)

// setCacheTransforms installs the transforms on the controller's three informers.
func setCacheTransforms(deployments, replicaSets, pods cache.SharedIndexInformer) error {
	for _, t := range []struct {
		what      string
		informer  cache.SharedIndexInformer
		transform cache.TransformFunc
	}{
		{"deployment", deployments, keepStatusOwners},
		{"replica set", replicaSets, dropManagedFields},
		// Pods dominate: only Recreate and the pod-delete handler look at them.
		{"pod", pods, StripPod},
	} {
		if err := t.informer.SetTransform(t.transform); err != nil {
			return fmt.Errorf("installing the %s cache transform: %w", t.what, err)
		}
	}
	return nil
}

// dropManagedFields is the ReplicaSet transform. It clears metadata.managedFields in place: the
// informer hands the transform the object it just decoded, which nothing else holds yet.
// Idempotent, as informers require; other objects pass unchanged.
func dropManagedFields(obj any) (any, error) {
	if rs, ok := obj.(*appsv1.ReplicaSet); ok {
		rs.ManagedFields = nil
	}
	return obj, nil
}

// statusOwnership is the fieldsV1 of a managed-fields entry as the Deployment cache keeps it:
// kubegray.io/status alone, all the gray hook reads of who wrote it.
var statusOwnership = metav1.NewFieldsV1(`{"f:metadata":{"f:annotations":{"f:` + grayapi.StatusAnnotation + `":{}}}}`)

// keepStatusOwners is the Deployment transform: of its managed fields it keeps the entries that
// own kubegray.io/status, each with its manager and operation and statusOwnership for its
// fields (a Deployment usually has one such entry, ours). In place, like dropManagedFields, and
// idempotent; other objects pass unchanged.
func keepStatusOwners(obj any) (any, error) {
	d, ok := obj.(*appsv1.Deployment)
	if !ok {
		return obj, nil
	}
	var kept []metav1.ManagedFieldsEntry
	for _, e := range d.ManagedFields {
		if e.FieldsV1 == nil || !deployutil.OwnsPath(e.FieldsV1.GetRawBytes(), grayapi.StatusFieldPath) {
			continue
		}
		kept = append(kept, metav1.ManagedFieldsEntry{Manager: e.Manager, Operation: e.Operation, FieldsType: e.FieldsType,
			FieldsV1: statusOwnership})
	}
	d.ManagedFields = kept
	return d, nil
}

// cachedPod is what the pod cache keeps of a pod: the metadata StripPod keeps, the phase and
// the summary of its health the gray pods gate reads (podhealth.Pod). A *corev1.Pod, even
// stripped, carries its empty spec and status structs (1,240 bytes before any string); a
// cachedPod holds 629 B per pod against the stripped pod's 1,589 and the whole pod's 2,469
// (BenchmarkPodCache).
type cachedPod struct {
	metav1.ObjectMeta
	Phase corev1.PodPhase
	// health is what the pods gate reads (restarts, OOMKills, readiness): a few dozen bytes.
	health podhealth.Pod
}

// GetObjectKind and DeepCopyObject make a cachedPod a runtime.Object, which informers and
// tombstones carry.
func (p *cachedPod) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

func (p *cachedPod) DeepCopyObject() runtime.Object {
	c := &cachedPod{Phase: p.Phase, health: p.health}
	p.DeepCopyInto(&c.ObjectMeta)
	return c
}

// pod is p as the pod-reading code ported from upstream takes it. It shares p's slices and
// pointers, which must not be modified.
func (p *cachedPod) pod() *corev1.Pod {
	return &corev1.Pod{ObjectMeta: p.ObjectMeta, Status: corev1.PodStatus{Phase: p.Phase}}
}

// StripPod is the pod informer transform: it keeps name, namespace, uid, resourceVersion,
// ownerReferences, deletionTimestamp and status.phase, which is all that oldPodsRunning, the
// controller-UID index and the pod-delete handler read, and the summary of the containers'
// health (podhealth.Of). It is idempotent, as informers require. The gray hook's tests
// seed the pod cache with it.
func StripPod(obj any) (any, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	return &cachedPod{
		ObjectMeta: metav1.ObjectMeta{
			Name:              pod.Name,
			Namespace:         pod.Namespace,
			UID:               pod.UID,
			ResourceVersion:   pod.ResourceVersion,
			OwnerReferences:   pod.OwnerReferences,
			DeletionTimestamp: pod.DeletionTimestamp,
		},
		Phase:  pod.Status.Phase,
		health: podhealth.Of(pod),
	}, nil
}
