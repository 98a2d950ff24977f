package e2e

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegray/kubectl-gray/internal/testutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
	"github.com/kubegray/kubectl-gray/test/cluster"
)

// TestGrayHugePercentStaysShort pins what a kubegray.io/percent of 250,000 bytes (nearly all the
// annotation space the API server allows) does in instead mode: the rollout is Invalid and frozen
// as for any bad value, and the GrayInvalid event and the status message stay a few hundred bytes
// that still name the key, the rule and the value's length; no condition's message is longer than
// the status's may be. Nothing is resized meanwhile.
func TestGrayHugePercentStaysShort(t *testing.T) {
	c := cluster.StartForTest(t, cluster.Options{Controllers: cluster.WithoutDeploymentController})
	startGrayController(t, c, "--mode=instead")
	e := newGrayEnv(t, c, "huge-percent")
	e.startStable(testutil.GrayDeployment("web", 10, "20"))

	// Too long for one kubectl argument (Linux caps one at 128 KiB), so through the API.
	huge := strings.Repeat("5", 250000)
	e.do(setPercent("web", huge))
	e.do(setImage("web", "nginx:1.26"))
	frozen := grayState{phase: grayapi.PhaseInvalid, newSpec: 0, oldTotal: 10}
	e.expect("web", frozen)

	wants := []string{"invalid " + grayapi.PercentAnnotation + ` "555`, "(250000 bytes)",
		"hold points must be strictly increasing integers 0-99"}
	short := func(what, msg string, limit int) {
		t.Helper()
		if len(msg) > limit {
			t.Errorf("%s is %d bytes, want at most %d: %.300s...", what, len(msg), limit, msg)
		}
		for _, w := range wants {
			if !strings.Contains(msg, w) {
				t.Errorf("%s lacks %q: %.600s", what, w, msg)
			}
		}
	}
	d := e.get("web")
	if raw := d.Annotations[grayapi.StatusAnnotation]; len(raw) > 1024 {
		t.Errorf("%s is %d bytes, want at most 1024", grayapi.StatusAnnotation, len(raw))
	}
	short("the status message", e.grayStatus(d).Message, 512)
	for _, c := range d.Status.Conditions {
		if len(c.Message) > grayapi.MaxStatusMessage {
			t.Errorf("condition %s's message is %d bytes, want at most %d", c.Type, len(c.Message), grayapi.MaxStatusMessage)
		}
	}
	var event string
	eventually(t, 30*time.Second, "the GrayInvalid event", func() (bool, string) {
		list, err := e.client.CoreV1().Events(e.ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, ev := range list.Items {
			if ev.InvolvedObject.Name == "web" && ev.Reason == grayapi.ReasonGrayInvalid {
				event = ev.Message
				return true, ""
			}
		}
		return false, strconv.Itoa(len(list.Items)) + " events, none GrayInvalid"
	})
	short("the GrayInvalid event", event, 600)

	// Frozen: no canary, no resize, while the value stands.
	consistently(3*time.Second, 300*time.Millisecond, func() {
		if s, _, msg := e.observed("web"); s != frozen {
			t.Fatalf("web moved while its percent was invalid: %s", msg)
		}
	})
	e.do(setPercent("web", "20"))
	e.expect("web", grayState{phase: grayapi.PhaseHeld, newSpec: 2, oldTotal: 8, paused: true})
	e.finish("web", 10)
}

// TestInvalidKeepsTheHoldAgainstAnUnpause: in instead mode our hold is spec.paused, and an
// unpause (`kubectl rollout resume`) is a resume. While kubegray.io/percent does not read, every
// request but an abort is dropped rather than carried out when the value is fixed; an unpause of
// the hold was kept instead (the Deployment left unpaused, the hold recorded), and moved the canary
// on to the next hold point the moment the value was fixed. The hold is now written back with a
// GrayResumeIgnored Warning, and fixing the value finds the rollout held where it stood.
func TestInvalidKeepsTheHoldAgainstAnUnpause(t *testing.T) {
	c := cluster.StartForTest(t, cluster.Options{Controllers: cluster.WithoutDeploymentController})
	startGrayController(t, c, "--mode=instead")
	e := newGrayEnv(t, c, "invalid-unpause")
	u := newPluginUser(t, c, e.ns)
	e.startStable(testutil.GrayDeployment("web", 10, "20,50"))
	e.do(setImage("web", "nginx:1.26"))
	held := grayState{phase: grayapi.PhaseHeld, newSpec: 2, oldTotal: 8, paused: true}
	e.expect("web", held)

	e.do(setPercent("web", "bad"))
	invalid := grayState{phase: grayapi.PhaseInvalid, newSpec: 2, oldTotal: 8, paused: true}
	e.expect("web", invalid)
	u.must("rollout", "resume", "deployment/web")
	if ev := e.waitEvent("web", grayapi.ReasonGrayResumeIgnored); !strings.Contains(ev.Message, "Ignored the unpause of revision 2's hold at 20%") {
		t.Fatalf("GrayResumeIgnored says %q, want the unpause of revision 2's hold named", ev.Message)
	}
	e.expect("web", invalid)

	e.do(setPercent("web", "20,50"))
	e.expect("web", held)
	consistently(3*time.Second, 300*time.Millisecond, func() {
		if s, _, msg := e.observed("web"); s != held {
			t.Fatalf("web moved on after its percent was fixed: %s", msg)
		}
	})
}
