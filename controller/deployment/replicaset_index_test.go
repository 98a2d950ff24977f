package deployment

import (
	"slices"
	"testing"

	"github.com/kubegray/kubectl-gray/internal/testutil"
)

// TestReplicaSetsControlledBy: a Deployment's UID finds the ReplicaSets it controls, whatever
// their labels, and neither another's with the same labels nor an orphan.
func TestReplicaSetsControlledBy(t *testing.T) {
	f := newFixture(t)
	web, api := newDeployment("web", 2), newDeployment("api", 2)
	relabelled := testutil.ReplicaSet("web-old", 0, testutil.RSOwnedBy(web))
	relabelled.Labels = map[string]string{"moved": "away"}
	f.cache(web, api,
		testutil.ReplicaSet("web-new", 2, testutil.RSOwnedBy(web)), relabelled,
		testutil.ReplicaSet("api-new", 2, testutil.RSOwnedBy(api)),
		testutil.ReplicaSet("orphan", 1))

	rss, err := f.dc.ReplicaSetsControlledBy(web.UID)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, rs := range rss {
		names = append(names, rs.Name)
	}
	slices.Sort(names)
	if want := []string{"web-new", "web-old"}; !slices.Equal(names, want) {
		t.Errorf("ReplicaSetsControlledBy(web) = %v, want %v", names, want)
	}
}
