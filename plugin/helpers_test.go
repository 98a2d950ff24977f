package plugin

import (
	"bytes"
	"encoding/json"
	"flag"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubegray/kubectl-gray/internal/testutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/discovery/cached/memory"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// now is the frozen clock of every test.
var now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func clock() time.Time { return now }

func ago(d time.Duration) metav1.Time { return metav1.NewTime(now.Add(-d)) }

// checkGolden compares got with testdata/<verb>/<name>.golden, or rewrites
// the file with -update.
func checkGolden(t *testing.T, verb, name string, got string) {
	t.Helper()
	path := filepath.Join("testdata", verb, name+".golden")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading golden file (run go test ./plugin/ -update to create it): %v", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (rerun with -update if the change is intended)\n--- got ---\n%s\n--- want ---\n%s", path, got, want)
	}
}

func testStreams() (genericiooptions.IOStreams, *bytes.Buffer, *bytes.Buffer) {
	streams, _, out, errOut := genericiooptions.NewTestIOStreams()
	return streams, out, errOut
}

// Fixtures: a Deployment "web" in "default" selecting app=web, one container
// "app", and its ReplicaSets, pods and events.

const ns = "default"

func podTemplate(image string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: image}}},
	}
}

// deployment builds a Deployment the way a reader of the cluster finds it: ten replicas of
// nginx:1.26, all updated and available, at generation 3, revision 1, created two days ago.
func deployment(name string, opts ...testutil.DeploymentOption) *appsv1.Deployment {
	d := testutil.Deployment(name, testutil.WithUID(), testutil.WithReplicas(10), testutil.WithRevision(1), testutil.WithGeneration(3, 3))
	d.ResourceVersion, d.CreationTimestamp = "100", ago(48*time.Hour)
	d.Spec.Selector.MatchLabels = map[string]string{"app": "web"}
	d.Spec.Template = podTemplate("nginx:1.26")
	d.Status.Replicas, d.Status.UpdatedReplicas, d.Status.ReadyReplicas, d.Status.AvailableReplicas = 10, 10, 10, 10
	for _, o := range opts {
		o(d)
	}
	return d
}

func withCounts(current, updated, ready, available int32) testutil.DeploymentOption {
	return func(d *appsv1.Deployment) {
		d.Status.Replicas, d.Status.UpdatedReplicas, d.Status.ReadyReplicas, d.Status.AvailableReplicas = current, updated, ready, available
	}
}

func withCondition(typ appsv1.DeploymentConditionType, status corev1.ConditionStatus, reason, message string, at time.Duration) testutil.DeploymentOption {
	return func(d *appsv1.Deployment) {
		d.Status.Conditions = append(d.Status.Conditions, appsv1.DeploymentCondition{
			Type: typ, Status: status, Reason: reason, Message: message, LastTransitionTime: ago(at), LastUpdateTime: ago(at),
		})
	}
}

// withGray sets the hold points and a controller status (written through
// grayapi, as the controller would).
func withGray(t *testing.T, percent string, st *grayapi.Status) testutil.DeploymentOption {
	return func(d *appsv1.Deployment) {
		d.Annotations[grayapi.PercentAnnotation] = percent
		if st != nil {
			s, err := grayapi.FormatStatus(*st)
			if err != nil {
				t.Fatal(err)
			}
			d.Annotations[grayapi.StatusAnnotation] = s
		}
	}
}

// What a gray-controller lists in its status as served, in the fixtures' states: a hold in
// instead mode (where an unpause moves on as "next" does), a rollout in flight that has not
// reached its hold point, and an Aborted one.
var (
	servesHeld = grayapi.Serves{grayapi.RequestNext, grayapi.RequestFull, grayapi.RequestAbort, grayapi.RequestUndo,
		grayapi.RequestUnpause}
	servesInFlight = grayapi.Serves{grayapi.RequestAbort, grayapi.RequestUndo}
	servesAborted  = grayapi.Serves{grayapi.RequestUndo, grayapi.RequestRetry}
)

// withOlderGray is withGray as a gray-controller older than Status.Serves writes it: without
// the list (st has none), so that the verbs fall back to the rules that controller applied.
func withOlderGray(t *testing.T, percent string, st *grayapi.Status) testutil.DeploymentOption {
	return func(d *appsv1.Deployment) {
		withGray(t, percent, st)(d)
		if st == nil {
			return
		}
		rest, ok := strings.CutPrefix(d.Annotations[grayapi.StatusAnnotation], `{"serves":[],`)
		if !ok {
			t.Fatalf("status %s does not begin with an empty serves", d.Annotations[grayapi.StatusAnnotation])
		}
		d.Annotations[grayapi.StatusAnnotation] = "{" + rest
	}
}

func heldAt(d time.Duration) *metav1.Time {
	t := ago(d)
	return &t
}

func replicaSet(d *appsv1.Deployment, rev, hash, image string, replicas, ready int32, created time.Duration) *appsv1.ReplicaSet {
	tpl := podTemplate(image)
	tpl.Labels["pod-template-hash"] = hash
	isController := true
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{
			Name: d.Name + "-" + hash, Namespace: d.Namespace, UID: types.UID("uid-rs-" + hash),
			Labels:            map[string]string{"app": "web", "pod-template-hash": hash},
			Annotations:       map[string]string{"deployment.kubernetes.io/revision": rev},
			CreationTimestamp: ago(created),
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "apps/v1", Kind: "Deployment", Name: d.Name, UID: d.UID, Controller: &isController,
			}},
		},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web", "pod-template-hash": hash}},
			Template: tpl,
		},
		Status: appsv1.ReplicaSetStatus{Replicas: replicas, ReadyReplicas: ready, AvailableReplicas: ready},
	}
}

func pod(rs *appsv1.ReplicaSet, suffix string, ready bool, restarts int32, created time.Duration) *corev1.Pod {
	isController := true
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: ago(created)}}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: rs.Name + "-" + suffix, Namespace: rs.Namespace, Labels: rs.Spec.Template.Labels,
			CreationTimestamp: ago(created),
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID, Controller: &isController,
			}},
		},
		Spec: rs.Spec.Template.Spec,
		Status: corev1.PodStatus{
			Phase:             corev1.PodRunning,
			Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: status}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Ready: ready, RestartCount: restarts, State: running}},
		},
	}
}

func grayEvent(d *appsv1.Deployment, name, typ, reason, message string, count int32, last time.Duration) *corev1.Event {
	return &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: name, Namespace: d.Namespace},
		InvolvedObject: corev1.ObjectReference{Kind: "Deployment", Namespace: d.Namespace, Name: d.Name, UID: d.UID},
		Type:           typ, Reason: reason, Message: message, Count: count, LastTimestamp: ago(last),
	}
}

// patches returns the patch actions a fake clientset recorded.
func patches(cs *fake.Clientset) []k8stesting.PatchActionImpl {
	var out []k8stesting.PatchActionImpl
	for _, a := range cs.Actions() {
		if p, ok := a.(k8stesting.PatchActionImpl); ok {
			out = append(out, p)
		}
	}
	return out
}

// enforceResourceVersion makes the fake clientset behave like the API
// server for patches that carry a resourceVersion: a mismatch is a Conflict.
// before, if set, runs before the first patch is checked, to simulate a
// concurrent writer; it runs inside the fake's lock, so it must use
// cs.Tracker() rather than the clientset.
func enforceResourceVersion(t *testing.T, cs *fake.Clientset, before func()) {
	first := true
	cs.PrependReactor("patch", "deployments", func(action k8stesting.Action) (bool, runtime.Object, error) {
		p := action.(k8stesting.PatchActionImpl)
		if first && before != nil {
			first = false
			before()
		}
		live, err := cs.Tracker().Get(appsv1.SchemeGroupVersion.WithResource("deployments"), p.Namespace, p.Name)
		if err != nil {
			return true, nil, err
		}
		rv := patchResourceVersion(t, p)
		if rv != "" && rv != live.(*appsv1.Deployment).ResourceVersion {
			return true, nil, apierrors.NewConflict(appsv1.Resource("deployments"), p.Name, errConcurrentWrite)
		}
		return false, nil, nil
	})
}

var errConcurrentWrite = errString("the object has been modified; please apply your changes to the latest version and try again")

type errString string

func (e errString) Error() string { return string(e) }

// patchResourceVersion reads the resourceVersion precondition of a patch.
func patchResourceVersion(t *testing.T, p k8stesting.PatchActionImpl) string {
	t.Helper()
	if p.PatchType == types.JSONPatchType {
		var ops []jsonPatchOp
		if err := json.Unmarshal(p.Patch, &ops); err != nil {
			t.Fatalf("patch is not a JSON patch: %v", err)
		}
		for _, op := range ops {
			if op.Path == "/metadata/resourceVersion" {
				return op.Value.(string)
			}
		}
		return ""
	}
	var m struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(p.Patch, &m); err != nil {
		t.Fatalf("patch is not JSON: %v", err)
	}
	return m.Metadata.ResourceVersion
}

func withObjectLabels(labels map[string]string) testutil.DeploymentOption {
	return func(d *appsv1.Deployment) { d.Labels = labels }
}

// testNames is what the verbs resolve their argument with in tests (deploymentName): the
// discovery of a cluster serving Deployments (short name deploy) and StatefulSets in apps/v1,
// and a server address nothing is sent to.
func testNames() genericclioptions.RESTClientGetter {
	return testGetter("https://127.0.0.1:1")
}

// testGetter is testNames' discovery with server as the address requests go to.
func testGetter(server string) genericclioptions.RESTClientGetter {
	discovery := &fakediscovery.FakeDiscovery{Fake: &k8stesting.Fake{Resources: []*metav1.APIResourceList{{
		GroupVersion: "apps/v1",
		APIResources: []metav1.APIResource{
			{Name: "deployments", Namespaced: true, Kind: "Deployment", ShortNames: []string{"deploy"}, Verbs: metav1.Verbs{"get", "list"}},
			{Name: "statefulsets", Namespaced: true, Kind: "StatefulSet", ShortNames: []string{"sts"}, Verbs: metav1.Verbs{"get", "list"}},
		},
	}}}}
	config := clientcmd.NewDefaultClientConfig(clientcmdapi.Config{}, &clientcmd.ConfigOverrides{
		ClusterInfo: clientcmdapi.Cluster{Server: server}})
	return genericclioptions.NewTestConfigFlags().WithDiscoveryClient(memory.NewMemCacheClient(discovery)).WithClientConfig(config)
}

// deploymentLister serves, on 127.0.0.1, the one request a selector makes of the API server
// (list the Deployments of a namespace with a labelSelector) from cs, so that the verbs'
// resource.Builder and their typed client see the same objects. Close it when done.
func deploymentLister(cs *fake.Clientset) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
		if r.Method != http.MethodGet || len(parts) != 6 || parts[0] != "apis" || parts[1] != "apps" || parts[2] != "v1" ||
			parts[3] != "namespaces" || parts[5] != "deployments" {
			http.Error(w, "only a list of Deployments is served here, not "+r.Method+" "+r.URL.Path, http.StatusNotFound)
			return
		}
		list, err := cs.AppsV1().Deployments(parts[4]).List(r.Context(), metav1.ListOptions{LabelSelector: r.URL.Query().Get("labelSelector")})
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		list.APIVersion, list.Kind = "apps/v1", "DeploymentList"
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(list)
	}))
}
