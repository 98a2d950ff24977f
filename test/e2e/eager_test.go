package e2e

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/kubegray/kubectl-gray/pkg/grayapi"
	"github.com/kubegray/kubectl-gray/test/cluster"
)

// TestAlongsideEagerGrayScenarios runs the gray scenarios in alongside mode as
// manifests/alongside-eager installs it, for clusters without
// MutatingAdmissionPolicy v1 (Kubernetes 1.30 to 1.35): the guard policy
// only, and gray-controller on --takeover=eager as its ServiceAccount. It runs
// on whichever control plane KUBEGRAY_CONTROLPLANE names (make test runs it
// on 1.35 too).
func TestAlongsideEagerGrayScenarios(t *testing.T) {
	c := cluster.StartForTest(t, cluster.Options{})
	applyManifests(t, c, overlayManifests(t, "alongside-eager"))
	startAlongsideController(t, c, "--takeover=eager")
	runGrayScenarios(t, c, grayMode{env: newEagerEnv, invalidPaused: true})
}

// newEagerEnv is newGrayEnv for eager takeover: a Complete rollout stays taken
// over (paused on Recreate) while annotated, and every Deployment left at the
// end is taken over exactly when it is annotated.
func newEagerEnv(t *testing.T, c *cluster.Cluster, name string) *grayEnv {
	t.Helper()
	var e *grayEnv
	t.Cleanup(func() { eagerTakenOverWhileAnnotated(t, e) })
	e = newGrayEnv(t, c, "eager-"+name)
	e.eager = true
	return e
}

// eagerTakenOverWhileAnnotated fails for an annotated Deployment that is not
// taken over, and for one without the annotation that still is.
func eagerTakenOverWhileAnnotated(t *testing.T, e *grayEnv) {
	t.Helper()
	eachDeploymentLeft(t, e, func(d appsv1.Deployment) {
		_, annotated := d.Annotations[grayapi.PercentAnnotation]
		_, saved := d.Annotations[grayapi.StrategyAnnotation]
		taken := saved && d.Spec.Paused && d.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType
		if annotated != taken {
			t.Errorf("deployment %s/%s: annotated %t but taken over %t (paused %t, strategy %s, %s=%q)", d.Namespace, d.Name,
				annotated, taken, d.Spec.Paused, d.Spec.Strategy.Type, grayapi.StrategyAnnotation, d.Annotations[grayapi.StrategyAnnotation])
		}
	})
}

// TestAlongsideAdmissionRefusesWithoutPolicy starts gray-controller with
// --takeover=admission where the takeover policy is missing: it must refuse
// to start and name the overlay to use instead. On Kubernetes 1.35 the reason
// is that MutatingAdmissionPolicy v1 is not served at all.
func TestAlongsideAdmissionRefusesWithoutPolicy(t *testing.T) {
	c := cluster.StartForTest(t, cluster.Options{})
	applyManifests(t, c, overlayManifests(t, "alongside-eager"))
	version, err := c.Client.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	why := "MutatingAdmissionPolicy kubegray-takeover and MutatingAdmissionPolicyBinding kubegray-takeover not found"
	if version.Minor == "35" {
		why = "the cluster does not serve MutatingAdmissionPolicy admissionregistration.k8s.io/v1 (Kubernetes 1.36 or later)"
	}
	wantRefusedToStart(t, c, "refusing to start in --mode=alongside --takeover=admission: "+why, "manifests/alongside-eager", "--takeover=eager")
}
