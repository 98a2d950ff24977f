package gray

import (
	"math/rand/v2"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kubegray/kubectl-gray/internal/testutil"
	"github.com/kubegray/kubectl-gray/pkg/deployutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
	"github.com/kubegray/kubectl-gray/pkg/rollout"
)

// TestDecideReport pins what a sync reports, from the facts alone: web has 10 replicas, hold
// points 20 and 50 (T = 2 at the first), progressDeadlineSeconds 20, and rolls revision 2 out
// over stable revision 1. Every expected message is written out by hand.
func TestDecideReport(t *testing.T) {
	heldAt := metav1.NewTime(testNow.Add(-time.Minute))
	settled := metav1.NewTime(testNow.Add(-30 * time.Second))
	now := metav1.NewTime(testNow)
	web := func(paused bool) *appsv1.Deployment {
		d := testutil.GrayWeb(10, "20,50")
		d.Spec.Paused = paused
		d.Spec.ProgressDeadlineSeconds = ptr.To[int32](20)
		return d
	}
	// step0 is revision 2 at its first hold point, our hold recorded when held.
	step0 := func(held bool) grayapi.Status {
		st := grayapi.Status{Revision: 2, StableRevision: 1, Step: 0, Percent: 20, Target: 2, Phase: grayapi.PhaseProgressing}
		if held {
			st.HeldAt = &heldAt
		}
		return st
	}
	// stuck is the step's clock started 30 s ago with no canary available.
	stuck := &grayapi.Progress{At: metav1.NewMicroTime(testNow.Add(-30 * time.Second)), Available: 0}
	withProgress := func(st grayapi.Status, p *grayapi.Progress) grayapi.Status {
		st.Progress = p
		return st
	}
	old := func() []*appsv1.ReplicaSet { return []*appsv1.ReplicaSet{planRS(1, 8, 8, 10)} }
	const missed = "replica set web-2 has 0 of 2 replicas available, 20s after the step last progressed (progressDeadlineSeconds)"
	failure := &grayapi.Failure{Reason: grayapi.ReasonProgressDeadlineExceeded, Message: missed + ": ImagePullBackOff (2)"}
	degradedPrev := step0(true)
	degradedPrev.Phase, degradedPrev.Failure, degradedPrev.Progress = grayapi.PhaseDegraded, failure, stuck
	degradedPrev.Message = "revision 2 missed its progress deadline: " + failure.Message
	heldPrev := step0(true)
	heldPrev.Phase, heldPrev.SettledAt, heldPrev.ObservedGeneration = grayapi.PhaseHeld, &settled, 1
	gone := "the replica set of stable revision 1 is gone, so revision 2 cannot be rolled back and holds at 2 of 10 replicas; " +
		"finish it with kubectl gray resume --full"

	tests := []struct {
		name string
		f    ReportFacts
		want Report
	}{{
		name: "a hold settles: Held, its clock set, GrayHeld said",
		f:    ReportFacts{Now: testNow, Status: step0(true), Prev: step0(true), HasPrev: true, Steps: 2, Deployment: web(true), NewRS: planRS(2, 2, 2, 10), OldRSs: old()},
		want: Report{Status: timed(held(step0(true), &now), 0), Events: []Event{{corev1.EventTypeNormal, grayapi.ReasonGrayHeld, "web-2 holds 2/10 (20%), all 2 available"}}},
	}, {
		name: "a hold settles at a point with a duration of its own: it wins over hold-for, recorded, and its end looked for",
		f: ReportFacts{Now: testNow, Status: step0(true), Prev: step0(true), HasPrev: true, Steps: 2, Deployment: web(true), NewRS: planRS(2, 2, 2, 10), OldRSs: old(),
			Policy: grayapi.Policy{HoldFor: time.Hour, PointHoldFor: []time.Duration{5 * time.Minute, 0}}},
		want: Report{Status: leaves(timed(held(step0(true), &now), 5*time.Minute), "2026-11-01T12:05:00Z (a 5m0s hold)"), LookAgain: 5*time.Minute + time.Second,
			Events: []Event{{corev1.EventTypeNormal, grayapi.ReasonGrayHeld, "web-2 holds 2/10 (20%), all 2 available"}}},
	}, {
		name: "hold-for shortened during a hold recorded at 2m: the recorded 2m stands",
		f: ReportFacts{Now: testNow, Status: timed(heldPrev, 2*time.Minute), Prev: timed(heldPrev, 2*time.Minute), HasPrev: true, Steps: 2,
			Deployment: web(true), NewRS: planRS(2, 2, 2, 10), OldRSs: old(), Policy: grayapi.Policy{HoldFor: time.Minute}},
		want: Report{Status: leaves(timed(held(heldPrev, &settled), 2*time.Minute), "2026-11-01T12:01:30Z (a 2m0s hold)"), LookAgain: 91 * time.Second},
	}, {
		name: "a hold reported Held before: said once, and hold-for's end looked for",
		f: ReportFacts{Now: testNow, Status: heldPrev, Prev: heldPrev, HasPrev: true, Steps: 2, Deployment: web(true), NewRS: planRS(2, 2, 2, 10), OldRSs: old(),
			Policy: grayapi.Policy{HoldFor: time.Minute}},
		want: Report{Status: leaves(held(heldPrev, &settled), "2026-11-01T12:00:30Z (a 1m0s hold)"), LookAgain: 31 * time.Second},
	}, {
		name: "the step misses its deadline: the pods' reasons are asked for first",
		f: ReportFacts{Now: testNow, Status: withProgress(step0(true), stuck), Prev: withProgress(step0(true), stuck), HasPrev: true, Steps: 2,
			Deployment: web(true), NewRS: planRS(2, 2, 0, 10), OldRSs: old()},
		want: Report{NeedsPodReasons: true},
	}, {
		name: "with them: Degraded, a Warning, and Progressing False where our hold pauses it",
		f: ReportFacts{Now: testNow, Status: withProgress(step0(true), stuck), Prev: withProgress(step0(true), stuck), HasPrev: true, Steps: 2,
			Deployment: web(true), NewRS: planRS(2, 2, 0, 10), OldRSs: old(), PodsRead: true, PodsNotReady: "ImagePullBackOff (2)"},
		want: Report{Status: degradedPrev,
			Progressing: deployutil.NewDeploymentCondition(appsv1.DeploymentProgressing, corev1.ConditionFalse, deployutil.TimedOutReason, failure.Message, now),
			Events:      []Event{{corev1.EventTypeWarning, grayapi.ReasonGrayDegraded, "Revision 2 at 20%: " + failure.Message}}},
	}, {
		name: "the same step Degraded before keeps its failure and says nothing again",
		f: ReportFacts{Now: testNow, Status: withProgress(step0(true), stuck), Prev: degradedPrev, HasPrev: true, Steps: 2, Deployment: web(true),
			NewRS: planRS(2, 2, 0, 10), OldRSs: old(),
			Progressing: deployutil.NewDeploymentCondition(appsv1.DeploymentProgressing, corev1.ConditionFalse, deployutil.TimedOutReason, failure.Message, now)},
		want: Report{Status: degradedPrev},
	}, {
		name: "a canary within its deadline: the check looked for when it runs out",
		f: ReportFacts{Now: testNow, Status: step0(false), Prev: withProgress(step0(false), &grayapi.Progress{At: metav1.NewMicroTime(testNow.Add(-5 * time.Second))}),
			HasPrev: true, Steps: 2, Deployment: web(false), NewRS: planRS(2, 2, 0, 10), OldRSs: old()},
		want: Report{Status: withProgress(running(step0(false)), &grayapi.Progress{At: metav1.NewMicroTime(testNow.Add(-5 * time.Second))}),
			LookAgain: 15*time.Second + DeadlineSlack},
	}, {
		name: "recovered under our hold: Progressing back to upstream's paused form",
		f: ReportFacts{Now: testNow, Status: step0(true), Prev: degradedPrev, HasPrev: true, Steps: 2, Deployment: web(true), NewRS: planRS(2, 2, 2, 10), OldRSs: old(),
			Progressing: deployutil.NewDeploymentCondition(appsv1.DeploymentProgressing, corev1.ConditionFalse, deployutil.TimedOutReason, failure.Message, now)},
		want: Report{Status: timed(held(step0(true), &now), 0),
			Progressing: deployutil.NewDeploymentCondition(appsv1.DeploymentProgressing, corev1.ConditionUnknown, deployutil.PausedDeployReason, "Deployment is paused", now),
			Events:      []Event{{corev1.EventTypeNormal, grayapi.ReasonGrayHeld, "web-2 holds 2/10 (20%), all 2 available"}}},
	}, {
		name: "the last step complete: the stable mark moves and GrayComplete is said",
		f: ReportFacts{Now: testNow, Status: lastStep(), Prev: lastStep(), HasPrev: true, Steps: 2, Deployment: web(false), Complete: true,
			NewRS: planRS(2, 10, 10, 10), OldRSs: []*appsv1.ReplicaSet{planRS(1, 0, 0, 10)}},
		want: Report{Status: complete(), MarkStable: true,
			Events: []Event{{corev1.EventTypeNormal, grayapi.ReasonGrayComplete, "Revision 2 complete: all 10 replicas updated"}}},
	}, {
		name: "a Deployment first seen complete completed nothing under our watch: no event",
		f: ReportFacts{Now: testNow, Status: lastStep(), Steps: 2, Deployment: web(false), Complete: true,
			NewRS: planRS(2, 10, 10, 10), OldRSs: []*appsv1.ReplicaSet{planRS(1, 0, 0, 10)}},
		want: Report{Status: complete(), MarkStable: true},
	}, {
		name: "the stable ReplicaSet gone, on-failure abort: Degraded, and why no abort can follow",
		f: ReportFacts{Now: testNow, Status: step0(false), Prev: step0(false), HasPrev: true, Steps: 2, Deployment: web(false), NewRS: planRS(2, 2, 2, 10),
			OldRSs: []*appsv1.ReplicaSet{planRS(0, 0, 0, 10)}, Policy: grayapi.Policy{OnFailure: grayapi.OnFailureAbort}},
		want: Report{
			Status: degraded(withProgress(step0(false), &grayapi.Progress{At: metav1.NewMicroTime(testNow), Available: 2}),
				grayapi.ReasonStableReplicaSetGone, gone, "revision 2: "+gone),
			Events: []Event{
				{corev1.EventTypeWarning, grayapi.ReasonGrayDegraded, "Revision 2: " + gone},
				{corev1.EventTypeWarning, grayapi.ReasonGrayDegraded,
					"kubegray.io/on-failure: abort cannot abort revision 2: no replica set of stable revision 1 is left"},
			}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := DecideReport(tt.f)
			if !apiequality.Semantic.DeepEqual(got, tt.want) {
				t.Errorf("DecideReport =\n%+v\nwant\n%+v", got, tt.want)
			}
		})
	}
}

// held is st reported Held at its first hold point, settled at settledAt.
func held(st grayapi.Status, settledAt *metav1.Time) grayapi.Status {
	st.Phase, st.SettledAt = grayapi.PhaseHeld, settledAt
	st.Message = "held at 2 of 10 replicas (20%) on revision 2; run kubectl gray resume"
	return st
}

// leaves is st whose message says when its hold moves on by itself (at, worked by hand).
func leaves(st grayapi.Status, at string) grayapi.Status {
	st.Message += "; it moves on by itself at " + at
	return st
}

// timed is st with the hold's duration recorded as d.
func timed(st grayapi.Status, d time.Duration) grayapi.Status {
	st.HoldFor = &metav1.Duration{Duration: d}
	return st
}

// running is st rolling, not held, with the message DecidePhase gives it.
func running(st grayapi.Status) grayapi.Status {
	st.Message = "rolling revision 2 to 2 of 10 replicas (20%)"
	return st
}

// degraded is st failed for reason.
func degraded(st grayapi.Status, reason, failure, message string) grayapi.Status {
	st.Phase, st.Failure, st.Message = grayapi.PhaseDegraded, &grayapi.Failure{Reason: reason, Message: failure}, message
	return st
}

// lastStep is revision 2 past its two hold points; complete is it reported Complete.
func lastStep() grayapi.Status {
	return grayapi.Status{Revision: 2, StableRevision: 1, Step: 2, Percent: 100, Target: 10, Phase: grayapi.PhaseProgressing}
}

func complete() grayapi.Status {
	st := lastStep()
	st.Phase, st.StableRevision, st.Message = grayapi.PhaseComplete, 2, "all 10 replicas run revision 2"
	return st
}

// TestDecideReportSaysEachThingOnce decides a report for random facts, then again as the next
// sync would see it (the decided status read back, the objects unchanged, the same instant): the
// second decision must change no status, send no event, mirror no condition again and need no
// pod reasons. That is what keeps a rollout from writing its status or sending a Warning on every
// sync. The cases must reach Held, Degraded, Complete and a missed deadline, or the test looked
// at too little.
func TestDecideReportSaysEachThingOnce(t *testing.T) {
	r := rand.New(rand.NewPCG(20261204, 34))
	reached := map[grayapi.Phase]int{}
	missed := 0
	for i := range 5000 {
		f := randomReportFacts(r)
		first := DecideReport(f)
		if first.NeedsPodReasons {
			missed++
			f.PodsRead, f.PodsNotReady = true, "CrashLoopBackOff (1)"
			first = DecideReport(f)
			if first.NeedsPodReasons {
				t.Fatalf("case %d: pod reasons asked for again once read: %+v", i, f)
			}
		}
		reached[first.Status.Phase]++
		next := f
		next.Status, next.Prev, next.HasPrev = first.Status, first.Status, true
		next.Prev.ObservedGeneration = f.Deployment.Generation
		next.PodsRead, next.PodsNotReady = false, ""
		if first.Progressing != nil {
			next.Progressing = first.Progressing
		}
		again := DecideReport(next)
		if again.NeedsPodReasons || !apiequality.Semantic.DeepEqual(again.Status, first.Status) || len(again.Events) > 0 || again.Progressing != nil {
			t.Fatalf("case %d: deciding again on what was decided changed something\nfacts  %+v\nfirst  %+v\nagain  %+v", i, f, first, again)
		}
	}
	for _, phase := range []grayapi.Phase{grayapi.PhaseHeld, grayapi.PhaseDegraded, grayapi.PhaseComplete, grayapi.PhaseProgressing} {
		if reached[phase] < 100 {
			t.Errorf("only %d of 5000 random cases were reported %s: %v", reached[phase], phase, reached)
		}
	}
	t.Logf("phases %v, missed %d", reached, missed)
	if missed < 100 {
		t.Errorf("only %d of 5000 random cases missed a deadline just now", missed)
	}
}

// randomReportFacts is a rollout of revision 2 over stable revision 1 (whose ReplicaSet may be
// gone) at a random step of one to three hold points, held or not, paused by its user or not,
// with a canary of random size and availability, a status read from before or none, and a
// random policy.
func randomReportFacts(r *rand.Rand) ReportFacts {
	replicas := 1 + r.Int32N(20)
	var points []int32
	for p := int32(0); len(points) < 3; {
		p += 1 + r.Int32N(60)
		if p >= 100 {
			break
		}
		points = append(points, p)
	}
	d := testutil.GrayWeb(replicas, "")
	d.Spec.ProgressDeadlineSeconds = ptr.To[int32](20)
	if r.IntN(8) == 0 {
		d.Spec.ProgressDeadlineSeconds = nil
	}
	step := r.Int32N(int32(len(points)) + 1)
	percent, target := rollout.GrayStepTarget(replicas, points, step)
	st := grayapi.Status{Revision: 2, StableRevision: 1, Step: step, Percent: percent, Target: target, Phase: grayapi.PhaseProgressing}
	d.Spec.Paused = r.IntN(2) == 0
	if d.Spec.Paused && r.IntN(4) > 0 {
		st.HeldAt = new(metav1.NewTime(testNow.Add(-time.Duration(r.IntN(120)) * time.Second)))
	}
	size := target
	if r.IntN(4) == 0 {
		size = r.Int32N(replicas + 1)
	}
	newRS := planRS(2, size, r.Int32N(size+1), replicas)
	if r.IntN(3) == 0 {
		newRS.Status.AvailableReplicas = size
	}
	var old []*appsv1.ReplicaSet
	if r.IntN(6) > 0 {
		old = append(old, planRS(1, replicas-size, replicas-size, replicas))
	}
	f := ReportFacts{Status: st, Steps: len(points), Deployment: d, NewRS: newRS, OldRSs: old, ModePaused: r.IntN(10) == 0,
		Complete: int(step) == len(points) && newRS.Status.AvailableReplicas == replicas && r.IntN(4) > 0, Now: testNow}
	if r.IntN(3) == 0 {
		f.Policy.OnFailure = grayapi.OnFailureAbort
	}
	if r.IntN(3) == 0 {
		f.Policy.HoldFor = time.Duration(r.IntN(120)) * time.Second
	}
	if r.IntN(5) > 0 {
		f.Prev, f.HasPrev = st, true
		f.Prev.Progress = &grayapi.Progress{At: metav1.NewMicroTime(testNow.Add(-time.Duration(r.IntN(40)) * time.Second)),
			Available: r.Int32N(newRS.Status.AvailableReplicas + 1)}
	}
	return f
}
