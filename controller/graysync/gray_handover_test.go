package graysync

import (
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubegray/kubectl-gray/internal/testutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// TestHandOverLease runs web as if it were gray-controller's own Deployment (this process one of
// its pods), at 50% of 2 with the pods gate: held, the gate pending, its canary's one pod ready
// and never restarted. A leader that is the stable revision's pod hands its lease over, once,
// with an event naming itself; the canary's own pod never does; nor does the stable's once the
// canary has restarted.
func TestHandOverLease(t *testing.T) {
	var handedOver []string
	d := testutil.GrayWeb(2, "50", testutil.WithAnnotation(grayapi.GatesAnnotation, "pods"))
	self := types.NamespacedName{Namespace: d.Namespace, Name: "web-v1-0"}
	w := newGrayWorldIn(t, d, Options{Self: self, HandOver: func(reason string) { handedOver = append(handedOver, reason) }})
	w.step()
	w.setImage("v2")
	w.settle()
	wantPhase(t, w, grayapi.PhaseHeld)
	canary := w.canaryName()
	if got := w.sizes(); got["v2"] != 1 || got["v1"] != 1 {
		t.Fatalf("sizes %v, want the canary and the stable revision at 1 each", got)
	}
	if len(handedOver) != 0 {
		t.Fatalf("handed over %q before any pod was seen", handedOver)
	}
	w.putPods(canary, 1)
	w.putPods("web-v1", 1)
	w.takeEvents()

	w.f.now = testNow.Add(time.Second)
	w.sync()
	const reason = "handing the leader-election lease to the canary of revision 2, ready and not restarted since the hold settled: its gates judge it while it leads"
	if !slices.Equal(handedOver, []string{reason}) {
		t.Fatalf("handed over %q, want once: %q", handedOver, reason)
	}
	w.wantEvents("Normal " + grayapi.ReasonGrayLeaseHandedOver + " web-v1-0: " + reason)

	handedOver = nil
	w.f.gs.self.Name = canary + "-0"
	w.sync()
	if len(handedOver) != 0 {
		t.Errorf("the canary's own pod handed over %q", handedOver)
	}

	w.f.gs.self = self
	obj, _, err := w.f.factory.Core().V1().Pods().Informer().GetIndexer().GetByKey(d.Namespace + "/" + canary + "-0")
	if err != nil || obj == nil {
		t.Fatalf("the canary's pod is not cached: %v", err)
	}
	rs := w.replicaSet(canary)
	w.f.cache(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: rs.Namespace, Name: canary + "-0", UID: types.UID(canary + "-0"),
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(rs, appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))}},
		Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "app", RestartCount: 1}}}})
	w.sync()
	if len(handedOver) != 0 {
		t.Errorf("handed the lease to a canary that restarted: %q", handedOver)
	}
}
