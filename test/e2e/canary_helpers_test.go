package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/kubegray/kubectl-gray/pkg/grayapi"
	"github.com/kubegray/kubectl-gray/test/cluster"
)

// Helpers of TestCanaryFailure: the two ways of running gray-controller, the
// recorder's history of gray statuses (when each phase was first seen), the
// Deployment's events, and loose reading of `kubectl gray status -o json`.

// canaryMode is one way of running gray-controller for the failure scenarios.
type canaryMode struct {
	name string
	// start brings up a control plane run by gray-controller in this mode, given args.
	start func(t *testing.T, args ...string) *cluster.Cluster
	// env makes a scenario's namespace (alongside adds its own checks).
	env       func(t *testing.T, c *cluster.Cluster, name string) *grayEnv
	alongside bool
}

var canaryModes = []canaryMode{
	{
		name: "instead",
		start: func(t *testing.T, args ...string) *cluster.Cluster {
			c := cluster.StartForTest(t, cluster.Options{Controllers: cluster.WithoutDeploymentController})
			startGrayController(t, c, append([]string{"--mode=instead"}, args...)...)
			return c
		},
		env: newGrayEnv,
	},
	{
		name: "alongside",
		start: func(t *testing.T, args ...string) *cluster.Cluster {
			c := cluster.StartForTest(t, cluster.Options{})
			applyManifests(t, c, overlayManifests(t, "alongside"))
			startAlongsideController(t, c, args...)
			return c
		},
		env:       newAlongsideEnv,
		alongside: true,
	},
}

// inCanaryModes runs scenarios in each canary mode, one control plane at a time, the scenarios
// of a mode (each t.Parallel) side by side on it.
func inCanaryModes(t *testing.T, scenarios func(*testing.T, *cluster.Cluster, canaryMode)) {
	for _, m := range canaryModes {
		t.Run(m.name, func(t *testing.T) {
			c := m.start(t)
			t.Run("scenarios", func(t *testing.T) { scenarios(t, c, m) })
		})
	}
}

// seenStatus is one version of a Deployment as the recorder's watch
// delivered it, with its gray status (ok false when it had none readable).
type seenStatus struct {
	at    time.Time
	d     *appsv1.Deployment
	st    grayapi.Status
	ok    bool
	image string
}

// history is every version of Deployment name the recorder has seen so far,
// in resourceVersion order: the times are when the watch delivered them,
// which is how a person watching would have seen each phase begin.
func (e *grayEnv) history(name string) []seenStatus {
	e.rec.mu.Lock()
	events := append([]recordedEvent(nil), e.rec.events...)
	e.rec.mu.Unlock()
	sort.SliceStable(events, func(i, j int) bool { return events[i].rv < events[j].rv })
	var out []seenStatus
	for _, ev := range events {
		d := ev.deployment
		if d == nil || ev.deleted || d.Name != name {
			continue
		}
		s := seenStatus{at: ev.at, d: d, image: imageOf(&d.Spec.Template)}
		s.st, s.ok = parseStatusOK(d.Annotations[grayapi.StatusAnnotation])
		out = append(out, s)
	}
	return out
}

func parseStatusOK(raw string) (grayapi.Status, bool) {
	st, err := grayapi.ParseStatus(raw)
	return st, err == nil
}

// first returns the index of the first entry of h at or after from that
// matches, or -1.
func first(h []seenStatus, from int, match func(seenStatus) bool) int {
	for i := max(from, 0); i < len(h); i++ {
		if match(h[i]) {
			return i
		}
	}
	return -1
}

func withImage(image string) func(seenStatus) bool {
	return func(s seenStatus) bool { return s.image == image }
}

func inPhase(phase grayapi.Phase) func(seenStatus) bool {
	return func(s seenStatus) bool { return s.ok && s.st.Phase == phase }
}

// phases lists the distinct successive phases of h[from:], for failure messages.
func phases(h []seenStatus, from int) []string {
	var out []string
	for i := max(from, 0); i < len(h); i++ {
		if !h[i].ok {
			continue
		}
		p := fmt.Sprintf("%s(rev %d step %d)", h[i].st.Phase, h[i].st.Revision, h[i].st.Step)
		if len(out) == 0 || out[len(out)-1] != p {
			out = append(out, p)
		}
	}
	return out
}

// statusLines is every readable gray status in h, one line each with the
// time it was seen, for a person reading a failure.
func statusLines(h []seenStatus) string {
	var b strings.Builder
	for _, s := range h {
		fmt.Fprintf(&b, "  %s generation %d image %s: %s\n", s.at.Format(timeLayout), s.d.Generation, s.image, s.d.Annotations[grayapi.StatusAnnotation])
	}
	return b.String()
}

// stays polls for d and fails at the first observation of the Deployment
// that is not want: a state that must last, checked for as long as it must.
func (e *grayEnv) stays(name string, want grayState, d time.Duration) {
	e.t.Helper()
	consistently(d, 250*time.Millisecond, func() {
		if got, _, msg := e.observed(name); got != want {
			e.t.Fatalf("deployment %s/%s left %+v within %v: %s", e.ns, name, want, d, msg)
		}
	})
}

// events lists the Deployment's events of reason.
func (e *grayEnv) events(name, reason string) []corev1.Event {
	e.t.Helper()
	list, err := e.client.CoreV1().Events(e.ns).List(context.Background(), metav1.ListOptions{
		FieldSelector: fields.Set{"involvedObject.kind": "Deployment", "involvedObject.name": name, "reason": reason}.String(),
	})
	if err != nil {
		e.t.Fatalf("list events: %v", err)
	}
	return list.Items
}

// saidNoRollback fails when Deployment name, in a scenario without a rollback, said it was
// rolling back: a GrayRolledBack event, or a version of it with the phase RolledBack. It waits
// for GrayHolding first: the controller's events are sent one after another, so one sent by an
// earlier sync is listed by then.
func (e *grayEnv) saidNoRollback(name string) {
	e.t.Helper()
	e.waitEvent(name, grayapi.ReasonGrayHolding)
	if evs := e.events(name, grayapi.ReasonGrayRolledBack); len(evs) > 0 {
		e.t.Fatalf("deployment %s/%s sent %d GrayRolledBack events without a rollback, the first: %s", e.ns, name, len(evs), evs[0].Message)
	}
	h := e.history(name)
	if len(h) == 0 {
		e.t.Fatalf("the recorder saw no version of deployment %s/%s", e.ns, name)
	}
	for _, s := range h {
		if s.ok && s.st.Phase == grayapi.PhaseRolledBack {
			e.t.Fatalf("deployment %s/%s said %s without a rollback: %s", e.ns, name, s.st.Phase, s.st.Message)
		}
	}
}

// waitEvent waits for an event of reason on the Deployment (the recorder
// sends events asynchronously) and returns the first one.
func (e *grayEnv) waitEvent(name, reason string) corev1.Event {
	e.t.Helper()
	var found []corev1.Event
	eventually(e.t, 15*time.Second, "event "+reason+" on deployment "+name, func() (bool, string) {
		found = e.events(name, reason)
		return len(found) > 0, "none yet"
	})
	return found[0]
}

// replicaSetOf is the Deployment's ReplicaSet at revision (by its revision
// annotation, or its revision history after a rollback renumbered it).
func (e *grayEnv) replicaSetOf(name string, revision int64) *appsv1.ReplicaSet {
	e.t.Helper()
	for _, rs := range ownedReplicaSets(e.t, e.client, e.get(name)) {
		if isRevisionOf(&rs, revision) {
			return &rs
		}
	}
	e.t.Fatalf("deployment %s/%s has no replicaset of revision %d", e.ns, name, revision)
	return nil
}

// podsOf counts the pods controlled by rs, terminating ones included.
func (e *grayEnv) podsOf(rs *appsv1.ReplicaSet) ([]string, error) {
	list, err := e.client.CoreV1().Pods(e.ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var names []string
	for _, p := range list.Items {
		if ref := metav1.GetControllerOf(&p); ref != nil && ref.UID == rs.UID {
			names = append(names, p.Name)
		}
	}
	return names, nil
}

// wantHeldCondition fails unless GrayHeld has status and reason.
func (e *grayEnv) wantHeldCondition(name string, status corev1.ConditionStatus, reason string) {
	e.t.Helper()
	if c := e.heldCondition(name); c == nil || c.Status != status || c.Reason != reason {
		e.t.Errorf("deployment %s/%s GrayHeld condition = %+v, want %s/%s", e.ns, name, c, status, reason)
	}
}

// statusJSON runs `kubectl gray status name -o json` and decodes it loosely:
// its field names are the plugin's to choose, the values are what we check.
func (u *pluginUser) statusJSON(name string) any {
	u.t.Helper()
	out := u.must("gray", "status", name, "-o", "json")
	var v any
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		u.t.Fatalf("kubectl gray status %s -o json: %v\n%s", name, err, out)
	}
	return v
}

// jsonObjects returns every object nested in the decoded JSON value v whose
// key holds want (numbers decode as float64).
func jsonObjects(v any, key string, want any) []map[string]any {
	var out []map[string]any
	switch x := v.(type) {
	case map[string]any:
		if got, ok := x[key]; ok && got == want {
			out = append(out, x)
		}
		for _, child := range x {
			out = append(out, jsonObjects(child, key, want)...)
		}
	case []any:
		for _, child := range x {
			out = append(out, jsonObjects(child, key, want)...)
		}
	}
	return out
}

// number is a JSON number field of o, or -1.
func number(o map[string]any, key string) float64 {
	if n, ok := o[key].(float64); ok {
		return n
	}
	return -1
}

func anyObject(objs []map[string]any, match func(map[string]any) bool) bool {
	for _, o := range objs {
		if match(o) {
			return true
		}
	}
	return false
}
