package plugin

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// grayAPIServer serves one Deployment, web, over HTTP as the API server
// would, with no ReplicaSets, pods or events. Its first watch of web sends
// one change and ends the response, as the API server does when a watch
// times out; later watches start from the version they ask for.
type grayAPIServer struct {
	t  *testing.T
	mu sync.Mutex
	d  *appsv1.Deployment
	// watches receives the resourceVersion of each watch of web.
	watches chan string
	// changes are what the watches after the first send.
	changes chan *appsv1.Deployment
}

func (s *grayAPIServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	q := r.URL.Query()
	switch {
	case r.URL.Path == "/apis/apps/v1/namespaces/default/deployments/web":
		s.mu.Lock()
		s.write(w, s.d)
		s.mu.Unlock()
	case q.Get("watch") != "true":
		// An empty list of whatever was asked for: the client's type.
		_, _ = w.Write([]byte(`{"metadata":{"resourceVersion":"200"},"items":[]}`))
	case r.URL.Path == "/apis/apps/v1/namespaces/default/deployments":
		s.watches <- q.Get("resourceVersion")
		w.WriteHeader(http.StatusOK)
		if q.Get("resourceVersion") == "100" {
			s.event(w, s.update(func(d *appsv1.Deployment) { d.ResourceVersion = "105" }))
			return
		}
		for {
			select {
			case d := <-s.changes:
				s.event(w, s.update(func(live *appsv1.Deployment) { *live = *d }))
			case <-r.Context().Done():
				return
			}
		}
	default:
		// ReplicaSets and pods: nothing changes.
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}
}

// update changes the served Deployment and returns a copy of it.
func (s *grayAPIServer) update(change func(d *appsv1.Deployment)) *appsv1.Deployment {
	s.mu.Lock()
	defer s.mu.Unlock()
	change(s.d)
	return s.d.DeepCopy()
}

func (s *grayAPIServer) write(w http.ResponseWriter, obj runtime.Object) {
	if err := json.NewEncoder(w).Encode(obj); err != nil {
		s.t.Error(err)
	}
}

func (s *grayAPIServer) event(w http.ResponseWriter, d *appsv1.Deployment) {
	d.APIVersion, d.Kind = "apps/v1", "Deployment"
	raw, err := json.Marshal(d)
	if err != nil {
		s.t.Fatal(err)
	}
	s.write(w, &metav1.WatchEvent{Type: "MODIFIED", Object: runtime.RawExtension{Raw: raw}})
	w.(http.Flusher).Flush()
}

// Through a real client and HTTP: the API server ends the Deployment's
// watch response mid-wait; --until reopens it from the version it last saw
// and ends when web is held.
func TestStatusUntilOverHTTPOutlivesAnEndedWatch(t *testing.T) {
	d := progressingWeb(t)[0].(*appsv1.Deployment)
	d.APIVersion, d.Kind = "apps/v1", "Deployment"
	srv := &grayAPIServer{t: t, d: d, watches: make(chan string, 10), changes: make(chan *appsv1.Deployment)}
	server := httptest.NewServer(srv)
	defer server.Close()
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: server.URL})
	if err != nil {
		t.Fatal(err)
	}

	streams, out, _ := testStreams()
	o := NewStatusOptions(streams)
	o.Now, o.Namespace, o.Client, o.Until = clock, ns, cs, untilHeld
	done := make(chan error, 1)
	go func() {
		o.Getter = testNames()
		err := o.complete([]string{"web"})
		if err == nil {
			err = o.Run(context.Background())
		}
		done <- err
	}()

	if rv := waitFor(t, srv.watches, "the first watch"); rv != "100" {
		t.Fatalf("first watch from %q, want 100", rv)
	}
	if rv := waitFor(t, srv.watches, "the watch reopened"); rv != "105" {
		t.Fatalf("watch reopened from %q, want 105 (the last version seen)", rv)
	}
	held := d.DeepCopy()
	s, _ := grayapi.FormatStatus(grayapi.Status{Mode: grayapi.ModeInstead, Revision: 2, StableRevision: 1, Step: 1, Percent: 30, Target: 3,
		Phase: grayapi.PhaseHeld, ObservedGeneration: 4, HeldAt: heldAt(0)})
	held.Annotations[grayapi.StatusAnnotation], held.ResourceVersion = s, "106"
	srv.changes <- held
	if err := waitFor(t, done, "status to return"); err != nil {
		t.Fatalf("status --until held: %v", err)
	}
	want := "Waiting for deployment.apps/web to be held: Progressing at 30% (step 2/3), 0 of 3 new replicas available\n" +
		"deployment.apps/web held at 30% (step 2/3, revision 2)\n"
	if out.String() != want {
		t.Errorf("output:\n%s\nwant:\n%s", out, want)
	}
}
