package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubegray/kubectl-gray/pkg/grayapi"
	"github.com/kubegray/kubectl-gray/pkg/rollout"
	"github.com/kubegray/kubectl-gray/test/cluster"
)

// seen is one watch event with the time this process received it.
type seen struct {
	at         time.Time
	deployment *appsv1.Deployment
	replicaSet *appsv1.ReplicaSet
}

// runGray is `bench gray`: many gray rollouts at once on a real control plane
// run by gray-controller in instead mode.
func runGray(args []string) error {
	fs := flag.NewFlagSet("gray", flag.ExitOnError)
	parsed := benchFlags(fs, 50, 10)
	percent := fs.Int("percent", 20, "hold point")
	qps := fs.Int("qps", 20, "gray-controller's --kube-api-qps (burst is 1.5x); 20 is its default and kube-controller-manager's")
	_ = fs.Parse(args)
	b := bench{workers: 5}
	if err := parsed(&b); err != nil {
		return err
	}
	ctx := context.Background()
	c, err := cluster.Start(ctx, cluster.Options{Controllers: cluster.WithoutDeploymentController, Nodes: 4, Audit: true})
	if err != nil {
		return err
	}
	defer func() {
		if err := c.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "bench: stop control plane:", err)
		}
	}()
	port, err := cluster.FreePort()
	if err != nil {
		return err
	}
	if err := startInstead(ctx, c, b.controller, b.workers, port, cluster.ClientRateFlags(*qps)...); err != nil {
		return err
	}
	client := c.Client
	hold := fmt.Sprint(*percent)
	if err := forAll(b.deployments, func(i int) error {
		d := b.deployment(i)
		d.Annotations = map[string]string{grayapi.PercentAnnotation: hold}
		_, err := client.AppsV1().Deployments("default").Create(ctx, d, metav1.CreateOptions{})
		return err
	}); err != nil {
		return err
	}
	if err := waitAllRolledOut(ctx, client, "default", b.deployments, 10*time.Minute); err != nil {
		return fmt.Errorf("initial rollout: %w", err)
	}

	var mu sync.Mutex
	var events []seen
	watchCtx, stopWatching := context.WithCancel(ctx)
	defer stopWatching()
	dw, err := client.AppsV1().Deployments("default").Watch(watchCtx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	rw, err := client.AppsV1().ReplicaSets("default").Watch(watchCtx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	for _, w := range []watch.Interface{dw, rw} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ev := range w.ResultChan() {
				s := seen{at: time.Now()}
				switch obj := ev.Object.(type) {
				case *appsv1.Deployment:
					s.deployment = obj
				case *appsv1.ReplicaSet:
					s.replicaSet = obj
				default:
					continue
				}
				mu.Lock()
				events = append(events, s)
				mu.Unlock()
			}
		}()
	}

	began := time.Now()
	if err := changeImages(ctx, client, "default", b.deployments); err != nil {
		return err
	}
	if err := waitAllHeld(ctx, c, "default", b.deployments, 10*time.Minute); err != nil {
		return err
	}
	stopWatching()
	dw.Stop()
	rw.Stop()
	wg.Wait()

	target := rollout.GrayTarget(b.replicas, int32(*percent))
	overshoot, writesAboveTarget := int32(0), 0
	for _, s := range events {
		rs := s.replicaSet
		if rs == nil {
			continue
		}
		if ref := metav1.GetControllerOf(rs); ref != nil && rs.Spec.Template.Spec.Containers[0].Image == newImage(ref.Name) {
			if over := *rs.Spec.Replicas - target; over > 0 {
				overshoot = max(overshoot, over)
				writesAboveTarget++
			}
		}
	}
	holdLatency, toPaused, toHeld, err := grayTimings(ctx, c, began, events)
	if err != nil {
		return err
	}

	fmt.Printf("%d gray Deployments x %d replicas held at %d%% (target %d), images changed at once; gray-controller --mode=instead, 5 workers, client QPS %d\n\n",
		b.deployments, b.replicas, *percent, target, *qps)
	fmt.Println("| measure | samples | p50 | p90 | max |")
	fmt.Println("| --- | --- | --- | --- | --- |")
	row := func(name string, d []time.Duration) {
		p50, p90, top := percentiles(d)
		fmt.Printf("| %s | %d | %s | %s | %s |\n", name, len(d), p50, p90, top)
	}
	row("hold latency: last write of the new ReplicaSet (reaching the target) → pause write (API server clock)", holdLatency)
	row("image change → pause write (API server clock)", toPaused)
	row("image change → phase Held seen by a watch (new pods available)", toHeld)
	fmt.Printf("\novershoot: %d (largest excess of a new ReplicaSet over its target across %d recorded ReplicaSet events; %d writes above target)\n",
		overshoot, len(events), writesAboveTarget)
	if overshoot > 0 {
		return fmt.Errorf("overshoot %d: a new ReplicaSet went above its target", overshoot)
	}
	return nil
}

func newImage(deployment string) string {
	var i int
	_, _ = fmt.Sscanf(deployment, "bench-%d", &i)
	return fmt.Sprintf("nginx:%d.2", i)
}

func waitAllHeld(ctx context.Context, c *cluster.Cluster, namespace string, n int, timeout time.Duration) error {
	return waitAll(ctx, c.Client, namespace, n, timeout, "held", func(d *appsv1.Deployment) bool {
		st, err := grayapi.ParseStatus(d.Annotations[grayapi.StatusAnnotation])
		return err == nil && st.Phase == grayapi.PhaseHeld
	})
}

// percentiles returns p50, p90 and max, rounded for the table.
func percentiles(d []time.Duration) (string, string, string) {
	if len(d) == 0 {
		return "-", "-", "-"
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	at := func(q float64) string { return d[int(q*float64(len(d)-1))].Round(time.Millisecond).String() }
	return at(0.5), at(0.9), at(1)
}

// grayTimings measures, per Deployment, from kube-apiserver's audit log (its
// own microsecond timestamps, so no watch delivery delay is included): the
// time between gray-controller's last write to the new ReplicaSet before the
// pause (the write that brought it to the target) and its write that paused
// the Deployment, and the time from the image change to that pause; and from
// the watch, when each Deployment reported phase Held.
func grayTimings(ctx context.Context, c *cluster.Cluster, began time.Time, events []seen) (holdLatency, toPaused, toHeld []time.Duration, err error) {
	replicaSets, err := c.Client.AppsV1().ReplicaSets("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, nil, nil, err
	}
	newRS := map[string]string{} // replicaset name → deployment
	for _, rs := range replicaSets.Items {
		if ref := metav1.GetControllerOf(&rs); ref != nil && rs.Spec.Template.Spec.Containers[0].Image == newImage(ref.Name) {
			newRS[rs.Name] = ref.Name
		}
	}
	writes, err := readAudit(c.AuditLog())
	if err != nil {
		return nil, nil, nil, err
	}
	lastNewWrite := map[string]time.Time{}
	paused := map[string]bool{}
	for _, w := range writes {
		if !strings.Contains(w.UserAgent, "gray-controller/") || w.at.Before(began) {
			continue
		}
		switch {
		case w.ObjectRef.Resource == "replicasets" && w.ObjectRef.Subresource == "" && newRS[w.ObjectRef.Name] != "":
			lastNewWrite[newRS[w.ObjectRef.Name]] = w.at
		case w.ObjectRef.Resource == "deployments" && w.ObjectRef.Subresource == "" && w.Verb == "update" && !paused[w.ObjectRef.Name]:
			// In instead mode the only main-resource update of a Deployment
			// during a rollout toward its first hold is the pause.
			paused[w.ObjectRef.Name] = true
			toPaused = append(toPaused, w.at.Sub(began))
			if reached, ok := lastNewWrite[w.ObjectRef.Name]; ok {
				holdLatency = append(holdLatency, w.at.Sub(reached))
			}
		}
	}
	heldAt := map[string]time.Time{}
	for _, s := range events {
		if d := s.deployment; d != nil {
			if st, err := grayapi.ParseStatus(d.Annotations[grayapi.StatusAnnotation]); err == nil && st.Phase == grayapi.PhaseHeld {
				if _, ok := heldAt[d.Name]; !ok {
					heldAt[d.Name] = s.at
					toHeld = append(toHeld, s.at.Sub(began))
				}
			}
		}
	}
	return holdLatency, toPaused, toHeld, nil
}
