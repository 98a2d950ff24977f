package gray

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/kubegray/kubectl-gray/internal/testutil"
)

func TestRevisionInFlight(t *testing.T) {
	created := time.Date(2026, 11, 1, 11, 0, 0, 0, time.UTC)
	rs := func(revision string) *appsv1.ReplicaSet {
		r := testutil.ReplicaSet("rs-"+revision, 1, testutil.RSCreatedAt(created))
		if revision != "" {
			r.Annotations = map[string]string{"deployment.kubernetes.io/revision": revision}
		}
		return r
	}
	tests := []struct {
		name  string
		newRS *appsv1.ReplicaSet
		old   []string
		want  int64
	}{
		{name: "no new ReplicaSet yet", old: []string{"1", "3"}, want: 4},
		{name: "new ReplicaSet one above the old", newRS: rs("4"), old: []string{"1", "3"}, want: 4},
		{name: "old ReplicaSet serving the template again is renumbered", newRS: rs("2"), old: []string{"1", "3"}, want: 4},
		{name: "new ReplicaSet above the next revision keeps its own", newRS: rs("5"), old: []string{"1", "3"}, want: 5},
		{name: "new ReplicaSet without a revision", newRS: rs(""), old: []string{"1"}, want: 2},
		{name: "nothing at all", want: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var old []*appsv1.ReplicaSet
			for _, r := range tt.old {
				old = append(old, rs(r))
			}
			if got := RevisionInFlight(tt.newRS, old); got != tt.want {
				t.Fatalf("RevisionInFlight = %d, want %d", got, tt.want)
			}
		})
	}
}
