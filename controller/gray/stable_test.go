package gray

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/kubegray/kubectl-gray/pkg/deployutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// TestStableToGoBackTo pins which old ReplicaSet an undo or an abort goes back to.
func TestStableToGoBackTo(t *testing.T) {
	labelled := planRS(1, 8, 8, 10)
	labelled.Labels = map[string]string{grayapi.StableLabel: grayapi.StableLabelValue}
	tests := []struct {
		name   string
		oldRSs []*appsv1.ReplicaSet
		stable int64
		want   string
	}{
		{name: "the stable label wins over the recorded revision", oldRSs: []*appsv1.ReplicaSet{planRS(2, 0, 0, 10), labelled}, stable: 2, want: "web-1"},
		{name: "without a label, the recorded stable revision", oldRSs: []*appsv1.ReplicaSet{planRS(1, 0, 0, 10), planRS(2, 8, 8, 10)}, stable: 2, want: "web-2"},
		{name: "neither: none", oldRSs: []*appsv1.ReplicaSet{planRS(1, 0, 0, 10)}, stable: 2},
		{name: "no stable revision recorded: none", oldRSs: []*appsv1.ReplicaSet{planRS(1, 8, 8, 10)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ""
			if rs := StableToGoBackTo(tt.oldRSs, tt.stable); rs != nil {
				got = rs.Name
			}
			if got != tt.want {
				t.Errorf("StableToGoBackTo = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestStableGone pins when a rollout has nothing left to go back to. Revision 3 is rolled out
// over stable revision 1 with two hold points.
func TestStableGone(t *testing.T) {
	renumbered := planRS(4, 2, 2, 10)
	renumbered.Annotations[deployutil.RevisionHistoryAnnotation] = "1"
	labelled := planRS(2, 8, 8, 10)
	labelled.Labels = map[string]string{grayapi.StableLabel: grayapi.StableLabelValue}
	st := grayapi.Status{Revision: 3, StableRevision: 1, Step: 0}
	tests := []struct {
		name   string
		st     grayapi.Status
		newRS  *appsv1.ReplicaSet
		oldRSs []*appsv1.ReplicaSet
		want   bool
	}{
		{name: "revision 1 left", st: st, newRS: planRS(3, 2, 2, 10), oldRSs: []*appsv1.ReplicaSet{planRS(1, 8, 8, 10)}},
		{name: "revision 1 deleted", st: st, newRS: planRS(3, 2, 2, 10), oldRSs: []*appsv1.ReplicaSet{planRS(2, 0, 0, 10)}, want: true},
		{name: "another ReplicaSet carries the stable label", st: st, newRS: planRS(3, 2, 2, 10), oldRSs: []*appsv1.ReplicaSet{labelled}},
		{name: "revision 1 renumbered among the old ones", st: st, newRS: planRS(5, 2, 2, 10), oldRSs: []*appsv1.ReplicaSet{renumbered}},
		{name: "the new ReplicaSet is revision 1 renumbered: a rollback, not a loss", st: st, newRS: renumbered},
		{name: "at its last step nothing is gone", st: grayapi.Status{Revision: 3, StableRevision: 1, Step: 2}, newRS: planRS(3, 10, 10, 10)},
		{name: "no new ReplicaSet yet", st: st, oldRSs: []*appsv1.ReplicaSet{planRS(2, 0, 0, 10)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := StableGone(tt.st, 2, tt.newRS, tt.oldRSs); got != tt.want {
				t.Errorf("StableGone = %t, want %t", got, tt.want)
			}
		})
	}
}
