package gray

import (
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegray/kubectl-gray/pkg/gates"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// TestDecideGates: facts → verdict, for a pods gate measured every 2s that needs 3 passes and
// tolerates no fail and 1 unsure outcome. The hold of revision 2 at step 0 settled 10s ago.
func TestDecideGates(t *testing.T) {
	pods, err := gates.Parse("pods", "test", "provider: pods\nsuccess: canary.restartsPerPod <= stable.restartsPerPod\n"+
		"interval: 2s\ncount: 3\ninconclusiveLimit: 1\n")
	if err != nil {
		t.Fatal(err)
	}
	settled := metav1.NewTime(testNow.Add(-10 * time.Second))
	ago := func(d time.Duration) *metav1.MicroTime { return new(metav1.NewMicroTime(testNow.Add(-d))) }
	in := func(d time.Duration) *metav1.MicroTime { return ago(-d) }
	base := &grayapi.PodsBaseline{Canary: 0, Stable: 4}
	held := grayapi.Status{Revision: 2, StableRevision: 1, Step: 0, Percent: 10, Phase: grayapi.PhaseHeld, SettledAt: &settled}
	with := func(st grayapi.Status, recs ...grayapi.GateStatus) grayapi.Status { st.Gates = recs; return st }
	quiet := []gates.Pod{{Restarts: 0, Ready: true}}
	restarted := []gates.Pod{{Restarts: 2, Ready: true}}
	stable := []gates.Pod{{Restarts: 4, Ready: true}, {Ready: true}}
	gateFailed := with(held, grayapi.GateStatus{Name: "pods", Last: grayapi.GateFail, Fails: 1, At: ago(time.Second), Baseline: base})
	gateFailed.Phase, gateFailed.Failure = grayapi.PhaseDegraded, &grayapi.Failure{Reason: grayapi.ReasonGateFailed}

	for _, tc := range []struct {
		name    string
		prev    grayapi.Status
		dryRun  bool
		canary  []gates.Pod
		want    []grayapi.GateStatus // Value and Why not compared
		pending []string
		failed  bool
		unsure  bool
		events  []string // reasons
		nextIn  time.Duration
	}{
		{name: "not settled yet: nothing measured, nothing passed",
			prev: grayapi.Status{Revision: 2, Step: 0, Phase: grayapi.PhaseProgressing}, canary: quiet, pending: []string{"pods 0/3"}},
		{name: "first sync of the hold: the baseline, no outcome", prev: held, canary: quiet,
			want:    []grayapi.GateStatus{{Name: "pods", At: ago(0), Next: in(2 * time.Second), Baseline: base}},
			pending: []string{"pods 0/3"}, nextIn: 2 * time.Second},
		{name: "not due: kept, next in what is left", prev: with(held, grayapi.GateStatus{Name: "pods", Last: grayapi.GatePass, Passes: 1, At: ago(500 * time.Millisecond), Baseline: base}),
			canary:  quiet,
			want:    []grayapi.GateStatus{{Name: "pods", Last: grayapi.GatePass, Passes: 1, At: ago(500 * time.Millisecond), Baseline: base}},
			pending: []string{"pods 1/3"}, nextIn: 1500 * time.Millisecond},
		{name: "second pass: counted, the next due an interval later", prev: with(held, grayapi.GateStatus{Name: "pods", Last: grayapi.GatePass, Passes: 1, At: ago(2 * time.Second), Baseline: base}),
			canary:  quiet,
			want:    []grayapi.GateStatus{{Name: "pods", Last: grayapi.GatePass, Passes: 2, At: ago(0), Next: in(2 * time.Second), Baseline: base}},
			pending: []string{"pods 2/3"}, nextIn: 2 * time.Second},
		{name: "third pass: passed, announced", prev: with(held, grayapi.GateStatus{Name: "pods", Last: grayapi.GatePass, Passes: 2, At: ago(2 * time.Second), Baseline: base}),
			canary: quiet,
			want:   []grayapi.GateStatus{{Name: "pods", Last: grayapi.GatePass, Verdict: grayapi.GatePassed, Passes: 3, At: ago(0), Baseline: base}},
			events: []string{grayapi.ReasonGrayGatePassed}},
		{name: "passed: measured no more", prev: with(held, grayapi.GateStatus{Name: "pods", Last: grayapi.GatePass, Passes: 3, At: ago(9 * time.Second), Baseline: base}),
			canary: restarted,
			want:   []grayapi.GateStatus{{Name: "pods", Last: grayapi.GatePass, Passes: 3, At: ago(9 * time.Second), Baseline: base}}},
		{name: "canary restarts (2/pod against stable's 0): failed at once", prev: with(held, grayapi.GateStatus{Name: "pods", Last: grayapi.GatePass, Passes: 1, At: ago(3 * time.Second), Baseline: base}),
			canary:  restarted,
			want:    []grayapi.GateStatus{{Name: "pods", Last: grayapi.GateFail, Verdict: grayapi.GateFailed, Passes: 1, Fails: 1, At: ago(0), Baseline: base}},
			pending: []string{"pods 1/3"}, failed: true, events: []string{grayapi.ReasonGrayGateFailed}},
		{name: "dry run fails: shown, not acted on", dryRun: true, prev: with(held, grayapi.GateStatus{Name: "pods", DryRun: true, At: ago(3 * time.Second), Baseline: base}),
			canary: restarted,
			want:   []grayapi.GateStatus{{Name: "pods", DryRun: true, Last: grayapi.GateFail, Verdict: grayapi.GateFailed, Fails: 1, At: ago(0), Baseline: base}},
			events: []string{grayapi.ReasonGrayGateFailed}},
		{name: "Degraded by the gate: no more measuring, still failed", prev: gateFailed, canary: quiet,
			want:    []grayapi.GateStatus{{Name: "pods", Last: grayapi.GateFail, Fails: 1, At: ago(time.Second), Baseline: base}},
			pending: []string{"pods 0/3"}, failed: true},
		{name: "no canary pods twice: unsure past its limit, the hold stays", prev: with(held, grayapi.GateStatus{Name: "pods", Last: grayapi.GateNoData, Unsure: 1, At: ago(2 * time.Second), Baseline: base}),
			want:    []grayapi.GateStatus{{Name: "pods", Last: grayapi.GateNoData, Verdict: grayapi.GateCannotTell, Unsure: 2, At: ago(0), Baseline: base}},
			pending: []string{"pods 0/3"}, unsure: true, events: []string{grayapi.ReasonGrayGateInconclusive}},
		{name: "a pod lost under the hold (Progressing): the records stay, unmeasured", prev: func() grayapi.Status {
			p := with(held, grayapi.GateStatus{Name: "pods", Last: grayapi.GatePass, Passes: 1, At: ago(5 * time.Second), Baseline: base})
			p.Phase = grayapi.PhaseProgressing
			return p
		}(), canary: restarted,
			want:    []grayapi.GateStatus{{Name: "pods", Last: grayapi.GatePass, Passes: 1, At: ago(5 * time.Second), Baseline: base}},
			pending: []string{"pods 1/3"}},
		{name: "another step's records are not this hold's", prev: func() grayapi.Status {
			p := with(held, grayapi.GateStatus{Name: "pods", Passes: 3, At: ago(time.Second), Baseline: base})
			p.Step = 1
			return p
		}(), canary: quiet, pending: []string{"pods 0/3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := tc.prev
			st.Step = 0
			v := decideGates(GateFacts{Status: st, Prev: tc.prev, HasPrev: true, Gates: []*gates.Definition{pods},
				DryRun: map[string]bool{"pods": tc.dryRun}, Canary: tc.canary, Stable: stable, Now: testNow})
			var got []grayapi.GateStatus
			for _, r := range v.Records {
				r.Value, r.Why = "", ""
				got = append(got, r)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("records\n got %+v\nwant %+v", got, tc.want)
			}
			var reasons []string
			for _, e := range v.Events {
				reasons = append(reasons, e.Reason)
				if tc.dryRun && e.Type != corev1.EventTypeNormal {
					t.Errorf("a dry run's event is a %s", e.Type)
				}
			}
			if !reflect.DeepEqual(v.Pending, tc.pending) || (v.Failed != nil) != tc.failed || (CannotTell(v.Records) != "") != tc.unsure ||
				!reflect.DeepEqual(reasons, tc.events) || v.NextIn != tc.nextIn {
				t.Errorf("pending %q failed %v unsure %q events %q next in %s; want %q %v %v %q %s",
					v.Pending, v.Failed, CannotTell(v.Records), reasons, v.NextIn, tc.pending, tc.failed, tc.unsure, tc.events, tc.nextIn)
			}
		})
	}
}

// TestGateIntervalSurvivesTheStatus: a measurement is due an interval after the last one as the
// status stores it. Taken at 12:00:00.9 and read back from kubegray.io/status, the next is not
// due at 12:00:02.0 (1.1 s later) with an interval of 2 s.
func TestGateIntervalSurvivesTheStatus(t *testing.T) {
	pods, err := gates.Parse("pods", "test", "provider: pods\nsuccess: canary.restarts == 0\ninterval: 2s\n")
	if err != nil {
		t.Fatal(err)
	}
	settled := metav1.NewTime(testNow.Add(-10 * time.Second))
	held := grayapi.Status{Revision: 2, StableRevision: 1, Phase: grayapi.PhaseHeld, SettledAt: &settled, Percent: 10, Target: 1}
	f := GateFacts{Status: held, Prev: held, HasPrev: true, Gates: []*gates.Definition{pods},
		Canary: []gates.Pod{{Ready: true}}, Stable: []gates.Pod{{Ready: true}}, Now: testNow.Add(900 * time.Millisecond)}
	first := decideGates(f)
	stored := held
	stored.Gates = first.Records
	raw, err := grayapi.FormatStatus(stored)
	if err != nil {
		t.Fatal(err)
	}
	if f.Prev, err = grayapi.ParseStatus(raw); err != nil {
		t.Fatal(err)
	}
	f.Now = testNow.Add(2 * time.Second)
	if again := decideGates(f); !reflect.DeepEqual(again.Records[0].At, f.Prev.Gates[0].At) || again.NextIn != 900*time.Millisecond {
		t.Errorf("1.1 s after the last measurement (stored as %s): records %+v, next in %s; want nothing measured, next in 900ms (due at 12:00:02.9)",
			raw, again.Records, again.NextIn)
	}
}

// TestDecideMetricGates: a metric gate's measurement is asked for when due and recorded when one
// answering that due time comes back. Gate errors (every 2s, 2 passes) on the hold of revision
// 2 at step 0, settled 10s ago; the last measurement 3s ago, so the next was due 1s ago.
func TestDecideMetricGates(t *testing.T) {
	errs, err := gates.Parse("errors", "test", "provider: prometheus\nquery: sum(errors)\nsuccess: result < 0.01\ninterval: 2s\ncount: 2\n")
	if err != nil {
		t.Fatal(err)
	}
	settled := metav1.NewTime(testNow.Add(-10 * time.Second))
	ago := func(d time.Duration) *metav1.MicroTime { return new(metav1.NewMicroTime(testNow.Add(-d))) }
	held := grayapi.Status{Revision: 2, StableRevision: 1, Step: 0, Percent: 10, Phase: grayapi.PhaseHeld, SettledAt: &settled}
	last := grayapi.GateStatus{Name: "errors", Last: grayapi.GatePass, Passes: 1, At: ago(3 * time.Second), Next: ago(time.Second)}
	prev := held
	prev.Gates = []grayapi.GateStatus{last}
	due := testNow.Add(-time.Second)
	taken := gates.Measurement{Revision: 2, Step: 0, Due: due, At: testNow.Add(-200 * time.Millisecond), Outcome: grayapi.GatePass, Value: "result 0.002", Why: "result < 0.01"}
	for _, tc := range []struct {
		name     string
		prev     grayapi.Status
		measured map[string]gates.Measurement
		want     grayapi.GateStatus
		request  bool
	}{
		{name: "first sync of the hold: the window opens, nothing asked", prev: held, measured: nil,
			want: grayapi.GateStatus{Name: "errors", At: ago(0), Next: ago(-2 * time.Second), Why: "window opened; the first outcome comes an interval later"}},
		{name: "due, nothing taken: asked for, the record kept", prev: prev, want: last, request: true},
		{name: "taken for another due time: asked for again", prev: prev, request: true, want: last,
			measured: map[string]gates.Measurement{"errors": func() gates.Measurement { m := taken; m.Due = due.Add(-2 * time.Second); return m }()}},
		{name: "taken for another step: asked for again", prev: prev, request: true, want: last,
			measured: map[string]gates.Measurement{"errors": func() gates.Measurement { m := taken; m.Step = 1; return m }()}},
		{name: "taken for this due time: recorded at when it was taken, passed", prev: prev, measured: map[string]gates.Measurement{"errors": taken},
			want: grayapi.GateStatus{Name: "errors", Last: grayapi.GatePass, Verdict: grayapi.GatePassed, Passes: 2, At: ago(200 * time.Millisecond),
				Value: "result 0.002", Why: "result < 0.01"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := decideGates(GateFacts{Status: held, Prev: tc.prev, HasPrev: true, Gates: []*gates.Definition{errs}, Measured: tc.measured, Now: testNow})
			if len(v.Records) != 1 || !reflect.DeepEqual(v.Records[0], tc.want) {
				t.Errorf("records\n got %+v\nwant %+v", v.Records, tc.want)
			}
			wantRequests := []GateRequest(nil)
			if tc.request {
				wantRequests = []GateRequest{{Gate: errs, Due: due, Opened: settled.Time}}
			}
			if !reflect.DeepEqual(v.Requests, wantRequests) {
				t.Errorf("requests %+v, want %+v", v.Requests, wantRequests)
			}
		})
	}
}
