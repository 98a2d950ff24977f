package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	appsv1 "k8s.io/api/apps/v1"

	"github.com/kubegray/kubectl-gray/internal/testutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
	"github.com/kubegray/kubectl-gray/test/cluster"
)

// TestDashboard runs `kubectl gray dashboard` as users run it, against a control plane whose
// rollouts gray-controller holds, and drives its pages in a real browser (Debian's Chromium,
// headless): the list shows five rollouts in five phases, failures first; a held rollout's
// page resumes to its next hold and shows it without a reload; a failing rollout is aborted
// from its page; a write without the token or from another origin is refused. Numbers are
// written by hand: of 4 replicas, 25% is 1 and 50% is 2.
func TestDashboard(t *testing.T) {
	browserPath := installedChromium(t)
	c := cluster.StartForTest(t, cluster.Options{Controllers: cluster.WithoutDeploymentController})
	startGrayController(t, c, "--mode=instead")
	e := newGrayEnv(t, c, "dashboard")
	u := newPluginUser(t, c, e.ns)

	// Five Deployments of 4 replicas at "25,50", rolled out, then each given a new image.
	app := func(name string, deadline int32, opts ...testutil.DeploymentOption) *appsv1.Deployment {
		return testutil.Deployment(name, append([]testutil.DeploymentOption{testutil.WithImage(stableImage), testutil.WithReplicas(4),
			testutil.WithProgressDeadline(deadline), testutil.WithTemplateAnnotation(cluster.CrashLoopAnnotation, crashImage),
			testutil.WithAnnotation(grayapi.PercentAnnotation, "25,50")}, opts...)...)
	}
	apps := []*appsv1.Deployment{
		// The hold at 50% lasts an hour of its own: the page says so, and when it moves on.
		app("held", 600, testutil.WithAnnotation(grayapi.PercentAnnotation, "25,50@1h")),
		app("progressing", 600),
		app("degraded", canaryDeadlineSeconds),
		app("aborted", canaryDeadlineSeconds, testutil.WithAnnotation(grayapi.OnFailureAnnotation, string(grayapi.OnFailureAbort))),
		app("complete", 600),
	}
	for _, d := range apps {
		e.do(createDeployment(d))
	}
	for _, d := range apps {
		e.expect(d.Name, grayState{phase: grayapi.PhaseComplete, newSpec: 4})
	}
	e.do(setImage("held", goodImage))
	for _, name := range []string{"progressing", "degraded", "aborted"} {
		e.do(setImage(name, crashImage))
	}
	e.expect("held", grayState{phase: grayapi.PhaseHeld, newSpec: 1, oldTotal: 3, paused: true})
	e.waitPhase("progressing", grayapi.PhaseProgressing)
	e.waitPhase("degraded", grayapi.PhaseDegraded)
	e.waitPhase("aborted", grayapi.PhaseAborted)

	url := startDashboard(t, u).url
	shots := t.ArtifactDir()
	ctx := newBrowser(t, browserPath)

	// The list: failures first, each row with its phase, current hold point, canary
	// (available new / target / replicas) and failure reason.
	key := func(name string) string { return e.ns + "/" + name }
	var rows []listRow
	eventually(t, 20*time.Second, "the list shows the five rollouts in their phases", func() (bool, string) {
		do(t, ctx, chromedp.Navigate(url), chromedp.WaitVisible(`#rollouts tbody tr`), chromedp.Sleep(300*time.Millisecond))
		rows = get(t, ctx, chromedp.Evaluate[[]listRow](listRowsJS))
		want := []listRow{
			{Key: key("degraded"), Phase: "Degraded", Current: "25%", Share: "0 / 1 / 4", Failure: "ProgressDeadlineExceeded"},
			// An aborted canary's target is 0: it is sized back to no pods.
			{Key: key("aborted"), Phase: "Aborted", Current: "25%", Share: "0 / 0 / 4", Failure: "ProgressDeadlineExceeded"},
			{Key: key("progressing"), Phase: "Progressing", Current: "25%", Share: "0 / 1 / 4", Failure: "–"},
			{Key: key("held"), Phase: "Held", Current: "25%", Share: "1 / 1 / 4", Failure: "–"},
			{Key: key("complete"), Phase: "Complete", Current: "100%", Share: "4 / 4 / 4", Failure: "–"},
		}
		return slices.Equal(rows, want), fmt.Sprintf("rows %+v, want %+v", rows, want)
	})
	screenshot(t, ctx, filepath.Join(shots, "dashboard-list.png"))
	get(t, ctx, chromedp.Evaluate[any](`(() => { const s = document.getElementById("filter-phase"); s.value = "Held";
		s.dispatchEvent(new Event("input")); })()`))
	do(t, ctx, chromedp.Sleep(300*time.Millisecond))
	if shown := get(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll("#rollouts tbody tr").length`)); shown != 1 {
		t.Errorf("filtering on phase Held shows %d rows, want 1", shown)
	}

	// The held rollout's page, reached with the keyboard from the list: resume goes on to 50%
	// and the page shows the new hold without a reload.
	get(t, ctx, chromedp.Evaluate[any](`(() => { const s = document.getElementById("filter-phase"); s.value = "";
		s.dispatchEvent(new Event("input")); })()`))
	do(t, ctx, chromedp.WaitVisible(`tr[data-key="`+key("held")+`"] a`), chromedp.Focus(`tr[data-key="`+key("held")+`"] a`),
		chromedp.KeyEvent("\r"), chromedp.WaitVisible(`#actions button[data-action="resume"]`))
	var page string
	get(t, ctx, chromedp.Evaluate[string](`window.grayMarker = "same page"`))
	if label := get(t, ctx, chromedp.Text(`#actions button[data-action="resume"]`)); label != "Resume to 50%" {
		t.Errorf("resume button says %q, want \"Resume to 50%%\"", label)
	}
	eventually(t, 15*time.Second, "the held page shows both revisions, the GrayHeld event and the share chart", func() (bool, string) {
		page = get(t, ctx, chromedp.Evaluate[string](`[document.querySelectorAll("#revisions > li").length, document.querySelector("#timeline").textContent.includes("GrayHeld"),
			!!document.querySelector("#chart path.line")].join(" ")`))
		return page == "2 true true", page
	})
	do(t, ctx, chromedp.Focus(`#actions button[data-action="resume"]`), chromedp.KeyEvent("\r"), chromedp.WaitVisible(`#confirm`))
	if confirmText, want := get(t, ctx, chromedp.Text(`#confirm-text`)), "Let revision 2 of held go on from its hold to the next hold point, 50%."; confirmText != want {
		t.Errorf("confirmation says %q, want %q", confirmText, want)
	}
	do(t, ctx, chromedp.Click(`#confirm-ok`))
	eventually(t, 30*time.Second, "the held page moves to the hold at 50% without a reload", func() (bool, string) {
		page = get(t, ctx, chromedp.Evaluate[string](`[window.grayMarker, document.querySelector("#steps [aria-current=step]").textContent,
			document.querySelector("#phase").textContent, document.querySelector("#share .sharetext").textContent,
			document.querySelector("#answer").textContent].join(" | ")`))
		want := "same page | 50% 1h0m0s | Held | 2 / 2 / 4 | deployment.apps/held gray resumed to 50% (revision 2)"
		return page == want, page
	})
	if title := get(t, ctx, chromedp.Evaluate[string](`document.querySelector("#steps [aria-current=step]").title`)); !strings.HasPrefix(title,
		"50% for 1h0m0s, moves on by itself at ") {
		t.Errorf("the current hold point's title %q does not say its hour and when it moves on", title)
	}
	screenshot(t, ctx, filepath.Join(shots, "dashboard-rollout.png"))

	// The degraded rollout is aborted from its page.
	do(t, ctx, chromedp.Navigate(url+"rollouts/"+e.ns+"/degraded"), chromedp.WaitVisible(`#actions button[data-action="abort"]`),
		chromedp.Click(`#actions button[data-action="abort"]`), chromedp.WaitVisible(`#confirm`), chromedp.Click(`#confirm-ok`))
	eventually(t, 30*time.Second, "the degraded page shows it Aborted", func() (bool, string) {
		page = get(t, ctx, chromedp.Text(`#phase`))
		return page == "Aborted", page
	})
	e.waitPhase("degraded", grayapi.PhaseAborted)

	// Writes without this run's token or from another origin are refused, and write nothing.
	token := get(t, ctx, chromedp.Evaluate[string](`document.querySelector('meta[name="gray-token"]').content`))
	for _, tt := range []struct {
		name    string
		headers map[string]string
		want    string
	}{
		{"no token", map[string]string{"Origin": strings.TrimSuffix(url, "/")}, "does not carry this dashboard's token"},
		{"another origin", map[string]string{"Origin": "https://evil.example", "X-Gray-Token": token}, `origin "https://evil.example"`},
	} {
		code, body := postDashboard(t, url+"api/rollouts/"+e.ns+"/progressing/abort", tt.headers)
		if code != http.StatusForbidden || !strings.Contains(body, tt.want) {
			t.Errorf("%s: %d %s, want 403 with %q", tt.name, code, body, tt.want)
		}
	}
	if d := e.get("progressing"); d.Annotations[grayapi.ResumeAnnotation] != "" {
		t.Errorf("a refused request wrote %s=%q", grayapi.ResumeAnnotation, d.Annotations[grayapi.ResumeAnnotation])
	}
	t.Logf("screenshots in %s", shots)
}

// listRow is what the list page shows of one rollout.
type listRow struct {
	Key, Phase, Current, Share, Failure string
}

const listRowsJS = `[...document.querySelectorAll("#rollouts tbody tr")].map(tr => ({
	Key: tr.dataset.key, Phase: tr.dataset.phase,
	Current: (tr.querySelector("[aria-current=step]") || {}).textContent || "",
	Share: tr.querySelector(".sharetext").textContent, Failure: tr.cells[7].textContent}))`

// waitPhase waits until gray-controller reports phase for name.
func (e *grayEnv) waitPhase(name string, phase grayapi.Phase) {
	e.t.Helper()
	eventually(e.t, 60*time.Second, fmt.Sprintf("deployment %s/%s %s", e.ns, name, phase), func() (bool, string) {
		raw := e.get(name).Annotations[grayapi.StatusAnnotation]
		st, err := grayapi.ParseStatus(raw)
		return err == nil && st.Phase == phase, raw
	})
}

// installedChromium is the browser test/hack/install-chromium.sh installs (make test starts it
// in the background; this waits for it).
func installedChromium(t testing.TB) string {
	t.Helper()
	out, err := exec.Command("../hack/install-chromium.sh").Output()
	if err != nil {
		t.Fatalf("test/hack/install-chromium.sh: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1]
}

// dashboardRun is a running `kubectl gray dashboard`: its URL and its process (kubectl execs
// kubectl-gray in its own place, so the pid is the plugin's).
type dashboardRun struct {
	url string
	pid int
}

// startDashboard runs `kubectl gray dashboard` on a free port as u, and returns it once it
// serves; the run is interrupted when the test ends.
func startDashboard(t testing.TB, u *pluginUser, args ...string) dashboardRun {
	t.Helper()
	cmd := exec.Command("kubectl", append([]string{"gray", "dashboard", "--port=0"}, args...)...)
	cmd.Env = u.env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		if err := cmd.Wait(); err != nil {
			t.Errorf("kubectl gray dashboard ended with %v:\n%s", err, stderr.String())
		}
	})
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			line <- sc.Text()
		}
		close(line)
	}()
	select {
	case l := <-line:
		m := regexp.MustCompile(`at (http://\S+/) `).FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("kubectl gray dashboard printed %q, no URL; stderr:\n%s", l, stderr.String())
		}
		return dashboardRun{url: m[1], pid: cmd.Process.Pid}
	case <-time.After(60 * time.Second):
		t.Fatalf("kubectl gray dashboard did not print its URL within 60s; stderr:\n%s", stderr.String())
	}
	return dashboardRun{}
}

// newBrowser starts headless Chromium for the test, with a profile of its own.
func newBrowser(t testing.TB, path string) context.Context {
	t.Helper()
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(path), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 800))
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting %s: %v", path, err)
	}
	return ctx
}

// browserTimeout bounds one step in the browser, so a missing element fails the test.
const browserTimeout = 30 * time.Second

// do runs browser steps.
func do(t testing.TB, ctx context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, browserTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("browser: %v", err)
	}
}

// get runs a browser action and returns its value.
func get[T any](t testing.TB, ctx context.Context, a chromedp.Action[T]) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, browserTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatalf("browser: %v", err)
	}
	return v
}

func screenshot(t *testing.T, ctx context.Context, path string) {
	t.Helper()
	png := get(t, ctx, chromedp.FullScreenshot(100))
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// postDashboard sends a POST with headers from outside the browser.
func postDashboard(t *testing.T, url string, headers map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var body map[string]any
	_ = json.NewDecoder(res.Body).Decode(&body)
	return res.StatusCode, fmt.Sprint(body)
}
