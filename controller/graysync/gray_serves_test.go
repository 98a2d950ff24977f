package graysync

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/kubegray/kubectl-gray/internal/testutil"
	"github.com/kubegray/kubectl-gray/pkg/deployutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// TestServesIsWhatTheNextSyncDoes drives random rollouts through the harness (instead mode: new
// images, scaling, the user's pause, an unreadable kubegray.io/percent, aborts, retries, the stable
// ReplicaSet deleted) and, at each settled state, asks one random request of the rollout, the way
// a tool would, then checks that the controller carried it out exactly when kubegray.io/status
// listed it in serves: an offered request acts, any other is dropped (consumed, with a
// GrayResumeIgnored Warning) or, for an unpause, changes nothing. The judge reads outcomes only (phase, step, revision,
// template, pause, events), never gray.Serves.
func TestServesIsWhatTheNextSyncDoes(t *testing.T) {
	r := rand.New(rand.NewPCG(20261206, 52))
	seen := map[string]int{}
	for scenario := range 40 {
		replicas := 1 + r.Int32N(12)
		points := []string{"20", "10,50", "0,30,60", "50", "5,95"}[r.IntN(5)]
		w := startGray(t, testutil.GrayWeb(replicas, points))
		image := 2
		for op := range 8 {
			switch r.IntN(7) {
			case 0, 1:
				w.setImage(fmt.Sprintf("v%d", image))
				image++
			case 2:
				w.edit(func(d *appsv1.Deployment) { d.Spec.Replicas = new(1 + r.Int32N(12)) })
			case 3:
				w.edit(func(d *appsv1.Deployment) { d.Spec.Paused = !d.Spec.Paused })
			case 4:
				if d := w.deployment(); d.Annotations[grayapi.PercentAnnotation] == "bad" {
					w.setAnnotation(grayapi.PercentAnnotation, points)
				} else {
					w.setAnnotation(grayapi.PercentAnnotation, "bad")
				}
			case 5:
				w.setAnnotation(grayapi.ResumeAnnotation, fmt.Sprintf("%d:abort", w.status().Revision))
			case 6:
				st := w.status()
				for _, rs := range w.replicaSets() {
					if st.StableRevision != st.Revision && rs.Annotations[deployutil.RevisionAnnotation] == fmt.Sprint(st.StableRevision) {
						if err := w.f.client.Tracker().Delete(replicaSetsResource, rs.Namespace, rs.Name); err != nil {
							t.Fatal(err)
						}
					}
				}
			}
			w.settle()
			before, d := w.status(), w.deployment()
			req := grayapi.Requests[r.IntN(len(grayapi.Requests))]
			if before.Phase == grayapi.PhaseAborted && r.IntN(2) == 0 {
				// Aborts are one operation in seven: ask an aborted rollout's own request more.
				req = grayapi.RequestRetry
			}
			if before.ObservedGeneration != d.Generation {
				t.Fatalf("scenario %d op %d: status of generation %d on generation %d", scenario, op, before.ObservedGeneration, d.Generation)
			}
			served := before.Serves.Has(req)
			w.takeEvents()
			ask(w, req, before.Revision)
			w.settle()
			acted, dropped, why := judge(w, req, before, d)
			if acted != served || !served && !dropped {
				t.Fatalf("scenario %d (R=%d, points %s) op %d: %s asked of %s %s at step %d (paused %t, serves %s): acted %t, dropped %t (%s)",
					scenario, replicas, points, op, req, before.Phase, before.Message, before.Step, d.Spec.Paused, before.Serves, acted, dropped, why)
			}
			seen[fmt.Sprintf("%s served=%t", req, served)]++
		}
	}
	t.Logf("requests asked: %v", seen)
	for _, req := range grayapi.Requests {
		for _, served := range []bool{true, false} {
			if seen[fmt.Sprintf("%s served=%t", req, served)] == 0 {
				t.Errorf("never asked %s while served=%t: the scenarios looked at too little (%v)", req, served, seen)
			}
		}
	}
}

// ask writes req for revision rev as a tool would: the request annotation, or spec.paused false.
func ask(w *grayWorld, req grayapi.Request, rev int64) {
	if req == grayapi.RequestUnpause {
		w.edit(func(d *appsv1.Deployment) { d.Spec.Paused = false })
		return
	}
	w.setAnnotation(grayapi.ResumeAnnotation, fmt.Sprintf("%d:%s", rev, req))
}

// judge says whether the controller carried req out, from what it did (before is the status and
// d the Deployment when req was asked), and whether it dropped it as a request it does not serve
// must be: consumed, with a GrayResumeIgnored Warning (an unpause that does nothing is no request
// to drop).
func judge(w *grayWorld, req grayapi.Request, before grayapi.Status, d *appsv1.Deployment) (acted, dropped bool, what string) {
	after, now := w.status(), w.deployment()
	events := w.takeEvents()
	ignored := slices.ContainsFunc(events, func(e string) bool { return strings.Contains(e, grayapi.ReasonGrayResumeIgnored) })
	what = fmt.Sprintf("now %s at step %d of revision %d, paused %t, events %q", after.Phase, after.Step, after.Revision, now.Spec.Paused, events)
	if _, pending := now.Annotations[grayapi.ResumeAnnotation]; pending {
		return false, false, "the request is still there: " + what
	}
	image := func(d *appsv1.Deployment) string { return d.Spec.Template.Spec.Containers[0].Image }
	switch req {
	case grayapi.RequestNext, grayapi.RequestFull:
		moved := after.Revision == before.Revision && (after.Step > before.Step || after.Phase == grayapi.PhaseComplete && before.Phase != grayapi.PhaseComplete)
		return !ignored && moved, ignored, what
	case grayapi.RequestAbort:
		return !ignored && after.Phase == grayapi.PhaseAborted && before.Phase != grayapi.PhaseAborted, ignored, what
	case grayapi.RequestUndo:
		return !ignored && image(now) != image(d), ignored, what
	case grayapi.RequestRetry:
		return !ignored && before.Phase == grayapi.PhaseAborted && after.Phase != grayapi.PhaseAborted, ignored, what
	}
	// An unpause does something when it ends the user's pause for good, or moves the rollout on.
	changed := after.Step != before.Step || after.Phase != before.Phase || after.Revision != before.Revision
	acted = d.Spec.Paused && (changed || !now.Spec.Paused)
	return acted, !acted, what
}
