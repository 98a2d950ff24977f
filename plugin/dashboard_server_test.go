package plugin

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubegray/kubectl-gray/internal/testutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

const testToken = "test-token"

// dashboardFixture is web held at 20% of "20,50": revision 2 (nginx:1.26, the template)
// holds 2 of 10 pods, stable revision 1 (nginx:1.25) the other 8.
func dashboardFixture(t *testing.T) []runtime.Object {
	held := heldStatus(0, 20)
	held.Serves = servesHeld
	d := deployment("web", testutil.WithRevision(2), testutil.WithGeneration(4, 4), withGray(t, "20,50", held))
	stable := replicaSet(d, "1", "old", "nginx:1.25", 8, 8, 10*time.Minute)
	canary := replicaSet(d, "2", "new", "nginx:1.26", 2, 2, 5*time.Minute)
	return []runtime.Object{d, stable, canary,
		pod(canary, "a", true, 0, 4*time.Minute), pod(canary, "b", true, 0, 4*time.Minute),
		grayEvent(d, "e1", "Normal", grayapi.ReasonGrayHeld, "web-new holds 2/10 (20%), all 2 available", 1, time.Minute)}
}

// testDashboard serves the dashboard of every namespace of cs on a loopback test server.
func testDashboard(t *testing.T, cs *fake.Clientset, readOnly bool) *httptest.Server {
	t.Helper()

	c, err := newClusterCache(cs, metav1.NamespaceAll)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.start(t.Context()); err != nil {
		t.Fatal(err)
	}
	s, err := newDashboardServer(c, cs, "all namespaces", testToken, readOnly, clock)
	if err != nil {
		t.Fatal(err)
	}
	go s.list.run(t.Context(), c.rowChanges)
	ts := httptest.NewUnstartedServer(nil)
	ts.Config.Handler = newGuard(testToken, ts.Listener.Addr()).wrap(s.handler())
	ts.Start()
	t.Cleanup(ts.Close)
	return ts
}

// post sends an action the way the page does: this run's token, the dashboard's origin.
func post(t *testing.T, ts *httptest.Server, path string, header map[string]string) (int, actionAnswer) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, ts.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(tokenHeader, testToken)
	req.Header.Set("Origin", ts.URL)
	for k, v := range header {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	res, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var a actionAnswer
	if err := json.NewDecoder(res.Body).Decode(&a); err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, a
}

func getJSON(t *testing.T, ts *httptest.Server, path string, v any) int {
	t.Helper()
	res, err := ts.Client().Get(ts.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if err := json.NewDecoder(res.Body).Decode(v); err != nil {
		t.Fatal(err)
	}
	return res.StatusCode
}

func actionNames(offers []actionOffer) []string {
	var names []string
	for _, a := range offers {
		names = append(names, a.Name)
	}
	return names
}

// The list answers every gray Deployment with its canary's available pods and the actions the
// verbs would accept; a Deployment without kubegray.io/percent is not in it.
func TestDashboardRows(t *testing.T) {
	objs := append(dashboardFixture(t), deployment("plain"))
	ts := testDashboard(t, fake.NewClientset(objs...), false)
	var list struct {
		Items []rolloutRow `json:"items"`
	}
	if code := getJSON(t, ts, "/api/rollouts", &list); code != http.StatusOK {
		t.Fatalf("GET /api/rollouts: %d", code)
	}
	if len(list.Items) != 1 {
		t.Fatalf("got %d rows, want web only: %+v", len(list.Items), list.Items)
	}
	r := list.Items[0]
	if r.Name != "web" || r.Phase != grayapi.PhaseHeld || r.NewAvailableReplicas == nil || *r.NewAvailableReplicas != 2 || r.Revisions != nil {
		t.Errorf("row = %s/%s %s newAvailable %v revisions %v; want web Held, 2 new available, no revisions", r.Namespace, r.Name, r.Phase, r.NewAvailableReplicas, r.Revisions)
	}
	if got, want := actionNames(r.Actions), []string{actionResume, actionResumeFull, actionAbort, actionUndo}; !slices.Equal(got, want) {
		t.Errorf("actions = %v, want %v", got, want)
	}
	if r.Actions[0].Label != "Resume to 50%" {
		t.Errorf("resume label = %q, want the next hold point", r.Actions[0].Label)
	}
}

// The rollout page has the status view with its ReplicaSets and pods, the gray events, the
// share series and the text `kubectl gray status` prints; an unknown Deployment is a 404.
func TestDashboardDetail(t *testing.T) {
	ts := testDashboard(t, fake.NewClientset(dashboardFixture(t)...), false)
	var d rolloutDetail
	if code := getJSON(t, ts, "/api/rollouts/default/web", &d); code != http.StatusOK {
		t.Fatalf("GET detail: %d", code)
	}
	if len(d.Revisions) != 2 || len(d.Revisions[0].Pods) != 2 || len(d.Timeline) != 1 || !strings.Contains(d.StatusText, "Held") {
		t.Errorf("detail: %d revisions, %d pods of the newest, %d events, status text %q", len(d.Revisions), len(d.Revisions[0].Pods), len(d.Timeline), d.StatusText)
	}
	// The ReplicaSet's creation, the GrayHeld event, then the share seen live (2 of 10).
	var shares []float64
	for _, p := range d.Share {
		shares = append(shares, p.Share)
	}
	if want := []float64{0, 20, 20}; !slices.Equal(shares, want) {
		t.Errorf("share = %v, want %v", shares, want)
	}
	var missing actionAnswer
	if code := getJSON(t, ts, "/api/rollouts/default/nope", &missing); code != http.StatusNotFound || !strings.Contains(missing.Error, "default/nope") {
		t.Errorf("unknown Deployment: %d %q", code, missing.Error)
	}
}

// An action writes the verb's request with the user's client; a verb's refusal is a 409 with
// its message, an RBAC refusal the API server's 403.
func TestDashboardActions(t *testing.T) {
	cs := fake.NewClientset(dashboardFixture(t)...)
	ts := testDashboard(t, cs, false)

	code, a := post(t, ts, "/api/rollouts/default/web/resume", nil)
	if code != http.StatusOK || a.Message != "deployment.apps/web gray resumed to 50% (revision 2)" {
		t.Fatalf("resume: %d %+v", code, a)
	}
	d, err := cs.AppsV1().Deployments(ns).Get(t.Context(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := d.Annotations[grayapi.ResumeAnnotation]; got != grayapi.FormatResume(grayapi.Resume{Revision: 2}) {
		t.Errorf("%s = %q after resume", grayapi.ResumeAnnotation, got)
	}

	code, a = post(t, ts, "/api/rollouts/default/web/retry", nil)
	if code != http.StatusConflict || !strings.Contains(a.Error, "is not Aborted (phase Held") {
		t.Errorf("retry of a held rollout: %d %+v; want the verb's refusal", code, a)
	}

	cs.PrependReactor("patch", "deployments", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "apps", Resource: "deployments"}, "web", nil)
	})
	code, a = post(t, ts, "/api/rollouts/default/web/abort", nil)
	if code != http.StatusForbidden || !strings.Contains(a.Error, "you may not patch deployments.apps") {
		t.Errorf("abort without RBAC: %d %+v", code, a)
	}

	code, a = post(t, ts, "/api/rollouts/default/web/promote", nil)
	if code != http.StatusNotFound || !strings.Contains(a.Error, `unknown action "promote"`) {
		t.Errorf("unknown action: %d %+v", code, a)
	}
}

// Read-only mode offers no action and refuses every one, and its pages carry no token.
func TestDashboardReadOnly(t *testing.T) {
	cs := fake.NewClientset(dashboardFixture(t)...)
	ts := testDashboard(t, cs, true)
	var list struct {
		Items []rolloutRow `json:"items"`
	}
	getJSON(t, ts, "/api/rollouts", &list)
	if len(list.Items) != 1 || len(list.Items[0].Actions) != 0 {
		t.Errorf("read-only rows: %+v", list.Items)
	}
	code, a := post(t, ts, "/api/rollouts/default/web/resume", nil)
	if code != http.StatusForbidden || !strings.Contains(a.Error, "--read-only") {
		t.Errorf("resume in read-only mode: %d %+v", code, a)
	}
	if n := len(patches(cs)); n != 0 {
		t.Errorf("read-only mode sent %d patches", n)
	}
	res, err := ts.Client().Get(ts.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	page, _ := io.ReadAll(res.Body)
	if !strings.Contains(string(page), `<meta name="gray-token" content="">`) {
		t.Errorf("read-only page carries a token:\n%s", page)
	}
}

// A page's stream sends the state at once, then each change of the cluster.
func TestDashboardStream(t *testing.T) {
	cs := fake.NewClientset(dashboardFixture(t)...)
	ts := testDashboard(t, cs, false)
	events := sseData(t, ts, "/api/stream")
	next := func() rowsUpdate {
		var u rowsUpdate
		if err := json.Unmarshal(<-events, &u); err != nil {
			t.Fatal(err)
		}
		return u
	}
	if u := next(); !u.Reset || len(u.Upsert) != 1 {
		t.Fatalf("first update: %+v", u)
	}
	d, err := cs.AppsV1().Deployments(ns).Get(t.Context(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	withGray(t, "20,50", heldStatus(1, 50))(d)
	d.ResourceVersion = "101" // as the API server would: the fake keeps the version it is given
	if _, err := cs.AppsV1().Deployments(ns).Update(t.Context(), d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	u := next()
	var row rolloutRow
	if len(u.Upsert) != 1 || json.Unmarshal(u.Upsert[0], &row) != nil || row.Step != 1 || u.Reset {
		t.Errorf("update after the hold moved: %+v", u)
	}
	if err := cs.AppsV1().Deployments(ns).Delete(t.Context(), "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if u := next(); !slices.Equal(u.Remove, []string{"default/web"}) {
		t.Errorf("update after the delete: %+v", u)
	}
}

// A stream names each message by what it carries: after a failure, updates are named as before.
func TestStreamNamesEachMessage(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	calls := 0
	update := func(bool) (any, bool, error) {
		calls++
		if calls == 1 {
			return nil, false, errors.New("listing failed")
		}
		cancel() // the page goes away after this message
		return "ok", true, nil
	}
	ch := make(chan struct{}, 1)
	ch <- struct{}{}
	rec := httptest.NewRecorder()
	stream(rec, httptest.NewRequest(http.MethodGet, "/api/stream", nil).WithContext(ctx), ch, "rows", update)
	want := "retry: 1000\n\nevent: failure\ndata: {\"error\":\"listing failed\"}\n\nevent: rows\ndata: \"ok\"\n\n"
	if got := rec.Body.String(); got != want {
		t.Errorf("stream sent %q, want %q", got, want)
	}
}

// A rollout page's stream sends the rollout at once, then again when it changes.
func TestDashboardDetailStream(t *testing.T) {
	cs := fake.NewClientset(dashboardFixture(t)...)
	ts := testDashboard(t, cs, false)
	events := sseData(t, ts, "/api/rollouts/default/web/stream")
	var first rolloutDetail
	if err := json.Unmarshal(<-events, &first); err != nil || first.Step != 0 {
		t.Fatalf("first message: %v, step %d", err, first.Step)
	}
	d, err := cs.AppsV1().Deployments(ns).Get(t.Context(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	withGray(t, "20,50", heldStatus(1, 50))(d)
	if _, err := cs.AppsV1().Deployments(ns).Update(t.Context(), d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	var next rolloutDetail
	if err := json.Unmarshal(<-events, &next); err != nil || next.Step != 1 {
		t.Errorf("the message after web's next hold: %v, step %d; want step 1", err, next.Step)
	}
}

// sseData follows the server-sent events at path and returns each message's data; it fails
// the test when none comes within 10 s.
func sseData(t *testing.T, ts *httptest.Server, path string) <-chan []byte {
	t.Helper()
	res, err := ts.Client().Get(ts.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close() })
	if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	raw := make(chan []byte)
	go func() {
		defer close(raw)
		sc := bufio.NewScanner(res.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				raw <- []byte(data)
			}
		}
	}()
	out := make(chan []byte, 1)
	go func() {
		defer close(out)
		for {
			select {
			case b, ok := <-raw:
				if !ok {
					return
				}
				out <- b
			case <-time.After(10 * time.Second):
				t.Errorf("no message on %s within 10s", path)
				return
			}
		}
	}()
	return out
}
