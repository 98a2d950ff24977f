package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegray/kubectl-gray/pkg/gates"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
	"github.com/kubegray/kubectl-gray/test/cluster"
)

// `bench gates-fairness`: whether one namespace's slow gates delay another namespace's
// measurements (issue 49: by no more than one interval). A quiet namespace's held Deployments,
// each with a gate every -interval, are measured twice in one run, on one control plane and one
// gray-controller: first alone, then beside a noisy namespace whose gates name the same provider
// at the same interval and whose every query takes -noisy-answer. The provider is the one
// --prometheus-url gives (its defaults: 4 slots, a timeout of 10 s that covers the wait for a
// slot, minInterval 10 s), pointed at a stand-in (slowprom.go) that is slow for the noisy
// namespace only.
//
// Alone first, for the reason `bench gates` measures without gates first: the noisy phase
// leaves its records and its waiting measurements behind. Both phases have the noisy
// Deployments held; only their gate is added between them.
//
// The delay is read from the quiet Deployments' gate records (gaterecords.go): from when a
// measurement was due (the record before it says) to when gray-controller took it (its own
// record's `at`), and to when the bench's watch saw it recorded. gray-controller's provider
// metrics have no namespace label (providers are a handful, namespaces are not), so they cannot
// tell the quiet namespace's wait from the noisy one's; the records can.

const quietNamespace, noisyNamespace = "quiet", "noisy"

// providerTimeout is the timeout of the provider --prometheus-url gives: the longest a
// measurement waits for a slot and an answer together.
const providerTimeout = 10 * time.Second

type fairnessBench struct {
	bench
	noisy                                   int
	interval, noisyAnswer, duration, warmup time.Duration
	percent                                 int
}

// runGatesFairness is `bench gates-fairness`.
func runGatesFairness(args []string) error {
	fs := flag.NewFlagSet("gates-fairness", flag.ExitOnError)
	parsed := benchFlags(fs, 10, 2) // -deployments: the quiet namespace's
	noisy := fs.Int("noisy-deployments", 20, "held Deployments of the noisy namespace")
	interval := fs.Duration("interval", 10*time.Second, "every gate's interval, quiet and noisy (the provider's minInterval is 10s)")
	noisyAnswer := fs.Duration("noisy-answer", 8*time.Second, "how long the provider takes to answer each query of the noisy namespace (the quiet one's at once)")
	duration := fs.Duration("duration", 3*time.Minute, "measured length of each phase (after its warm-up)")
	percent := fs.Int("percent", 50, "hold point (the canary's share)")
	_ = fs.Parse(args)
	f := fairnessBench{bench: bench{workers: 5}, noisy: *noisy, interval: *interval, noisyAnswer: *noisyAnswer, duration: *duration, percent: *percent}
	if err := parsed(&f.bench); err != nil {
		return err
	}
	if f.interval < 10*time.Second || f.deployments < 1 || f.noisy < 1 || f.noisyAnswer <= 0 || f.percent < 1 || f.percent > 99 {
		return fmt.Errorf("need -interval >= 10s (the provider's minInterval), -deployments >= 1, -noisy-deployments >= 1, -noisy-answer > 0 and 1 <= -percent <= 99")
	}
	// Long enough for every gate to come round once, and for the noisy measurements to have
	// waited out a timeout (the longest a wait lasts), before a phase's window opens.
	f.warmup = f.interval + providerTimeout + 5*time.Second
	// The quiet gates measure through both phases: they must not reach their count (or their
	// inconclusiveLimit) before the second ends. The minute is for opening the noisy windows.
	if longest := time.Duration(gates.MaxCount) * f.interval; 2*(f.interval+f.warmup+f.duration)+time.Minute >= longest {
		return fmt.Errorf("-duration %v: the quiet gates would reach their count (%d x %v) before the second phase ends", f.duration, gates.MaxCount, f.interval)
	}
	return f.run(context.Background())
}

// fairnessPhase is one phase's window.
type fairnessPhase struct {
	from, to time.Time
	// noisyQueries is how many queries of the noisy namespace the provider received in it, and
	// noisyAbandoned how many of those gray-controller gave up on before the answer.
	noisyQueries, noisyAbandoned int
}

func (f fairnessBench) run(ctx context.Context) error {
	nodes := max(2, (f.deployments+f.noisy)*int(f.replicas)*2/250+1)
	fmt.Fprintf(os.Stderr, "bench: starting a control plane with %d kwok nodes\n", nodes)
	c, err := cluster.Start(ctx, cluster.Options{Controllers: cluster.WithoutDeploymentController, Nodes: nodes})
	if err != nil {
		return err
	}
	defer func() {
		if err := c.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "bench: stop control plane:", err)
		}
	}()
	provider, err := startSlowProm(noisyNamespace, f.noisyAnswer)
	if err != nil {
		return err
	}
	defer provider.close()
	port, err := cluster.FreePort()
	if err != nil {
		return err
	}
	if err := startInstead(ctx, c, f.controller, f.workers, port, "--prometheus-url="+provider.url); err != nil {
		return err
	}
	client := c.Client
	for _, ns := range []struct {
		name string
		n    int
	}{{quietNamespace, f.deployments}, {noisyNamespace, f.noisy}} {
		if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns.name}}, metav1.CreateOptions{}); err != nil {
			return err
		}
		if err := defineGate(ctx, client, ns.name, f.interval); err != nil {
			return err
		}
		if err := holdDeployments(ctx, c, f.bench, ns.name, ns.n, f.percent); err != nil {
			return err
		}
	}
	records, err := watchGateRecords(ctx, client, benchGate, quietNamespace, noisyNamespace)
	if err != nil {
		return err
	}
	defer records.close()

	if err := nameGate(ctx, client, quietNamespace, f.deployments, benchGate, f.interval); err != nil {
		return err
	}
	var phases []fairnessPhase
	for _, noisy := range []bool{false, true} {
		name := "alone"
		if noisy {
			name = "beside the noisy one"
			if err := nameGate(ctx, client, noisyNamespace, f.noisy, benchGate, f.interval); err != nil {
				return err
			}
		}
		fmt.Fprintf(os.Stderr, "bench: quiet namespace %s: warming up %v, then measuring %v\n", name, f.warmup, f.duration)
		time.Sleep(f.warmup)
		ph := fairnessPhase{from: time.Now()}
		received, abandoned := provider.queries(noisyNamespace)
		time.Sleep(f.duration)
		ph.to = time.Now()
		ph.noisyQueries, ph.noisyAbandoned = provider.queries(noisyNamespace)
		ph.noisyQueries, ph.noisyAbandoned = ph.noisyQueries-received, ph.noisyAbandoned-abandoned
		phases = append(phases, ph)
	}
	// What was due before a window closed may be recorded after it.
	time.Sleep(providerTimeout + 2*time.Second)
	return f.print(records, phases)
}

// print writes the table for BENCHMARKS.md, both phases side by side, and fails when a phase
// saw no quiet measurement (nothing was measured) or the noisy phase no noisy query (nothing
// was in the quiet namespace's way).
func (f fairnessBench) print(records *gateRecords, phases []fairnessPhase) error {
	alone, beside := phases[0], phases[1]
	clock := func(t time.Time) string { return t.Format("15:04:05") }
	fmt.Printf("quiet namespace: %d Deployments x %d replicas held at %d%%, gate %s every %v; noisy namespace: %d such Deployments, "+
		"their gate (the same provider, the same interval) added for the second phase, each query answered after %v; "+
		"provider from --prometheus-url (4 slots, a namespace at most 2, timeout %v waiting included); gray-controller --mode=instead, %d workers; "+
		"each phase measured %v after a warm-up of %v (alone %s-%s, beside the noisy one %s-%s)\n\n",
		f.deployments, f.replicas, f.percent, benchGate, f.interval, f.noisy, f.noisyAnswer, providerTimeout, f.workers,
		f.duration, f.warmup, clock(alone.from), clock(alone.to), clock(beside.from), clock(beside.to))

	var quiet, noisy [2][]measured
	missed := 0
	for i, ph := range phases {
		quiet[i], missed = records.due(quietNamespace, ph.from, ph.to)
		noisy[i], _ = records.due(noisyNamespace, ph.from, ph.to)
	}
	fmt.Println("| | alone | beside the noisy one |")
	fmt.Println("| --- | --- | --- |")
	row := func(name string, cell func(i int) string) { fmt.Printf("| %s | %s | %s |\n", name, cell(0), cell(1)) }
	row("quiet measurements due in the window", func(i int) string { return fmt.Sprint(len(quiet[i])) })
	delays := [2]map[string][]time.Duration{}
	for i := range quiet {
		delays[i] = map[string][]time.Duration{}
		for _, m := range quiet[i] {
			delays[i]["taken"] = append(delays[i]["taken"], m.at.Sub(m.due))
			delays[i]["recorded"] = append(delays[i]["recorded"], m.seen.Sub(m.due))
		}
		sortDurations(delays[i]["taken"])
		sortDurations(delays[i]["recorded"])
	}
	at := func(d []time.Duration, q float64) string {
		if len(d) == 0 {
			return "-"
		}
		return fmt.Sprintf("%.1f ms", float64(quantile(d, q))/float64(time.Millisecond))
	}
	for _, what := range []string{"taken", "recorded"} {
		for _, q := range []struct {
			label string
			q     float64
		}{{"p50", 0.5}, {"p99", 0.99}, {"max", 1}} {
			row(fmt.Sprintf("quiet: due → %s, %s", what, q.label), func(i int) string { return at(delays[i][what], q.q) })
		}
	}
	row("quiet outcomes", func(i int) string { return outcomeCounts(quiet[i]) })
	row("noisy measurements due in the window", func(i int) string { return fmt.Sprint(len(noisy[i])) })
	row("noisy outcomes", func(i int) string { return outcomeCounts(noisy[i]) })
	row("noisy queries the provider received", func(i int) string { return fmt.Sprint(phases[i].noisyQueries) })
	row("&nbsp;&nbsp;given up by gray-controller before the answer", func(i int) string { return fmt.Sprint(phases[i].noisyAbandoned) })
	fmt.Println()
	fmt.Printf("noisy measurements beside the quiet ones, why: %s\n", reasons(noisy[1]))
	if missed > 0 {
		fmt.Printf("measurements recorded between two writes the watch saw (left out): %d\n", missed)
	}
	if len(delays[0]["taken"]) == 0 || len(delays[1]["taken"]) == 0 {
		return fmt.Errorf("a phase recorded no quiet measurement: nothing to compare")
	}
	worse := quantile(delays[1]["taken"], 0.99) - quantile(delays[0]["taken"], 0.99)
	verdict := "met"
	if worse > f.interval {
		verdict = "MISSED"
	}
	fmt.Printf("quiet due → taken p99, beside the noisy one less alone: %v (goal <= one interval, %v: %s)\n", worse.Round(time.Millisecond), f.interval, verdict)
	if beside.noisyQueries == 0 {
		return fmt.Errorf("the provider received no query of the noisy namespace: nothing was in the quiet one's way")
	}
	return nil
}

// outcomeCounts is "Pass 3, Inconclusive 2 (provider busy 2)": the outcomes of ms, in the
// order docs/gates.md lists them, and how many were a provider's busy slots.
func outcomeCounts(ms []measured) string {
	if len(ms) == 0 {
		return "-"
	}
	count, busy := map[grayapi.GateOutcome]int{}, 0
	for _, m := range ms {
		count[m.outcome]++
		if strings.HasPrefix(m.why, "provider busy") {
			busy++
		}
	}
	var parts []string
	for _, o := range []grayapi.GateOutcome{grayapi.GatePass, grayapi.GateFail, grayapi.GateInconclusive, grayapi.GateNoData, grayapi.GateError} {
		if count[o] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", o, count[o]))
		}
	}
	return fmt.Sprintf("%s (provider busy %d)", strings.Join(parts, ", "), busy)
}

// urlInWhy is a quoted URL in a why, to its closing quote or the end of a why cut short.
var urlInWhy = regexp.MustCompile(`"https?://[^"]*("|$)`)

// reasons is the distinct whys of ms that were not a Pass, with their counts, the most frequent
// first: what a slow provider made of them. A why is shortened to what does not change from one
// measurement to the next: "provider busy" without the namespace and timeout, an error without
// the request's URL (which names each Deployment's pods, and may be all the status kept of it).
func reasons(ms []measured) string {
	count := map[string]int{}
	for _, m := range ms {
		if m.outcome == grayapi.GatePass {
			continue
		}
		why := m.why
		if strings.HasPrefix(why, "provider busy") {
			why = "provider busy"
		}
		why = urlInWhy.ReplaceAllString(why, "<url>")
		count[string(m.outcome)+": "+why]++
	}
	if len(count) == 0 {
		return "-"
	}
	keys := make([]string, 0, len(count))
	for k := range count {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		return count[keys[i]] > count[keys[j]] || count[keys[i]] == count[keys[j]] && keys[i] < keys[j]
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%d x %q", count[k], k)
	}
	return strings.Join(parts, "; ")
}
