package main

import (
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/kubegray/kubectl-gray/pkg/gates"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
	"github.com/kubegray/kubectl-gray/test/cluster"
	"github.com/kubegray/kubectl-gray/test/prom"
)

// `bench gates`: what metric gates cost gray-controller. N held Deployments are measured twice in
// one run, on one control plane, one Prometheus and one gray-controller process: first without
// gates, then each naming a Prometheus gate measured every -interval.
//
// Without gates first: turning gates on is the change under test, and the other order would
// start the ungated phase with whatever the gated one left (a Go heap grown by it, which the
// runtime returns to the kernel slowly, and the gates' records in every status), so that RSS
// and CPU would have no clean baseline. The price is that the gated phase runs later, against
// a Prometheus holding more samples, on a machine whose other load may have changed: the table
// says when each phase ran, and one run is one sample.

// benchGate is the gate every Deployment names in the gated phase.
const benchGate = "error-rate"

// gateDefinition is benchGate's definition: the error-rate recipe of docs/gates.md over the
// exporter's series (traffic.go), which finds data and passes. Its count and inconclusiveLimit
// are the most a definition may have, so that no gate reaches a verdict (and stops measuring)
// during a phase: runGates refuses phases longer than that allows. failureLimit stays 0: a
// failing measurement is not expected, and the Degraded Deployments would show it.
func gateDefinition(interval time.Duration) string {
	return fmt.Sprintf("provider: prometheus\n"+
		"query: sum(rate(http_requests_total{pod=~\"$canary_pods\",code=~\"5..\"}[$window])) / sum(rate(http_requests_total{pod=~\"$canary_pods\"}[$window]))\n"+
		"success: result < 0.05\ninterval: %s\ncount: %d\ninconclusiveLimit: %d\n", interval, gates.MaxCount, gates.MaxCount)
}

// touchLabel is the label the bench rewrites on every Deployment in both phases. A held
// Deployment without gates is never synced: with nothing happening, the ungated phase would
// have no sync latency to compare. So both phases get the same events, each Deployment's label
// rewritten every -touch-every, spread evenly: a stand-in for what a held Deployment sees in a
// real cluster (a label set by a tool, a GitOps re-apply). A label, not an annotation: the
// Deployment's annotations are copied onto its new ReplicaSet (as upstream does), which would
// add a ReplicaSet write per touch and make the churn itself the load under test.
const touchLabel = "bench.kubegray.io/touch"

type gatesBench struct {
	bench
	interval, duration, touchEvery, warmup time.Duration
	percent, qps                           int
}

// runGates is `bench gates`.
func runGates(args []string) error {
	fs := flag.NewFlagSet("gates", flag.ExitOnError)
	parsed := benchFlags(fs, 100, 4)
	interval := fs.Duration("interval", 10*time.Second, "the gate's interval: each Deployment's gate is measured this often")
	duration := fs.Duration("duration", 3*time.Minute, "measured length of each phase (after its warm-up)")
	percent := fs.Int("percent", 50, "hold point (the canary's share)")
	qps := fs.Int("qps", 20, "gray-controller's --kube-api-qps (burst 1.5x); 20 is its default")
	touchEvery := fs.Duration("touch-every", 0, "each Deployment's label is rewritten this often in both phases (0: the gate's -interval)")
	_ = fs.Parse(args)
	g := gatesBench{bench: bench{workers: 5}, interval: *interval, duration: *duration, percent: *percent, qps: *qps, touchEvery: *touchEvery}
	if err := parsed(&g.bench); err != nil {
		return err
	}
	if g.touchEvery == 0 {
		g.touchEvery = g.interval
	}
	// Long enough for every Deployment's measurements (or touches) to come round once before
	// the measured window opens.
	g.warmup = max(g.interval, g.touchEvery) + 5*time.Second
	// The gated phase: annotations spread over one interval, the warm-up, the window.
	if longest := time.Duration(gates.MaxCount) * g.interval; g.interval+g.warmup+g.duration >= longest {
		return fmt.Errorf("-duration %v: the gates would reach their count (%d x %v) before the phase ends", g.duration, gates.MaxCount, g.interval)
	}
	if g.interval < time.Second || g.deployments < 1 || g.percent < 1 || g.percent > 99 || g.qps < 1 {
		return fmt.Errorf("need -interval >= 1s, -deployments >= 1, 1 <= -percent <= 99 and -qps >= 1")
	}
	return g.run(context.Background())
}

func (g gatesBench) run(ctx context.Context) error {
	// Room for every Deployment at its surge during the initial rollout, twice over.
	nodes := max(2, g.deployments*int(g.replicas)*2/250+1)
	fmt.Fprintf(os.Stderr, "bench: starting a control plane with %d kwok nodes\n", nodes)
	c, err := cluster.Start(ctx, cluster.Options{Controllers: cluster.WithoutDeploymentController, Nodes: nodes, Audit: true, AuditReads: true})
	if err != nil {
		return err
	}
	defer func() {
		if err := c.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "bench: stop control plane:", err)
		}
	}()
	traffic, err := startTrafficExporter(ctx, c.Client, "default")
	if err != nil {
		return err
	}
	defer traffic.close()
	p, err := prom.Run(traffic.addr)
	if err != nil {
		return err
	}
	defer func() {
		if err := p.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "bench: stop prometheus:", err)
		}
	}()
	ports, err := cluster.FreePorts(2)
	if err != nil {
		return err
	}
	metricsAddress := fmt.Sprintf("127.0.0.1:%d", ports[1])
	metricsURL := "http://" + metricsAddress + "/metrics"
	// startInstead turns the metrics endpoint off; a later flag wins.
	extra := append(cluster.ClientRateFlags(g.qps), "--metrics-bind-address="+metricsAddress, "--prometheus-url="+p.URL)
	if err := startInstead(ctx, c, g.controller, g.workers, ports[0], extra...); err != nil {
		return err
	}
	pid, ok := c.Processes()["gray-controller"]
	if !ok {
		return fmt.Errorf("no gray-controller process")
	}
	client := c.Client
	if err := g.hold(ctx, c); err != nil {
		return err
	}

	rss := sampleRSS(map[string]int{"gray-controller": pid}, time.Second)
	defer rss.close()
	touches := startTouching(ctx, client, g.deployments, g.touchEvery)
	defer touches.close()
	var phases []phase
	for _, gated := range []bool{false, true} {
		name := "without gates"
		if gated {
			name = "with gates"
			if err := nameGate(ctx, client, "default", g.deployments, benchGate, g.interval); err != nil {
				return err
			}
		}
		fmt.Fprintf(os.Stderr, "bench: %s: warming up %v, then measuring %v\n", name, g.warmup, g.duration)
		time.Sleep(g.warmup)
		ph, err := measurePhase(ctx, name, metricsURL, p.URL+"/metrics", pid, touches, g.duration)
		if err != nil {
			return err
		}
		ph.rssPeak, ph.rssEnd = rss.peak(ph.from, ph.to)["gray-controller"], rss.take().kb["gray-controller"]
		phases = append(phases, ph)
	}
	touches.close()
	if err := countRequests(c.AuditLog(), phases); err != nil {
		return err
	}
	g.print(phases)
	return nil
}

// hold creates the gate definition (named by no Deployment yet) and N Deployments held at
// -percent.
func (g gatesBench) hold(ctx context.Context, c *cluster.Cluster) error {
	if err := defineGate(ctx, c.Client, "default", g.interval); err != nil {
		return err
	}
	return holdDeployments(ctx, c, g.bench, "default", g.deployments, g.percent)
}

// defineGate creates, in namespace, the ConfigMap defining benchGate, measured every interval.
func defineGate(ctx context.Context, client kubernetes.Interface, namespace string, interval time.Duration) error {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "bench-gates", Labels: map[string]string{grayapi.GatesLabel: grayapi.GatesLabelValue}},
		Data: map[string]string{benchGate: gateDefinition(interval)}}
	_, err := client.CoreV1().ConfigMaps(namespace).Create(ctx, cm, metav1.CreateOptions{})
	return err
}

// holdDeployments creates n of b's Deployments in namespace held at percent: created, rolled
// out, then given a new image, which gray-controller holds.
func holdDeployments(ctx context.Context, c *cluster.Cluster, b bench, namespace string, n, percent int) error {
	client := c.Client
	fmt.Fprintf(os.Stderr, "bench: creating %d Deployments x %d replicas in %s\n", n, b.replicas, namespace)
	if err := forAll(n, func(i int) error {
		d := b.deployment(i)
		d.Annotations = map[string]string{grayapi.PercentAnnotation: strconv.Itoa(percent)}
		_, err := client.AppsV1().Deployments(namespace).Create(ctx, d, metav1.CreateOptions{})
		return err
	}); err != nil {
		return err
	}
	if err := waitAllRolledOut(ctx, client, namespace, n, 10*time.Minute); err != nil {
		return fmt.Errorf("initial rollout: %w", err)
	}
	if err := changeImages(ctx, client, namespace, n); err != nil {
		return err
	}
	return waitAllHeld(ctx, c, namespace, n, 10*time.Minute)
}

// nameGate annotates namespace's n Deployments with gate and waits until each has opened the
// gate's window. The annotations are spread evenly over spread (the gate's interval): written at
// once, every Deployment's measurements would fall due in the same instant, interval after
// interval, and a phase would measure a burst of n measurements at once (a cluster whose holds
// all settled in one second) rather than n independent holds.
func nameGate(ctx context.Context, client kubernetes.Interface, namespace string, n int, gate string, spread time.Duration) error {
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, grayapi.GatesAnnotation, gate)
	fmt.Fprintf(os.Stderr, "bench: naming gate %s on %d Deployments of %s over %v\n", gate, n, namespace, spread)
	tick := time.NewTicker(spread / time.Duration(n))
	defer tick.Stop()
	for i := range n {
		if _, err := client.AppsV1().Deployments(namespace).Patch(ctx, deploymentName(i), types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			return err
		}
		<-tick.C
	}
	return waitAll(ctx, client, namespace, n, 2*time.Minute, "with the gate's window open", func(d *appsv1.Deployment) bool {
		st, err := grayapi.ParseStatus(d.Annotations[grayapi.StatusAnnotation])
		if err != nil || st.Phase != grayapi.PhaseHeld {
			return false
		}
		for _, gs := range st.Gates {
			if gs.Name == gate && gs.At != nil {
				return true
			}
		}
		return false
	})
}

// toucher rewrites touchLabel on the Deployments one after another, each every period, from
// when it starts until close.
type toucher struct {
	done    atomic.Int64 // touches written
	dropped atomic.Int64 // touches not sent: the last ones were still in flight
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	once    sync.Once
}

func startTouching(ctx context.Context, client kubernetes.Interface, n int, period time.Duration) *toucher {
	ctx, cancel := context.WithCancel(ctx)
	t := &toucher{cancel: cancel}
	// A few touches in flight at once, so that one slow answer delays no other; a tick with
	// all of them busy is dropped and counted, not queued, so a lag shows as a lower rate.
	slots := make(chan struct{}, 8)
	t.wg.Go(func() {
		tick := time.NewTicker(period / time.Duration(n))
		defer tick.Stop()
		for seq := 0; ; seq++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			select {
			case slots <- struct{}{}:
			default:
				t.dropped.Add(1)
				continue
			}
			patch := fmt.Sprintf(`{"metadata":{"labels":{%q:"%d"}}}`, touchLabel, seq)
			t.wg.Go(func() {
				defer func() { <-slots }()
				_, err := client.AppsV1().Deployments("default").Patch(ctx, deploymentName(seq%n), types.MergePatchType, []byte(patch), metav1.PatchOptions{})
				if err == nil {
					t.done.Add(1)
				} else if ctx.Err() == nil {
					fmt.Fprintln(os.Stderr, "bench: touch:", err)
				}
			})
		}
	})
	return t
}

func (t *toucher) close() {
	t.once.Do(func() {
		t.cancel()
		t.wg.Wait()
	})
}

// phase is what one phase measured: its window, the servers' metrics at both ends of it, and
// gray-controller's API requests in it.
type phase struct {
	name             string
	from, to         time.Time
	ctrl0, ctrl1     exposition // gray-controller's /metrics
	prom0, prom1     exposition // Prometheus' own /metrics
	cpu0, cpu1       float64    // gray-controller's CPU seconds
	touches, dropped int64
	rssPeak, rssEnd  int64          // gray-controller's, KiB
	requests         map[string]int // "verb resource" → gray-controller's requests (audit log)
}

// measurePhase reads every counter, waits d, and reads them again.
func measurePhase(ctx context.Context, name, ctrlURL, promURL string, pid int, t *toucher, d time.Duration) (phase, error) {
	ph := phase{name: name}
	read := func() (time.Time, exposition, exposition, float64, int64, int64, error) {
		at := time.Now()
		touched, dropped := t.done.Load(), t.dropped.Load()
		ctrl, err := scrape(ctx, ctrlURL)
		if err != nil {
			return at, nil, nil, 0, 0, 0, err
		}
		pm, err := scrape(ctx, promURL)
		if err != nil {
			return at, nil, nil, 0, 0, 0, err
		}
		cpu, err := cpuSeconds(pid)
		return at, ctrl, pm, cpu, touched, dropped, err
	}
	from, ctrl0, prom0, cpu0, touched0, dropped0, err := read()
	if err != nil {
		return ph, err
	}
	time.Sleep(d)
	to, ctrl1, prom1, cpu1, touched1, dropped1, err := read()
	if err != nil {
		return ph, err
	}
	ph.from, ph.to, ph.ctrl0, ph.ctrl1, ph.prom0, ph.prom1, ph.cpu0, ph.cpu1 = from, to, ctrl0, ctrl1, prom0, prom1, cpu0, cpu1
	ph.touches, ph.dropped = touched1-touched0, dropped1-dropped0
	return ph, nil
}

// countRequests counts, from kube-apiserver's audit log, gray-controller's requests received in
// each phase's window, by verb and resource.
func countRequests(auditLog string, phases []phase) error {
	requests, err := readRequests(auditLog)
	if err != nil {
		return err
	}
	for i := range phases {
		ph := &phases[i]
		ph.requests = map[string]int{}
		for _, r := range requests {
			if strings.Contains(r.userAgent, "gray-controller/") && !r.received.Before(ph.from) && r.received.Before(ph.to) {
				ph.requests[r.verb+" "+r.resource]++
			}
		}
	}
	return nil
}

// delta is how much counter name (summed over the series carrying want) grew in ph.
func (ph phase) delta(fromProm bool, name string, want map[string]string) float64 {
	if fromProm {
		return ph.prom1.sum(name, want) - ph.prom0.sum(name, want)
	}
	return ph.ctrl1.sum(name, want) - ph.ctrl0.sum(name, want)
}

func (ph phase) seconds() float64 { return ph.to.Sub(ph.from).Seconds() }

// perSecond is delta over the phase's length.
func (ph phase) perSecond(fromProm bool, name string, want map[string]string) float64 {
	return ph.delta(fromProm, name, want) / ph.seconds()
}

func (ph phase) syncs() histogram {
	const name = "gray_controller_sync_duration_seconds"
	return ph.ctrl1.histogram(name, nil).since(ph.ctrl0.histogram(name, nil))
}

func (ph phase) queueWait() histogram {
	const name = "workqueue_queue_duration_seconds"
	want := map[string]string{"name": "deployment"}
	return ph.ctrl1.histogram(name, want).since(ph.ctrl0.histogram(name, want))
}

func (ph phase) queries() histogram {
	const name = "prometheus_http_request_duration_seconds"
	want := map[string]string{"handler": "/api/v1/query"}
	return ph.prom1.histogram(name, want).since(ph.prom0.histogram(name, want))
}

// print writes the table for BENCHMARKS.md: both phases side by side.
func (g gatesBench) print(phases []phase) {
	without, with := phases[0], phases[1]
	clock := func(t time.Time) string { return t.Format("15:04:05") }
	fmt.Printf("%d Deployments x %d replicas held at %d%%; gate %s on Prometheus every %v (count %d; provider from --prometheus-url: "+
		"concurrency 4, timeout 10s); every Deployment's label rewritten every %v in both phases; gray-controller --mode=instead, "+
		"%d workers, client QPS %d; each phase measured %v after a warm-up of %v (without gates %s-%s, with gates %s-%s)\n\n",
		g.deployments, g.replicas, g.percent, benchGate, g.interval, gates.MaxCount, g.touchEvery, g.workers, g.qps,
		g.duration, g.warmup, clock(without.from), clock(without.to), clock(with.from), clock(with.to))
	fmt.Println("| | without gates | with gates | with / without |")
	fmt.Println("| --- | --- | --- | --- |")
	row := func(name string, a, b float64, format string) {
		fmt.Printf("| %s | %s | %s | %s |\n", name, num(format, a), num(format, b), ratioOf(b, a))
	}
	quantiles := func(name string, h func(phase) histogram) {
		for _, q := range []struct {
			label string
			value func(histogram) float64
		}{{"p50", func(h histogram) float64 { return h.quantile(0.5) }}, {"p99", func(h histogram) float64 { return h.quantile(0.99) }},
			{"mean", histogram.mean}} {
			row(name+" "+q.label, 1000*q.value(h(without)), 1000*q.value(h(with)), "%.2f ms")
		}
	}
	perSecond := func(ph phase, n float64) float64 { return n / ph.seconds() }
	row("label touches by the bench, /s", perSecond(without, float64(without.touches)), perSecond(with, float64(with.touches)), "%.2f")
	row("syncs, /s", without.perSecond(false, "gray_controller_sync_total", nil), with.perSecond(false, "gray_controller_sync_total", nil), "%.2f")
	notDry := map[string]string{"dry_run": "false"}
	const measured = "gray_controller_gray_gate_measurements_total"
	row("gate measurements recorded, /s", without.perSecond(false, measured, notDry), with.perSecond(false, measured, notDry), "%.2f")
	query := map[string]string{"handler": "/api/v1/query"}
	row("Prometheus queries received, /s", without.perSecond(true, "prometheus_http_requests_total", query),
		with.perSecond(true, "prometheus_http_requests_total", query), "%.2f")
	// Prometheus' own histogram starts at 100 ms, where a gate's query takes a few: only its
	// mean (sum over count) says anything.
	row("Prometheus query duration mean", 1000*without.queries().mean(), 1000*with.queries().mean(), "%.2f ms")
	quantiles("sync duration", phase.syncs)
	quantiles("workqueue wait", phase.queueWait)
	row("gray-controller API requests, /s", perSecond(without, float64(total(without.requests))), perSecond(with, float64(total(with.requests))), "%.2f")
	for _, key := range requestKeys(phases) {
		row("&nbsp;&nbsp;"+key+", /s", perSecond(without, float64(without.requests[key])), perSecond(with, float64(with.requests[key])), "%.2f")
	}
	row("gray-controller CPU, s", without.cpu1-without.cpu0, with.cpu1-with.cpu0, "%.1f")
	row("gray-controller CPU, share of a core", (without.cpu1-without.cpu0)/without.seconds(), (with.cpu1-with.cpu0)/with.seconds(), "%.3f")
	row("gray-controller RSS at the end, MiB", float64(without.rssEnd)/1024, float64(with.rssEnd)/1024, "%.1f")
	row("gray-controller RSS peak, MiB", float64(without.rssPeak)/1024, float64(with.rssPeak)/1024, "%.1f")
	row("Prometheus CPU, s", without.delta(true, "process_cpu_seconds_total", nil), with.delta(true, "process_cpu_seconds_total", nil), "%.1f")
	row("Prometheus RSS at the end, MiB", without.prom1.sum("process_resident_memory_bytes", nil)/(1<<20),
		with.prom1.sum("process_resident_memory_bytes", nil)/(1<<20), "%.1f")

	fmt.Println()
	outcomes := []string{}
	for _, o := range []grayapi.GateOutcome{grayapi.GatePass, grayapi.GateFail, grayapi.GateInconclusive, grayapi.GateNoData, grayapi.GateError} {
		outcomes = append(outcomes, fmt.Sprintf("%s %.0f", o, with.delta(false, measured, map[string]string{"dry_run": "false", "outcome": string(o)})))
	}
	fmt.Printf("gate outcomes recorded with gates: %s\n", strings.Join(outcomes, ", "))
	theory := float64(g.deployments) / g.interval.Seconds()
	sent := with.perSecond(true, "prometheus_http_requests_total", query)
	fmt.Printf("queries: %.2f/s received of N/interval = %.2f/s (%.0f%%); the pool allows 4 at once, %.0f/s at the mean query duration\n",
		sent, theory, 100*sent/theory, 4/with.queries().mean())
	if m := with.perSecond(false, measured, notDry); m > 0 {
		extra := perSecond(with, float64(total(with.requests))) - perSecond(without, float64(total(without.requests)))
		fmt.Printf("gray-controller API requests added per measurement: %.2f\n", extra/m)
	}
	p99 := with.syncs().quantile(0.99) / without.syncs().quantile(0.99)
	verdict := "met"
	if !(p99 <= 1.1) {
		verdict = "MISSED"
	}
	fmt.Printf("sync duration p99 with / without gates: %.2f (goal <= 1.1: %s); workqueue wait p99: %s\n",
		p99, verdict, ratioOf(with.queueWait().quantile(0.99), without.queueWait().quantile(0.99)))
}

// num formats v, "-" when it is not a number (a quantile without observations).
func num(format string, v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "-"
	}
	return fmt.Sprintf(format, v)
}

// ratioOf is b/a for the table, "-" when a is 0 or either is not a number.
func ratioOf(b, a float64) string {
	r := b / a
	if a == 0 || math.IsNaN(r) || math.IsInf(r, 0) {
		return "-"
	}
	return fmt.Sprintf("%.2f", r)
}

func total(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// requestKeys are the verbs and resources of gray-controller's requests in any phase, the most
// frequent first.
func requestKeys(phases []phase) []string {
	most := map[string]int{}
	for _, ph := range phases {
		for k, v := range ph.requests {
			most[k] = max(most[k], v)
		}
	}
	keys := make([]string, 0, len(most))
	for k := range most {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		return most[keys[i]] > most[keys[j]] || most[keys[i]] == most[keys[j]] && keys[i] < keys[j]
	})
	return keys
}
