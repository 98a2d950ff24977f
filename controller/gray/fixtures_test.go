package gray

import (
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kubegray/kubectl-gray/internal/testutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// testNow is the instant every decision here is asked at.
var testNow = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

// grayDeployment is web: replicas of image v1, maxSurge and maxUnavailable 25%, hold points
// percent, at generation 1.
func grayDeployment(replicas int32, percent string) *appsv1.Deployment {
	d := testutil.Deployment("web", testutil.WithTypeMeta(), testutil.WithUID(), testutil.WithReplicas(replicas),
		testutil.WithLabels(map[string]string{"foo": "bar"}), testutil.WithImage("v1"),
		testutil.WithRollingUpdate(intstr.FromString("25%"), intstr.FromString("25%")),
		testutil.WithAnnotation(grayapi.PercentAnnotation, percent))
	d.Generation = 1
	return d
}
