package e2e

// An aborted canary, checked the way its readers see it: the stable revision back at every
// replica and the canary's ReplicaSet at 0, spec.template still the canary's (what Git holds),
// Stalled True, and, for an abort that kubegray.io/on-failure made, the failure seen by a watch
// before the canary lost a pod. A GitOps tool applying the same manifest again starts nothing.

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/kubegray/kubectl-gray/pkg/deployutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// abortedToStable waits for Deployment name (revision 1 stable on stableImg, revision 2 the
// canary on canaryImg) to stand Aborted with every replica back on revision 1, and checks what
// every reader sees then. paused: the Deployment stays taken over (alongside mode).
func (e *grayEnv) abortedToStable(name string, replicas int32, canaryImg, stableImg, reason string, paused bool) grayapi.Status {
	e.t.Helper()
	d := e.expect(name, grayState{phase: grayapi.PhaseAborted, newSpec: 0, oldTotal: replicas, paused: paused})
	e.wantSizes(name, map[string]int32{"1": replicas, "2": 0}, map[string]string{"1": stableImg, "2": canaryImg})
	if got := imageOf(&d.Spec.Template); got != canaryImg {
		e.t.Errorf("deployment %s/%s runs template %s after the abort, want %s (the abort keeps the template)", e.ns, name, got, canaryImg)
	}
	st := e.grayStatus(d)
	if st.Revision != 2 || st.StableRevision != 1 || st.Failure == nil || st.Failure.Reason != reason {
		e.t.Errorf("status after the abort %+v, want revision 2, stable revision 1, failure %s", st, reason)
	}
	// The status subresource's write (the conditions) follows the annotation's and the sizes.
	eventually(e.t, 30*time.Second, "Stalled True/Aborted", func() (bool, string) {
		c := deployutil.GetDeploymentCondition(e.get(name).Status, grayapi.ConditionStalled)
		return c != nil && c.Status == corev1.ConditionTrue && c.Reason == grayapi.ReasonAborted, fmt.Sprintf("Stalled = %+v", c)
	})
	if rs := e.replicaSetOf(name, 2); rs.Labels[grayapi.AbortedLabel] != "2" {
		e.t.Errorf("canary replica set %s labels %v, want %s=2", rs.Name, rs.Labels, grayapi.AbortedLabel)
	}
	if reason != grayapi.ReasonAborted {
		e.failureSeenBeforeShrink(name, e.replicaSetOf(name, 2).Name)
	}
	return st
}

// failureSeenBeforeShrink checks, in the recorder's resourceVersion order (etcd's write order),
// that Deployment name was seen Degraded with Stalled True before the first write that took a
// replica off the canary's ReplicaSet rsName.
func (e *grayEnv) failureSeenBeforeShrink(name, rsName string) {
	e.t.Helper()
	e.rec.mu.Lock()
	events := append([]recordedEvent(nil), e.rec.events...)
	e.rec.mu.Unlock()
	sort.SliceStable(events, func(i, j int) bool { return events[i].rv < events[j].rv })
	var failedAt, shrunkAt uint64
	peak := int32(-1)
	for _, ev := range events {
		switch {
		case ev.deployment != nil && ev.deployment.Name == name && failedAt == 0:
			st, ok := parseStatusOK(ev.deployment.Annotations[grayapi.StatusAnnotation])
			c := deployutil.GetDeploymentCondition(ev.deployment.Status, grayapi.ConditionStalled)
			if ok && st.Phase == grayapi.PhaseDegraded && c != nil && c.Status == corev1.ConditionTrue {
				failedAt = ev.rv
			}
		case ev.replicaSet != nil && ev.replicaSet.Name == rsName && shrunkAt == 0:
			spec := replicasOf(ev.replicaSet.Spec.Replicas)
			if spec < peak {
				shrunkAt = ev.rv
			}
			peak = max(peak, spec)
		}
	}
	if failedAt == 0 || shrunkAt == 0 || failedAt > shrunkAt {
		e.t.Errorf("deployment %s/%s: Degraded with Stalled first seen at resourceVersion %d, canary %s first shrunk at %d: "+
			"the failure must reach a watch before the canary shrinks", e.ns, name, failedAt, rsName, shrunkAt)
	}
}

// manifestFile writes d as JSON into a file of the test, as its author would keep it in Git.
func manifestFile(t *testing.T, d *appsv1.Deployment) string {
	t.Helper()
	data, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), d.Name+".json")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// selfHeals applies manifest server-side as a GitOps tool's self-heal does, times times every
// interval, and checks that Deployment name keeps its generation and its ReplicaSets: nothing
// rolls again.
func (c *canary) selfHeals(name, manifest string, times int, interval time.Duration) {
	c.t.Helper()
	before := c.get(name)
	sizes, _ := c.sizesByRevision(name)
	for i := range times {
		c.u.must("apply", "--server-side", "--force-conflicts", "--field-manager=gitops-self-heal", "-f", manifest)
		if i < times-1 {
			time.Sleep(interval)
		}
	}
	after := c.get(name)
	gotSizes, _ := c.sizesByRevision(name)
	if after.Generation != before.Generation || fmt.Sprint(gotSizes) != fmt.Sprint(sizes) {
		c.t.Errorf("deployment %s/%s after %d server-side applies of its manifest: generation %d → %d, replica sets %v → %v; want nothing changed",
			c.ns, name, times, before.Generation, after.Generation, sizes, gotSizes)
	}
	if st := c.grayStatus(after); st.Phase != grayapi.PhaseAborted || st.Revision != 2 {
		c.t.Errorf("deployment %s/%s after the applies: phase %s revision %d, want Aborted on revision 2", c.ns, name, st.Phase, st.Revision)
	}
}
