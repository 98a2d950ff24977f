package e2e

// Argo CD's resource actions (manifests/argocd/actions.yaml) on the live Deployment of TestGitOps:
// at every recorded phase the actions its discovery offers are what kubegray.io/status serves,
// and each gray action it does not offer, tried anyway as Argo CD would run it, is dropped by
// gray-controller with a GrayResumeIgnored Warning, the rollout left as it stood.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubegray/kubectl-gray/pkg/deployutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// gitopsActions names Argo CD's action for each request gray-controller serves: the
// kubegray.io/resume requests as the snippet's gray-* actions, the unpause as Argo CD's built-in
// resume, which the snippet's discovery gates on a gray Deployment.
var gitopsActions = map[grayapi.Request]string{
	grayapi.RequestNext: "gray-resume", grayapi.RequestFull: "gray-resume-full", grayapi.RequestAbort: "gray-abort",
	grayapi.RequestUndo: "gray-undo", grayapi.RequestRetry: "gray-retry", grayapi.RequestUnpause: "resume",
}

// offeredActions is the actions discovery enabled, in the order of grayapi.Requests.
func offeredActions(discovered map[string]bool) []string {
	var offered []string
	for _, r := range grayapi.Requests {
		if discovered[gitopsActions[r]] {
			offered = append(offered, gitopsActions[r])
		}
	}
	return offered
}

// servedActions is the actions Argo CD must offer on d: those of the requests its status serves
// for d's generation (none for a generation gray-controller has not reported on), the built-in
// resume only while d is paused.
func servedActions(d *appsv1.Deployment) []string {
	st, err := grayapi.ParseStatus(d.Annotations[grayapi.StatusAnnotation])
	if err != nil || st.ObservedGeneration != d.Generation {
		return nil
	}
	var served []string
	for _, r := range st.Serves {
		if r != grayapi.RequestUnpause || d.Spec.Paused {
			served = append(served, gitopsActions[r])
		}
	}
	return served
}

// checkOffered fails unless the actions discovery offered on d are the ones its status serves.
func (g *gitopsRun) checkOffered(phase string, d *appsv1.Deployment, discovered map[string]bool) []string {
	g.t.Helper()
	offered, served := offeredActions(discovered), servedActions(d)
	if !slices.Equal(offered, served) {
		g.t.Errorf("%s: Argo CD offers %v, kubegray.io/status serves %v (%s)", phase, offered, served, d.Annotations[grayapi.StatusAnnotation])
	}
	return offered
}

// tryNotOffered runs, on the live Deployment of a phase just recorded with the actions offered,
// each gray action not offered, as Argo CD would (the action writes <revision>:<request> to
// kubegray.io/resume, pinned by test/gitops), and wants each dropped: the request consumed, a
// GrayResumeIgnored Warning naming it, and the phase, revision, step, serves, template and pause
// as they were once gray-controller has reported on the write (an annotation's write moves a
// Deployment's generation on, as a template's does).
func (g *gitopsRun) tryNotOffered(phase string, offered []string) {
	g.t.Helper()
	for _, r := range grayapi.Requests {
		action := gitopsActions[r]
		if r == grayapi.RequestUnpause || slices.Contains(offered, action) {
			continue
		}
		before := g.e.get("web")
		was := g.e.grayStatus(before)
		value := before.Annotations[deployutil.RevisionAnnotation] + ":" + string(r)
		warned, sent := g.ignoredWarnings(value)
		g.writeRequest(value)
		if !g.dropped(value) {
			g.t.Errorf("%s: %s (%s), not offered, is neither served nor dropped: kubegray.io/resume still says it after %s", phase, action, value,
				requestDeadline)
			g.writeRequest("")
			continue
		}
		var after *appsv1.Deployment
		var st grayapi.Status
		eventually(g.t, 30*time.Second, phase+": gray-controller reports on the write that dropped "+value, func() (bool, string) {
			after = g.e.get("web")
			st = g.e.grayStatus(after)
			return st.ObservedGeneration == after.Generation, fmt.Sprintf("generation %d, reported on %d", after.Generation, st.ObservedGeneration)
		})
		if st.Phase != was.Phase || st.Revision != was.Revision || st.Step != was.Step || !slices.Equal(st.Serves, was.Serves) ||
			!equality.Semantic.DeepEqual(after.Spec.Template, before.Spec.Template) || after.Spec.Paused != before.Spec.Paused {
			g.t.Errorf("%s: %s (%s), not offered, moved the rollout: %s revision %d step %d serving %s paused %t, then %s revision %d step %d serving %s paused %t (template changed: %t)",
				phase, action, value, was.Phase, was.Revision, was.Step, was.Serves, before.Spec.Paused, st.Phase, st.Revision, st.Step, st.Serves,
				after.Spec.Paused, !equality.Semantic.DeepEqual(after.Spec.Template, before.Spec.Template))
		}
		if sent >= recorderBurst {
			// client-go's event recorder sends 25 Warnings of one object, then one each 5
			// minutes, and drops the rest (EventSourceObjectSpamFilter).
			g.t.Logf("%s: %s dropped; its Warning not awaited: %d Warnings of web sent already, the event recorder's burst", phase, action, sent)
			continue
		}
		if !g.warnedAgain(value, warned) {
			g.t.Errorf("%s: %s (%s), not offered, was dropped without a GrayResumeIgnored Warning naming it within %s", phase, action, value, requestDeadline)
		}
	}
}

// warnedAgain waits until more than warned GrayResumeIgnored Warnings name value, and reports
// whether they did in time.
func (g *gitopsRun) warnedAgain(value string, warned int) bool {
	g.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), requestDeadline)
	defer cancel()
	for ctx.Err() == nil {
		if now, _ := g.ignoredWarnings(value); now > warned {
			return true
		}
		time.Sleep(100 * time.Millisecond)
	}
	return false
}

// requestDeadline is how long a request not served may stay in kubegray.io/resume: gray-controller
// syncs on the write, and consumes it in its next write.
const requestDeadline = 15 * time.Second

// dropped waits until kubegray.io/resume no longer says value, and reports whether it did in time.
func (g *gitopsRun) dropped(value string) bool {
	g.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), requestDeadline)
	defer cancel()
	for ctx.Err() == nil {
		if g.e.get("web").Annotations[grayapi.ResumeAnnotation] != value {
			return true
		}
		time.Sleep(100 * time.Millisecond)
	}
	return false
}

// recorderBurst is how many Warnings of one object client-go's event recorder sends before its
// spam filter lets one through each 5 minutes (tools/record: defaultSpamBurst).
const recorderBurst = 25

// ignoredWarnings counts the GrayResumeIgnored Warnings of web that name value, and every Warning
// of web sent, each repeat counted.
func (g *gitopsRun) ignoredWarnings(value string) (n, sent int) {
	g.t.Helper()
	list, err := g.e.client.CoreV1().Events(g.e.ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		g.t.Fatalf("list events: %v", err)
	}
	for _, ev := range list.Items {
		if ev.InvolvedObject.Kind != "Deployment" || ev.InvolvedObject.Name != "web" || ev.Type != corev1.EventTypeWarning {
			continue
		}
		count := max(int(ev.Count), 1)
		sent += count
		if ev.Reason == grayapi.ReasonGrayResumeIgnored && strings.Contains(ev.Message, grayapi.QuoteValue(value)) {
			n += count
		}
	}
	return n, sent
}

// writeRequest writes kubegray.io/resume as an action's Lua does, in a merge patch as Argo CD
// sends an action's result; "" removes it.
func (g *gitopsRun) writeRequest(value string) {
	g.t.Helper()
	var annotation any = value
	if value == "" {
		annotation = nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{grayapi.ResumeAnnotation: annotation}}})
	if err != nil {
		g.t.Fatal(err)
	}
	if _, err := g.e.client.AppsV1().Deployments(g.e.ns).Patch(context.Background(), "web", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		g.t.Fatalf("write %s=%s: %v", grayapi.ResumeAnnotation, value, err)
	}
}

// useAction runs the gray action of request on web as Argo CD would, after checking that its
// discovery offered it at the phase recorded last.
func (g *gitopsRun) useAction(r grayapi.Request) {
	g.t.Helper()
	last := g.rows[len(g.rows)-1]
	if !slices.Contains(last.actions, gitopsActions[r]) {
		g.t.Fatalf("%s: Argo CD does not offer %s (offers %v)", last.phase, gitopsActions[r], last.actions)
	}
	g.writeRequest(g.e.get("web").Annotations[deployutil.RevisionAnnotation] + ":" + string(r))
}

// wantOffered fails unless Argo CD offered exactly actions at the phase recorded last.
func (g *gitopsRun) wantOffered(actions ...string) {
	g.t.Helper()
	if last := g.rows[len(g.rows)-1]; !slices.Equal(last.actions, actions) {
		g.t.Errorf("%s: Argo CD offers %v, want %v", last.phase, last.actions, actions)
	}
}

func checkGitOpsTable(t *testing.T, rows []gitopsRow) {
	t.Helper()
	var b strings.Builder
	b.WriteString("| mode | phase | Argo CD (manifests/argocd) | Argo CD actions offered | kstatus (Flux's default) | Flux with manifests/flux |\n" +
		"| --- | --- | --- | --- | --- | --- |\n")
	for _, m := range gitopsModes {
		for _, r := range rows {
			if r.mode != m.name {
				continue
			}
			argo := r.argo.Status
			switch r.argo.Status {
			case "Suspended":
				argo += ": " + r.argo.Message
			case "Degraded":
				reason, _, _ := strings.Cut(r.argo.Message, ":")
				argo += ": " + reason
			}
			actions := strings.Join(r.actions, ", ")
			if actions == "" {
				actions = "none"
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", r.mode, r.phase, argo, actions, r.kstatus.Status, r.flux.Status)
		}
	}
	table := b.String()
	t.Logf("docs/gitops.md table from this run:\n%s", table)
	const path = "../../docs/gitops.md"
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	before, rest, ok := strings.Cut(string(doc), gitopsTableBegin+"\n")
	_, after, ok2 := strings.Cut(rest, gitopsTableEnd)
	if !ok || !ok2 {
		t.Fatalf("%s lacks the table markers %q and %q", path, gitopsTableBegin, gitopsTableEnd)
	}
	if os.Getenv("GITOPS_UPDATE_DOCS") != "" {
		if err := os.WriteFile(path, []byte(before+gitopsTableBegin+"\n"+table+gitopsTableEnd+after), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	// Revision numbers count the templates a mode went through on the way; the rest must agree.
	revisions := regexp.MustCompile(`revision [0-9]+`)
	normalize := func(s string) string { return revisions.ReplaceAllString(strings.TrimSpace(s), "revision N") }
	if normalize(rest[:strings.Index(rest, gitopsTableEnd)]) != normalize(table) {
		t.Errorf("%s's table differs from this run's; if the change is intended, run TestGitOps with GITOPS_UPDATE_DOCS=1", path)
	}
}
