package e2e

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubegray/kubectl-gray/internal/testutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
	"github.com/kubegray/kubectl-gray/test/cluster"
)

// dashboardBenchDeployments is how many gray Deployments the dashboard benchmark shows.
const dashboardBenchDeployments = 1000

// dashboardBenchHolds is how many holds it writes, one at a time, to time each to the page.
const dashboardBenchHolds = 200

// BenchmarkDashboard measures `kubectl gray dashboard` (the binary, as users run it) with
// 1,000 gray Deployments in scope, each of one replica rolled out by the built-in controller
// (so the server also watches 1,000 ReplicaSets and pods) and held at 25% of "25,50" by a
// status the benchmark writes as gray-controller would (no gray-controller runs: the page
// shows what is written). Per iteration: headless Chromium loads the list until its 1,000 rows
// are drawn (first-paint-ms, the page's performance.now() at the first frame showing them).
// Then, with one list page open, holds are written one at a time (step 2 at 50%) and each is
// timed from just before its write to the frame the page shows it (hold-to-page p50, p99).
// The server's resident memory is read from /proc after the holds.
//
//	go test -run '^$' -bench BenchmarkDashboard -benchtime 5x -timeout 20m ./e2e/
func BenchmarkDashboard(b *testing.B) {
	browserPath := installedChromium(b)
	// 1,000 pods need more than two kwok nodes of 250.
	c := cluster.StartForTest(b, cluster.Options{Nodes: 4, ClientQPS: 100})
	const ns = "gray-bench"
	ctx := context.Background()
	if err := createNamespace(ctx, c.Client, ns); err != nil {
		b.Fatal(err)
	}
	createHeldDeployments(b, c.Client, ns, dashboardBenchDeployments)
	err := cluster.Poll(ctx, 5*time.Minute, time.Second, func(ctx context.Context) (bool, string, error) {
		pods, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, "", err
		}
		return len(pods.Items) == dashboardBenchDeployments, fmt.Sprintf("%d pods", len(pods.Items)), nil
	})
	if err != nil {
		b.Fatal(err)
	}

	u := newPluginUser(b, c, ns)
	u.quiet = true
	run := startDashboard(b, u)
	browser := newBrowser(b, browserPath)
	allDrawn := fmt.Sprintf(`document.querySelectorAll("#rollouts tbody tr").length === %d && performance.now()`, dashboardBenchDeployments)

	var paints []float64
	for b.Loop() {
		do(b, browser, chromedp.Navigate(run.url))
		paints = append(paints, get(b, browser, chromedp.Poll[float64](allDrawn, chromedp.WithPollingTimeout(time.Minute))))
	}
	slices.Sort(paints)
	b.ReportMetric(paints[len(paints)/2], "first-paint-ms")

	// The page notes when each row first shows the hold at 50%.
	get(b, browser, chromedp.Evaluate[any](`(() => {
		window.seen = {};
		const body = document.querySelector("#rollouts tbody");
		new MutationObserver(() => {
			const now = Date.now();
			for (const cur of body.querySelectorAll("[aria-current=step]")) {
				const key = cur.closest("tr").dataset.key;
				if (cur.textContent === "50%" && !(key in window.seen)) window.seen[key] = now;
			}
		}).observe(body, {childList: true});
	})()`))
	var latencies []time.Duration
	for i := range dashboardBenchHolds {
		name := benchDeploymentName(i * (dashboardBenchDeployments / dashboardBenchHolds))
		d, err := c.Client.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			b.Fatal(err)
		}
		d.Annotations[grayapi.StatusAnnotation] = benchHeldStatus(b, 1, 50)
		written := time.Now()
		if _, err := c.Client.AppsV1().Deployments(ns).Update(ctx, d, metav1.UpdateOptions{}); err != nil {
			b.Fatal(err)
		}
		shown := get(b, browser, chromedp.Poll[int64](fmt.Sprintf(`window.seen[%q]`, ns+"/"+name), chromedp.WithPollingTimeout(30*time.Second)))
		latencies = append(latencies, time.UnixMilli(shown).Sub(written))
	}
	slices.Sort(latencies)
	p50, p99 := latencies[len(latencies)/2], latencies[len(latencies)*99/100]
	b.ReportMetric(float64(p50.Milliseconds()), "hold-to-page-p50-ms")
	b.ReportMetric(float64(p99.Milliseconds()), "hold-to-page-p99-ms")
	rss := residentMiB(b, run.pid)
	b.ReportMetric(rss, "server-rss-MiB")
	b.Logf("%d Deployments: first paint %v ms; %d holds to the page: p50 %v, p99 %v, max %v; server RSS %.1f MiB",
		dashboardBenchDeployments, paints, len(latencies), p50, p99, latencies[len(latencies)-1], rss)
}

func benchDeploymentName(i int) string { return fmt.Sprintf("app-%04d", i) }

// benchHeldStatus is the status gray-controller writes for a hold of one replica at percent.
func benchHeldStatus(b *testing.B, step, percent int32) string {
	held := metav1.Now()
	s, err := grayapi.FormatStatus(grayapi.Status{Mode: grayapi.ModeInstead, Phase: grayapi.PhaseHeld, Revision: 1, StableRevision: 1,
		Step: step, Percent: percent, Target: 1, ObservedGeneration: 1, HeldAt: &held,
		Message: fmt.Sprintf("held at %d%%", percent)})
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// createHeldDeployments creates n gray Deployments of one replica, held at 25%, eight at a time.
func createHeldDeployments(b *testing.B, client kubernetes.Interface, ns string, n int) {
	names := make(chan string)
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for name := range names {
				d := testutil.GrayDeployment(name, 1, "25,50", testutil.WithImage(stableImage),
					testutil.WithAnnotation(grayapi.StatusAnnotation, benchHeldStatus(b, 0, 25)))
				errs <- createDeployment(d)(context.Background(), client, ns)
			}
		})
	}
	for i := range n {
		names <- benchDeploymentName(i)
	}
	close(names)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
}

// residentMiB is a process's resident memory (VmRSS) in MiB.
func residentMiB(b *testing.B, pid int) float64 {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.Lines(string(status)) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			if err != nil {
				b.Fatal(err)
			}
			return kb / 1024
		}
	}
	b.Fatalf("no VmRSS in /proc/%d/status", pid)
	return 0
}
