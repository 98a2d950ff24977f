package gray

import (
	appsv1 "k8s.io/api/apps/v1"

	"github.com/kubegray/kubectl-gray/pkg/deployutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// StoredStatus is our status as a Deployment carries it (zero when absent or unreadable) and
// whether it names a rollout. An Invalid status written before any rollout was identified has
// revision 0 and names none, but its phase and message still tell which bad value was
// reported. err says why a status present could not be read: someone edited our annotation,
// and the rollout is re-identified from the ReplicaSets.
func StoredStatus(d *appsv1.Deployment) (st grayapi.Status, names bool, err error) {
	st, _, err = grayapi.RecordedStatus(d.Annotations)
	return st, st.Revision > 0, err
}

// sameStep reports whether prev, a status read, is of st's rollout at st's hold point (same
// revision, same step): what the step's clocks, its hold's gates, its failure and hold-for carry
// over from one sync to the next. Whether prev is trusted is the caller's to ask.
func sameStep(prev, st grayapi.Status) bool {
	return prev.Revision == st.Revision && prev.Step == st.Step
}

// HasLeftovers reports whether a Deployment that is not gray (any more) still carries our
// status annotation or one of our conditions.
func HasLeftovers(d *appsv1.Deployment) bool {
	if _, annotated := d.Annotations[grayapi.StatusAnnotation]; annotated {
		return true
	}
	for _, c := range grayapi.Conditions {
		if deployutil.GetDeploymentCondition(d.Status, c) != nil {
			return true
		}
	}
	return false
}
