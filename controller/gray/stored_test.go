package gray

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// Our status as a Deployment carries it: a rollout is named only by a revision; an Invalid
// status of revision 0 still says what was reported; an edited annotation is an error and no
// status.
func TestStoredStatus(t *testing.T) {
	held := `{"mode":"instead","revision":2,"step":0,"percent":20,"target":2,"phase":"Held","message":"held"}`
	invalid := `{"mode":"instead","revision":0,"step":0,"percent":0,"target":0,"phase":"Invalid","message":"bad percent"}`
	for _, tc := range []struct {
		name      string
		value     *string
		names     bool
		phase     grayapi.Phase
		wantError bool
	}{
		{"absent", nil, false, "", false},
		{"a rollout held", &held, true, grayapi.PhaseHeld, false},
		{"Invalid before any rollout", &invalid, false, grayapi.PhaseInvalid, false},
		{"edited by hand", ptr.To(`{"revision":`), false, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{}}}
			if tc.value != nil {
				d.Annotations[grayapi.StatusAnnotation] = *tc.value
			}
			st, names, err := StoredStatus(d)
			if names != tc.names || st.Phase != tc.phase || (err != nil) != tc.wantError {
				t.Errorf("StoredStatus = phase %q, names %t, err %v; want phase %q, names %t, error %t", st.Phase, names, err, tc.phase, tc.names, tc.wantError)
			}
		})
	}
}

// Leftovers are our annotation or either of our conditions; another controller's condition is
// not one.
func TestHasLeftovers(t *testing.T) {
	withCondition := func(t appsv1.DeploymentConditionType) *appsv1.Deployment {
		return &appsv1.Deployment{Status: appsv1.DeploymentStatus{Conditions: []appsv1.DeploymentCondition{{Type: t, Status: corev1.ConditionTrue}}}}
	}
	for _, tc := range []struct {
		name string
		d    *appsv1.Deployment
		want bool
	}{
		{"nothing", &appsv1.Deployment{}, false},
		{"our status", &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{grayapi.StatusAnnotation: "{}"}}}, true},
		{"GrayHeld", withCondition(grayapi.ConditionGrayHeld), true},
		{"Stalled", withCondition(grayapi.ConditionStalled), true},
		{"Progressing only", withCondition(appsv1.DeploymentProgressing), false},
	} {
		if got := HasLeftovers(tc.d); got != tc.want {
			t.Errorf("%s: HasLeftovers = %t, want %t", tc.name, got, tc.want)
		}
	}
}
