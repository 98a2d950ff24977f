package graysync

import (
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	appslisters "k8s.io/client-go/listers/apps/v1"
	"k8s.io/klog/v2/ktesting"

	"github.com/kubegray/kubectl-gray/controller/deployment"
	"github.com/kubegray/kubectl-gray/controller/metrics"
	"github.com/kubegray/kubectl-gray/internal/testutil"
	"github.com/kubegray/kubectl-gray/pkg/deployutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// withReportedStatus records st as gray-controller's status of the Deployment.
func withReportedStatus(t testing.TB, st grayapi.Status) testutil.DeploymentOption {
	t.Helper()
	value, err := grayapi.FormatStatus(st)
	if err != nil {
		t.Fatal(err)
	}
	return testutil.WithAnnotation(grayapi.StatusAnnotation, value)
}

// namespaceListsPort counts the walks through a namespace's cached ReplicaSets.
type namespaceListsPort struct {
	Port
	lists *int
}

func (p namespaceListsPort) ReplicaSets(namespace string) appslisters.ReplicaSetNamespaceLister {
	return namespaceLists{p.Port.ReplicaSets(namespace), p.lists}
}

type namespaceLists struct {
	appslisters.ReplicaSetNamespaceLister
	lists *int
}

func (l namespaceLists) List(selector labels.Selector) ([]*appsv1.ReplicaSet, error) {
	*l.lists++
	return l.ReplicaSetNamespaceLister.List(selector)
}

// TestGrayRolloutsReadOwnReplicaSets: a scrape describes each gray Deployment by its replicas and
// the ReplicaSet it controls at its reported revision, never another Deployment's with the same labels, and
// finds it without walking the namespace's ReplicaSets, so that its cost does not grow with
// what else the namespace holds.
func TestGrayRolloutsReadOwnReplicaSets(t *testing.T) {
	f := newFixture(t)
	web := newDeployment("web", 10, testutil.WithAnnotation(grayapi.PercentAnnotation, "20"),
		withReportedStatus(t, grayapi.Status{Revision: 2, Percent: 20, Target: 2, Phase: grayapi.PhaseHeld}))
	plain := newDeployment("plain", 4)
	f.cache(web, plain,
		testutil.ReplicaSet("web-1", 8, testutil.RSOwnedBy(web), testutil.RSRevision(1), testutil.RSAvailable(8)),
		testutil.ReplicaSet("web-2", 2, testutil.RSOwnedBy(web), testutil.RSRevision(2), testutil.RSAvailable(1)),
		testutil.ReplicaSet("plain-2", 4, testutil.RSOwnedBy(plain), testutil.RSRevision(2), testutil.RSAvailable(4)))

	lists := 0
	gs := &Controller{port: namespaceListsPort{Port: f.gs.port, lists: &lists}}
	got := gs.GrayRollouts()
	if len(got) != 1 || got[0].Namespace != "default" || got[0].Name != "web" {
		t.Fatalf("GrayRollouts = %+v, want default/web alone", got)
	}
	if got[0].CanaryAvailable != 1 || got[0].Replicas != 10 {
		t.Errorf("CanaryAvailable, Replicas = %d, %d, want 1 (web-2's), 10 (web's spec)", got[0].CanaryAvailable, got[0].Replicas)
	}
	if lists != 0 {
		t.Errorf("the scrape walked a namespace's ReplicaSets %d times, want 0", lists)
	}
}

// scrapeListingNamespaces is the scrape as it was before the ReplicaSet cache's index by
// controller: each gray Deployment's ReplicaSet found by a walk through its namespace's. Kept
// only as BenchmarkGrayRollouts' baseline.
func scrapeListingNamespaces(port Port) []metrics.Rollout {
	ds, _ := port.DeploymentLister().List(labels.Everything())
	var out []metrics.Rollout
	for _, d := range ds {
		st, _, _ := grayapi.RecordedStatus(d.Annotations)
		r := metrics.Rollout{Namespace: d.Namespace, Name: d.Name, Status: st}
		selector, _ := metav1.LabelSelectorAsSelector(d.Spec.Selector)
		rss, _ := port.ReplicaSets(d.Namespace).List(selector)
		for _, rs := range rss {
			if ref := metav1.GetControllerOf(rs); ref == nil || ref.UID != d.UID {
				continue
			}
			if rev, err := deployutil.Revision(rs); err == nil && rev == st.Revision {
				r.CanaryAvailable = rs.Status.AvailableReplicas
			}
		}
		out = append(out, r)
	}
	return out
}

// BenchmarkGrayRollouts scrapes 1,000 gray Deployments of 3 ReplicaSets each (their revisions 1
// to 3, the canary at 3), all in one namespace or 10 in each of 100, through the index by
// controller (GrayRollouts) and through a walk of the namespace per Deployment (the baseline).
//
//	go test -run '^$' -bench BenchmarkGrayRollouts -benchtime 20x -count 5 ./controller/graysync/
func BenchmarkGrayRollouts(b *testing.B) {
	const deployments, replicaSetsEach = 1000, 3
	for _, namespaces := range []int{1, 100} {
		port := scrapeFixture(b, deployments, namespaces, replicaSetsEach)
		scrapes := []struct {
			name   string
			scrape func() []metrics.Rollout
		}{
			{"index", (&Controller{port: port}).GrayRollouts},
			{"walk", func() []metrics.Rollout { return scrapeListingNamespaces(port) }},
		}
		for _, s := range scrapes {
			b.Run(fmt.Sprintf("namespaces=%d/%s", namespaces, s.name), func(b *testing.B) {
				for b.Loop() {
					if got := s.scrape(); len(got) != deployments || got[0].CanaryAvailable != 1 {
						b.Fatalf("scrape: %d rollouts, the first %+v", len(got), got[0])
					}
				}
			})
		}
	}
}

// scrapeFixture is a deployment controller's port whose caches hold gray Deployments spread
// evenly over namespaces, each with a selector of its own and replicaSetsEach ReplicaSets, the
// last one its canary with 1 available replica.
func scrapeFixture(b *testing.B, deployments, namespaces, replicaSetsEach int) Port {
	b.Helper()
	_, ctx := ktesting.NewTestContext(b)
	client := fake.NewClientset()
	factory := informers.NewSharedInformerFactory(client, 0)
	caches := deployment.AllNamespaces(factory, informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace("gray-system")), "gray-system")
	dc, err := deployment.NewDeploymentController(ctx, caches, client, deployment.Options{})
	if err != nil {
		b.Fatal(err)
	}
	dIndexer, rsIndexer := factory.Apps().V1().Deployments().Informer().GetIndexer(), factory.Apps().V1().ReplicaSets().Informer().GetIndexer()
	for i := range deployments {
		ns := fmt.Sprintf("ns-%d", i%namespaces)
		st := grayapi.Status{Revision: int64(replicaSetsEach), Percent: 20, Target: 2, Phase: grayapi.PhaseHeld}
		name := fmt.Sprintf("d-%d", i)
		d := newDeployment(name, 10, testutil.WithNamespace(ns), testutil.WithLabels(map[string]string{"app": name}),
			testutil.WithAnnotation(grayapi.PercentAnnotation, "20"), withReportedStatus(b, st))
		d.UID = types.UID(fmt.Sprintf("uid-%s-%d", ns, i))
		if err := dIndexer.Add(d); err != nil {
			b.Fatal(err)
		}
		for rev := 1; rev <= replicaSetsEach; rev++ {
			rs := testutil.ReplicaSet(fmt.Sprintf("%s-%d", d.Name, rev), 1, testutil.RSOwnedBy(d), testutil.RSRevision(int64(rev)), testutil.RSAvailable(1))
			rs.UID = types.UID(fmt.Sprintf("%s-%d", d.UID, rev))
			if err := rsIndexer.Add(rs); err != nil {
				b.Fatal(err)
			}
		}
	}
	return dc
}
