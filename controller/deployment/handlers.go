package deployment

// The informer event handlers: which Deployment each Deployment, ReplicaSet and pod event
// wakes, as upstream's deployment_controller.go decides it.

import (
	"fmt"
	"reflect"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/kubegray/kubectl-gray/pkg/deployutil"
)

// addWorkloadHandlers prepares one watched namespace's informers (cache transforms, the pod and
// ReplicaSet indexes) and registers the handlers below on them.
func (dc *DeploymentController) addWorkloadHandlers(logger klog.Logger, w workloadInformers) error {
	if err := setCacheTransforms(w.deployments, w.replicaSets, w.pods); err != nil {
		return err
	}
	if err := addPodControllerUIDIndexer(w.pods); err != nil {
		return fmt.Errorf("adding pod controller UID index: %w", err)
	}
	if err := addReplicaSetControllerUIDIndexer(w.replicaSets); err != nil {
		return fmt.Errorf("adding replica set controller UID index: %w", err)
	}
	if _, err := w.deployments.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { dc.addDeployment(logger, obj) },
		UpdateFunc: func(oldObj, newObj any) { dc.updateDeployment(logger, oldObj, newObj) },
		DeleteFunc: func(obj any) { dc.deleteDeployment(logger, obj) },
	}); err != nil {
		return fmt.Errorf("adding deployment event handler: %w", err)
	}
	if _, err := w.replicaSets.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { dc.addReplicaSet(logger, obj) },
		UpdateFunc: func(oldObj, newObj any) { dc.updateReplicaSet(logger, oldObj, newObj) },
		DeleteFunc: func(obj any) { dc.deleteReplicaSet(logger, obj) },
	}); err != nil {
		return fmt.Errorf("adding replicaset event handler: %w", err)
	}
	// Only deletions matter: they can unblock a Recreate rollout waiting for old pods to go.
	if _, err := w.pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
		DeleteFunc: func(obj any) { dc.deletePod(logger, obj) },
	}); err != nil {
		return fmt.Errorf("adding pod event handler: %w", err)
	}
	return nil
}

func (dc *DeploymentController) addDeployment(logger klog.Logger, obj any) {
	d, ok := obj.(*appsv1.Deployment)
	if !ok {
		return
	}
	logger.V(4).Info("Adding deployment", "deployment", klog.KObj(d))
	dc.Enqueue(d)
}

// updateDeployment enqueues on every update, resyncs included: upstream has no resourceVersion
// check here, so periodic resyncs re-sync every Deployment.
func (dc *DeploymentController) updateDeployment(logger klog.Logger, oldObj, newObj any) {
	oldD, ok := oldObj.(*appsv1.Deployment)
	if !ok {
		return
	}
	curD, ok := newObj.(*appsv1.Deployment)
	if !ok {
		return
	}
	logger.V(4).Info("Updating deployment", "deployment", klog.KObj(oldD))
	dc.Enqueue(curD)
}

// deleteDeployment enqueues like upstream does; the sync then misses the Deployment in the
// cache and returns without doing anything.
func (dc *DeploymentController) deleteDeployment(logger klog.Logger, obj any) {
	d, ok := DeletedObject[*appsv1.Deployment](obj)
	if !ok {
		return
	}
	logger.V(4).Info("Deleting deployment", "deployment", klog.KObj(d))
	if key, err := cache.MetaNamespaceKeyFunc(d); err == nil {
		dc.deploymentWrites.forget(key)
		dc.gray.DeploymentDeleted(key, d.UID)
	}
	dc.Enqueue(d)
}

// addReplicaSet wakes the owner of a new ReplicaSet, or every matching Deployment if the
// ReplicaSet is an orphan so that one of them can adopt it.
func (dc *DeploymentController) addReplicaSet(logger klog.Logger, obj any) {
	rs, ok := obj.(*appsv1.ReplicaSet)
	if !ok {
		return
	}
	if rs.DeletionTimestamp != nil {
		// After a controller restart an object can appear already pending deletion.
		dc.deleteReplicaSet(logger, rs)
		return
	}
	if ref := metav1.GetControllerOf(rs); ref != nil {
		d := dc.resolveControllerRef(rs.Namespace, ref)
		if d == nil {
			return
		}
		logger.V(4).Info("ReplicaSet added", "replicaSet", klog.KObj(rs))
		dc.Enqueue(d)
		return
	}
	ds := dc.getDeploymentsForReplicaSet(logger, rs)
	if len(ds) == 0 {
		return
	}
	logger.V(4).Info("Orphan ReplicaSet added", "replicaSet", klog.KObj(rs))
	for _, d := range ds {
		dc.Enqueue(d)
	}
}

// getDeploymentsForReplicaSet lists the Deployments of the ReplicaSet's namespace whose
// selector matches its labels.
func (dc *DeploymentController) getDeploymentsForReplicaSet(logger klog.Logger, rs *appsv1.ReplicaSet) []*appsv1.Deployment {
	all, err := dc.dLister.Deployments(rs.Namespace).List(labels.Everything())
	if err != nil {
		return nil
	}
	ds := deployutil.GetDeploymentsForReplicaSet(rs, all)
	if len(ds) > 1 {
		// Overlapping selectors are a user error; controller refs keep ownership sane anyway.
		logger.V(4).Info("More than one deployment is selecting replica set",
			"replicaSet", klog.KObj(rs), "labels", rs.Labels, "deployment", klog.KObj(ds[0]))
	}
	return ds
}

// updateReplicaSet wakes the old and the new owner when the controller ref changed, the owner
// otherwise, and every matching Deployment for an orphan whose labels or ref changed.
func (dc *DeploymentController) updateReplicaSet(logger klog.Logger, oldObj, newObj any) {
	oldRS, ok := oldObj.(*appsv1.ReplicaSet)
	if !ok {
		return
	}
	curRS, ok := newObj.(*appsv1.ReplicaSet)
	if !ok {
		return
	}
	if curRS.ResourceVersion == oldRS.ResourceVersion {
		// A periodic resync; two versions of an object always differ in resourceVersion.
		return
	}

	curRef := metav1.GetControllerOf(curRS)
	oldRef := metav1.GetControllerOf(oldRS)
	refChanged := !reflect.DeepEqual(curRef, oldRef)
	if refChanged && oldRef != nil {
		if d := dc.resolveControllerRef(oldRS.Namespace, oldRef); d != nil {
			dc.Enqueue(d)
		}
	}
	if curRef != nil {
		d := dc.resolveControllerRef(curRS.Namespace, curRef)
		if d == nil {
			return
		}
		logger.V(4).Info("ReplicaSet updated", "replicaSet", klog.KObj(curRS))
		dc.Enqueue(d)
		return
	}

	labelsChanged := !reflect.DeepEqual(curRS.Labels, oldRS.Labels)
	if labelsChanged || refChanged {
		ds := dc.getDeploymentsForReplicaSet(logger, curRS)
		if len(ds) == 0 {
			return
		}
		logger.V(4).Info("Orphan ReplicaSet updated", "replicaSet", klog.KObj(curRS))
		for _, d := range ds {
			dc.Enqueue(d)
		}
	}
}

// deleteReplicaSet wakes the owner of a deleted ReplicaSet; orphans interest nobody.
func (dc *DeploymentController) deleteReplicaSet(logger klog.Logger, obj any) {
	rs, ok := DeletedObject[*appsv1.ReplicaSet](obj)
	if !ok {
		return
	}
	ref := metav1.GetControllerOf(rs)
	if ref == nil {
		return
	}
	d := dc.resolveControllerRef(rs.Namespace, ref)
	if d == nil {
		return
	}
	logger.V(4).Info("ReplicaSet deleted", "replicaSet", klog.KObj(rs))
	if key, err := cache.MetaNamespaceKeyFunc(d); err == nil {
		dc.gray.ReplicaSetDeleted(key, rs.Name)
	}
	dc.Enqueue(d)
}

// deletePod enqueues the Recreate Deployment owning the pod (via its ReplicaSet) on every pod
// deletion: a Recreate rollout waits for the old pods to be gone before creating the new RS.
func (dc *DeploymentController) deletePod(logger klog.Logger, obj any) {
	pod, ok := DeletedObject[*cachedPod](obj)
	if !ok {
		return
	}
	d := dc.getDeploymentForPod(logger, pod)
	if d == nil {
		return
	}
	logger.V(4).Info("Pod deleted", "pod", klog.KObj(pod))
	if d.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType {
		dc.Enqueue(d)
	}
}

// getDeploymentForPod follows pod → ReplicaSet → Deployment through controller refs, checking
// UIDs at each hop so that a recreated object with the same name is not mistaken for the owner.
func (dc *DeploymentController) getDeploymentForPod(logger klog.Logger, pod *cachedPod) *appsv1.Deployment {
	ref := metav1.GetControllerOf(pod)
	if ref == nil || ref.Kind != "ReplicaSet" {
		return nil
	}
	rs, err := dc.rsLister.ReplicaSets(pod.Namespace).Get(ref.Name)
	if err != nil || rs.UID != ref.UID {
		logger.V(4).Info("Cannot get replicaset for pod", "ownerReference", ref.Name, "pod", klog.KObj(pod), "err", err)
		return nil
	}
	rsRef := metav1.GetControllerOf(rs)
	if rsRef == nil {
		return nil
	}
	return dc.resolveControllerRef(rs.Namespace, rsRef)
}

// resolveControllerRef returns the cached Deployment a controller ref points to, or nil if the
// kind is wrong, it is not cached, or the cached one has another UID.
func (dc *DeploymentController) resolveControllerRef(namespace string, ref *metav1.OwnerReference) *appsv1.Deployment {
	if ref.Kind != controllerKind.Kind {
		return nil
	}
	d, err := dc.dLister.Deployments(namespace).Get(ref.Name)
	if err != nil || d.UID != ref.UID {
		return nil
	}
	return d
}

// DeletedObject returns the object of a delete event, unwrapping the tombstone
// an informer hands over when it missed the delete itself (the object in it
// may be stale); anything else is reported and skipped.
func DeletedObject[T runtime.Object](obj any) (T, bool) {
	if o, ok := obj.(T); ok {
		return o, true
	}
	var zero T
	tombstone, ok := obj.(cache.DeletedFinalStateUnknown)
	if !ok {
		utilruntime.HandleError(fmt.Errorf("couldn't get object from tombstone %#v", obj))
		return zero, false
	}
	o, ok := tombstone.Obj.(T)
	if !ok {
		utilruntime.HandleError(fmt.Errorf("tombstone contained object that is not a %T: %#v", zero, obj))
		return zero, false
	}
	return o, true
}
