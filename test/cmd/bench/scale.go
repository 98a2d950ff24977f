package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubegray/kubectl-gray/pkg/grayapi"
	"github.com/kubegray/kubectl-gray/test/cluster"
)

// scale holds the settings of one `bench scale` (see runScale).
type scale struct {
	bench
	grayFraction   float64
	percent        int
	podsPerNode    int
	qps            int // every controller's client QPS; 0: their defaults
	heapProfile    string
	quiet, timeout time.Duration
}

type scaleResult struct {
	name            string
	rolledOut, held int
	nodes           int
	wall            time.Duration    // image change → last Deployment settled
	own             []time.Duration  // per Deployment: its own image change → settled, sorted
	sinceBegan      []time.Duration  // per Deployment: the first image change → settled, sorted
	rssEmpty        map[string]int64 // before the first Deployment is created
	rssSettled      map[string]int64
	rssPeak         map[string]int64
	requests        map[string]int // "verb resource" → requests by the controller during the rollout
	conflicts       map[string]int // the same, answered 409 Conflict
}

// gray reports whether Deployment i carries the percent annotation: i's
// share of the fraction crosses a whole number, so the gray ones are evenly
// spread and number floor(n × fraction).
func (s scale) gray(i int) bool {
	return int(float64(i+1)*s.grayFraction) > int(float64(i)*s.grayFraction)
}

func (s scale) run(ctx context.Context, ours bool) (scaleResult, error) {
	// Room for every Deployment at its surge (maxSurge 25% rounds up) plus a
	// quarter for pods still terminating, which the scheduler counts.
	pods := s.deployments * int(s.replicas+(s.replicas+3)/4)
	nodes := max(2, (pods*5/4+s.podsPerNode-1)/s.podsPerNode)
	opts := cluster.Options{Audit: true, AuditReads: true, Nodes: nodes, PodsPerNode: s.podsPerNode, ClientQPS: s.qps}
	r := scaleResult{name: "built-in deployment controller", nodes: nodes}
	agent, components := "deployment-controller", []string{"kube-controller-manager"}
	if ours {
		r.name, agent = "gray-controller --mode=instead", "gray-controller/"
		components = append(components, "gray-controller")
	}
	fmt.Fprintf(os.Stderr, "bench: %s: starting a control plane with %d kwok nodes\n", r.name, nodes)
	var extra []string
	if ours && s.qps > 0 {
		extra = append(extra, cluster.ClientRateFlags(s.qps)...)
	}
	pprof := ""
	if ours && s.heapProfile != "" {
		port, err := cluster.FreePort()
		if err != nil {
			return r, err
		}
		pprof = fmt.Sprintf("127.0.0.1:%d", port)
		extra = append(extra, "--pprof-bind-address="+pprof)
	}
	c, stop, err := s.startControlPlane(ctx, opts, ours, extra...)
	if err != nil {
		return r, err
	}
	defer stop()
	pids := map[string]int{}
	for _, name := range components {
		pid, ok := c.Processes()[name]
		if !ok {
			return r, fmt.Errorf("no %s process", name)
		}
		pids[name] = pid
	}
	rss := sampleRSS(pids, 500*time.Millisecond)
	defer rss.close()

	// The harness client's 100 QPS would spread 2,000 image changes over 20 s.
	config := rest.CopyConfig(c.Config)
	config.QPS, config.Burst = 1000, 1000
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return r, err
	}

	w, err := watchSettled(ctx, client, s.deployments, rolledOut)
	if err != nil {
		return r, err
	}
	r.rssEmpty = rss.take().kb
	fmt.Fprintf(os.Stderr, "bench: %s: creating %d Deployments\n", r.name, s.deployments)
	if err := forAll(s.deployments, func(i int) error {
		d := s.deployment(i)
		if s.gray(i) {
			d.Annotations = map[string]string{grayapi.PercentAnnotation: fmt.Sprint(s.percent)}
		}
		_, err := client.AppsV1().Deployments("default").Create(ctx, d, metav1.CreateOptions{})
		return err
	}); err != nil {
		return r, err
	}
	created, err := w.wait(s.timeout, "rolled out")
	if err != nil {
		return r, fmt.Errorf("%s: initial rollout: %w", r.name, err)
	}
	time.Sleep(time.Until(latest(created).Add(s.quiet)))
	r.rssSettled = rss.take().kb
	if pprof != "" {
		if err := saveHeapProfile(ctx, pprof, s.heapProfile); err != nil {
			return r, err
		}
	}

	index := map[string]int{}
	for i := range s.deployments {
		index[deploymentName(i)] = i
	}
	w, err = watchSettled(ctx, client, s.deployments, func(d *appsv1.Deployment) bool {
		if d.Spec.Template.Spec.Containers[0].Image != newImage(d.Name) {
			return false // not changed yet: its old rollout does not count
		}
		if ours && s.gray(index[d.Name]) {
			st, err := grayapi.ParseStatus(d.Annotations[grayapi.StatusAnnotation])
			return d.Spec.Paused && err == nil && st.Phase == grayapi.PhaseHeld
		}
		return rolledOut(d)
	})
	if err != nil {
		return r, err
	}
	fmt.Fprintf(os.Stderr, "bench: %s: changing %d images\n", r.name, s.deployments)
	changed := make([]time.Time, s.deployments)
	began := time.Now()
	if err := forAll(s.deployments, func(i int) error {
		changed[i] = time.Now()
		return changeImage(ctx, client, "default", i)
	}); err != nil {
		return r, err
	}
	settledAt, err := w.wait(s.timeout, "settled")
	if err != nil {
		return r, fmt.Errorf("%s: rollout: %w", r.name, err)
	}
	end := latest(settledAt)
	r.rssPeak = rss.peak(began, end)
	r.wall = end.Sub(began)
	for name, at := range settledAt {
		r.own = append(r.own, at.Sub(changed[index[name]]))
		r.sinceBegan = append(r.sinceBegan, at.Sub(began))
		if ours && s.gray(index[name]) {
			r.held++
		} else {
			r.rolledOut++
		}
	}
	sortDurations(r.own)
	sortDurations(r.sinceBegan)

	// The window is the rollout's own: requests received from the first
	// image change until the last Deployment settled.
	requests, err := readRequests(c.AuditLog())
	if err != nil {
		return r, err
	}
	r.requests, r.conflicts = map[string]int{}, map[string]int{}
	for _, q := range requests {
		if q.received.Before(began) || q.received.After(end) || !strings.Contains(q.userAgent, agent) {
			continue
		}
		key := q.verb + " " + q.resource
		if q.resource == "" {
			key = q.verb + " (non-resource)"
		}
		r.requests[key]++
		if q.code == 409 {
			r.conflicts[key]++
		}
	}
	return r, nil
}

func latest(at map[string]time.Time) time.Time {
	var last time.Time
	for _, t := range at {
		if t.After(last) {
			last = t
		}
	}
	return last
}

// runScale is `bench scale`: many Deployments rolled at once by the built-in
// controller, then by gray-controller --mode=instead (5 workers and client
// QPS 20 each, both defaults), each on a control plane of its own with
// enough kwok nodes, measuring the controller processes' memory, their API
// requests (from an audit log that records reads too) and settle times.
//
// Both runs create the same Deployments: a -gray-fraction of them, spread
// evenly over the indices, carry kubegray.io/percent. The built-in controller
// ignores the annotation and rolls every one out fully; gray-controller holds
// the annotated ones at -percent (paused, status phase Held), and that is
// where they count as settled. So the two runs do different work unless
// -gray-fraction=0, which compares plain rollouts like for like; the settled
// counts in the first table say what each controller did.
//
// At the default 2,000 x 10 each run takes the better part of an hour: both
// controllers are bound by their client's 20 requests a second. -controllers
// runs one side alone, and -qps raises every controller's client rate (the
// replicaset controller's and kube-scheduler's too, which create and bind the
// pods): what a memory measurement at tens of thousands of pods needs.
func runScale(args []string) error {
	fs := flag.NewFlagSet("scale", flag.ExitOnError)
	parsed := benchFlags(fs, 2000, 10)
	grayFraction := fs.Float64("gray-fraction", 0.5, "fraction of the Deployments annotated to hold at -percent (gray-controller holds them; the built-in rolls them out)")
	percent := fs.Int("percent", 20, "hold point of the annotated Deployments")
	podsPerNode := fs.Int("pods-per-node", 250, "pod capacity of each kwok node; the node count follows")
	quiet := fs.Duration("quiet", 10*time.Second, "wait after the initial rollout settles before taking the settled RSS")
	timeout := fs.Duration("timeout", 2*time.Hour, "limit of each wait (initial rollout, rollout)")
	heapProfile := fs.String("heap-profile", "", "file to save gray-controller's heap profile to, taken when the RSS settled is (go tool pprof reads it)")
	controllers := fs.String("controllers", "both", "which deployment controllers to run: both (side by side, with ratios), built-in or ours")
	qps := fs.Int("qps", 0, "client QPS of kube-controller-manager, kube-scheduler and gray-controller (burst 1.5x); "+
		"0 keeps their defaults: 20 for both deployment controllers, 50 for kube-scheduler")
	_ = fs.Parse(args)
	s := scale{bench: bench{workers: 5}, grayFraction: *grayFraction, percent: *percent, podsPerNode: *podsPerNode,
		qps: *qps, quiet: *quiet, timeout: *timeout, heapProfile: *heapProfile}
	if err := parsed(&s.bench); err != nil {
		return err
	}
	if s.grayFraction < 0 || s.grayFraction > 1 || s.podsPerNode < 1 || s.deployments < 1 || s.qps < 0 {
		return fmt.Errorf("need 0 <= -gray-fraction <= 1, -pods-per-node >= 1, -deployments >= 1 and -qps >= 0")
	}
	sides := map[string][]bool{"both": {false, true}, "built-in": {false}, "ours": {true}}[*controllers]
	if sides == nil {
		return fmt.Errorf("invalid -controllers %q: want both, built-in or ours", *controllers)
	}
	var rows []scaleResult
	for _, ours := range sides {
		r, err := s.run(context.Background(), ours)
		if err != nil {
			return err
		}
		rows = append(rows, r)
	}
	s.print(rows)
	return nil
}

func (s scale) print(rows []scaleResult) {
	grays := 0
	for i := range s.deployments {
		if s.gray(i) {
			grays++
		}
	}
	n := float64(s.deployments)
	qps := "client QPS 20 each (kube-scheduler 50)"
	if s.qps > 0 {
		qps = fmt.Sprintf("client QPS %d each (kube-scheduler's too)", s.qps)
	}
	fmt.Printf("%d Deployments x %d replicas, %d of them annotated %s=%d, maxSurge 25%% / maxUnavailable 25%%, "+
		"5 workers and %s, %d kwok nodes x %d pods\n\n",
		s.deployments, s.replicas, grays, grayapi.PercentAnnotation, s.percent, qps, rows[0].nodes, s.podsPerNode)

	fmt.Println("| controller | settled | time to settle | per Deployment p10 | p50 | p90 | p99 | max | settled by 25% / 50% / 75% of the time |")
	fmt.Println("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
	ms := func(d time.Duration) string { return d.Round(time.Millisecond).String() }
	for _, r := range rows {
		by := make([]string, 0, 3)
		for _, q := range []float64{0.25, 0.5, 0.75} {
			cut := time.Duration(q * float64(r.wall))
			by = append(by, fmt.Sprint(sort.Search(len(r.sinceBegan), func(i int) bool { return r.sinceBegan[i] > cut })))
		}
		fmt.Printf("| %s | %d rolled out, %d held | %.1f s | %s | %s | %s | %s | %s | %s |\n", r.name, r.rolledOut, r.held,
			r.wall.Seconds(), ms(quantile(r.own, 0.1)), ms(quantile(r.own, 0.5)), ms(quantile(r.own, 0.9)),
			ms(quantile(r.own, 0.99)), ms(quantile(r.own, 1)), strings.Join(by, " / "))
	}

	pods := int64(s.deployments) * int64(s.replicas)
	fmt.Println("\n| controller | kube-controller-manager RSS empty | settled | peak | gray-controller RSS empty | settled | peak | sum settled | sum peak |")
	fmt.Println("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
	for _, r := range rows {
		cells := []string{r.name}
		var sumSettled, sumPeak int64
		for _, name := range []string{"kube-controller-manager", "gray-controller"} {
			empty, okEmpty := r.rssEmpty[name]
			settled, ok := r.rssSettled[name]
			peak, okPeak := r.rssPeak[name]
			sumSettled, sumPeak = sumSettled+settled, sumPeak+peak
			cells = append(cells, mib(empty, okEmpty), mib(settled, ok), mib(peak, okPeak))
		}
		cells = append(cells, mib(sumSettled, true), mib(sumPeak, true))
		fmt.Printf("| %s |\n", strings.Join(cells, " | "))
	}
	// What each pod (with its share of ReplicaSets and Deployments) costs the deployment
	// controller's process: settled minus empty, over the pods.
	for _, r := range rows {
		name := "kube-controller-manager"
		if _, ours := r.rssSettled["gray-controller"]; ours {
			name = "gray-controller"
		}
		fmt.Printf("\n%s: %s RSS per pod settled %.2f KiB, at its peak %.2f KiB", r.name, name,
			float64(r.rssSettled[name]-r.rssEmpty[name])/float64(pods), float64(r.rssPeak[name]-r.rssEmpty[name])/float64(pods))
	}
	fmt.Println()

	printRequests(rows, n)
	if len(rows) == 2 {
		built, _ := rows[0].total()
		ours, _ := rows[1].total()
		fmt.Printf("\nratio ours/built-in: time to settle %s, API requests per rollout %s, p50 settle %s\n",
			ratio(rows[1].wall.Seconds(), rows[0].wall.Seconds()), ratio(float64(ours), float64(built)),
			ratio(quantile(rows[1].own, 0.5).Seconds(), quantile(rows[0].own, 0.5).Seconds()))
	}
	fmt.Println("\nThe built-in controller's list and watch go through kube-controller-manager's shared informers " +
		"(user agent .../shared-informers, shared with every other controller) and are not counted; gray-controller's are.")
}

// total is the run's requests and 409 Conflicts of every verb and resource.
func (r scaleResult) total() (requests, conflicts int) {
	for k, v := range r.requests {
		requests, conflicts = requests+v, conflicts+r.conflicts[k]
	}
	return requests, conflicts
}

// printRequests prints each run's requests per rollout by verb and resource, the ratio
// ours/built-in when both ran, and each run's 409 Conflicts.
func printRequests(rows []scaleResult, n float64) {
	head := []string{"API requests per rollout (image change → all settled)"}
	for _, r := range rows {
		head = append(head, r.name)
	}
	if len(rows) == 2 {
		head = append(head, "ours/built-in")
	}
	for _, r := range rows {
		head = append(head, "409 Conflict, "+r.name)
	}
	fmt.Println("\n| " + strings.Join(head, " | ") + " |")
	fmt.Println(strings.Repeat("| --- ", len(head)) + "|")

	line := func(name string, count func(scaleResult) (requests, conflicts int)) {
		requests, conflicts := make([]int, len(rows)), make([]int, len(rows))
		cells := []string{name}
		for i, r := range rows {
			requests[i], conflicts[i] = count(r)
			cells = append(cells, fmt.Sprintf("%.2f", float64(requests[i])/n))
		}
		if len(rows) == 2 {
			cells = append(cells, ratio(float64(requests[1]), float64(requests[0])))
		}
		for _, c := range conflicts {
			cells = append(cells, fmt.Sprint(c))
		}
		fmt.Println("| " + strings.Join(cells, " | ") + " |")
	}
	keys := map[string]bool{}
	for _, r := range rows {
		for k := range r.requests {
			keys[k] = true
		}
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	for _, k := range sorted {
		line(k, func(r scaleResult) (int, int) { return r.requests[k], r.conflicts[k] })
	}
	line("**total**", scaleResult.total)
}

func ratio(a, b float64) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", a/b)
}

// saveHeapProfile saves the heap profile gray-controller serves on address (--pprof-bind-address)
// to path.
func saveHeapProfile(ctx context.Context, address, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+address+"/debug/pprof/heap", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("heap profile: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("heap profile: GET %s: %s", req.URL, resp.Status)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("heap profile: %w", err)
	}
	return os.WriteFile(path, body, 0o644)
}
