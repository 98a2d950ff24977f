package plugin

// The alongside-mode takeover `kubectl gray set --image` sends in the same patch as the image,
// and when it does not (--patch-takeover).

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegray/kubectl-gray/pkg/deployutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// takeOver takes d over for alongside mode as the kubegray-takeover admission
// policy would: spec.paused, strategy Recreate (rollingUpdate removed), the
// original strategy saved in kubegray.io/strategy. It leaves alone a
// Deployment already taken over, one on Recreate (which has no gray rollout),
// and with --patch-takeover=auto one that gray-controller runs in instead mode,
// where pausing would hold the rollout before it starts.
func (o *SetOptions) takeOver(d *appsv1.Deployment) (bool, error) {
	if o.Takeover == takeoverNever {
		return false, nil
	}
	if _, taken := d.Annotations[grayapi.StrategyAnnotation]; taken {
		return false, nil
	}
	if o.Takeover == takeoverAuto && runInsteadMode(d) {
		return false, nil
	}
	if d.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType {
		return false, nil
	}
	annotations, err := grayapi.TakeoverAnnotations(d)
	if err != nil {
		return false, fmt.Errorf("deployment %s/%s: %w", d.Namespace, d.Name, err)
	}
	for key, value := range annotations {
		metav1.SetMetaDataAnnotation(&d.ObjectMeta, key, value)
	}
	d.Spec.Paused = true
	d.Spec.Strategy = grayapi.TakenOverStrategy()
	return true, nil
}

// runInsteadMode reports whether gray-controller in instead mode runs d: its
// kubegray.io/status says so or, for a Deployment that was never gray and so
// has none, gray-controller owns status.observedGeneration. That field belongs
// to whichever controller syncs the Deployment: gray-controller in instead
// mode, the built-in one (kube-controller-manager) otherwise, because in
// alongside mode gray-controller patches only its own annotation and
// condition of the status.
func runInsteadMode(d *appsv1.Deployment) bool {
	if st, recorded, err := grayapi.RecordedStatus(d.Annotations); recorded {
		return err == nil && st.Mode == grayapi.ModeInstead
	}
	return observedGenerationOwner(d) == grayapi.ControllerFieldManager
}

// observedGenerationOwner is the field manager that owns status.observedGeneration
// in d's managedFields, "" if none does.
func observedGenerationOwner(d *appsv1.Deployment) string {
	return deployutil.FieldOwner(d.ManagedFields, "f:status", "f:observedGeneration")
}
