package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/kubegray/kubectl-gray/test/cluster"
)

type bench struct {
	controller  string
	deployments int
	replicas    int32
	workers     int
}

// benchFlags registers the flags every bench command takes on fs, with the command's defaults;
// parsed fills b from them once fs is parsed, and fails without -controller.
func benchFlags(fs *flag.FlagSet, deployments, replicas int) (parsed func(b *bench) error) {
	controller := fs.String("controller", "", "path of the gray-controller binary (required)")
	count := fs.Int("deployments", deployments, "number of Deployments")
	perDeployment := fs.Int("replicas", replicas, "replicas per Deployment")
	return func(b *bench) error {
		if *controller == "" {
			return fmt.Errorf("-controller is required")
		}
		// Components run in the cluster folder, so a relative path would not resolve.
		path, err := filepath.Abs(*controller)
		if err != nil {
			return err
		}
		b.controller, b.deployments, b.replicas = path, *count, int32(*perDeployment)
		return nil
	}
}

type result struct {
	name   string
	wall   time.Duration
	writes writeCounts
}

func (b bench) run(ctx context.Context, ours bool) (result, error) {
	opts := cluster.Options{Audit: true, Nodes: 8}
	name, agent := "built-in deployment controller", "deployment-controller"
	if ours {
		name, agent = "gray-controller --mode=instead", "gray-controller/"
	} else if b.workers != 5 {
		return result{}, fmt.Errorf("the harness runs kube-controller-manager with its default of 5 deployment workers; use -workers=5")
	}
	c, stop, err := b.startControlPlane(ctx, opts, ours)
	if err != nil {
		return result{}, err
	}
	defer stop()

	client := c.Client
	if err := forAll(b.deployments, func(i int) error {
		_, err := client.AppsV1().Deployments("default").Create(ctx, b.deployment(i), metav1.CreateOptions{})
		return err
	}); err != nil {
		return result{}, err
	}
	if err := waitAllRolledOut(ctx, client, "default", b.deployments, 10*time.Minute); err != nil {
		return result{}, fmt.Errorf("%s: initial rollout: %w", name, err)
	}

	began := time.Now()
	if err := changeImages(ctx, client, "default", b.deployments); err != nil {
		return result{}, err
	}
	if err := waitAllRolledOut(ctx, client, "default", b.deployments, 10*time.Minute); err != nil {
		return result{}, fmt.Errorf("%s: rolling update: %w", name, err)
	}
	wall := time.Since(began)
	writes, err := countWrites(c.AuditLog(), began, agent)
	if err != nil {
		return result{}, err
	}
	return result{name: name, wall: wall, writes: writes}, nil
}

func deploymentName(i int) string { return fmt.Sprintf("bench-%03d", i) }

func (b bench) deployment(i int) *appsv1.Deployment {
	labels := map[string]string{"app": deploymentName(i)}
	surge, unavailable := intstr.FromString("25%"), intstr.FromString("25%")
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: deploymentName(i)},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(b.replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &surge, MaxUnavailable: &unavailable}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: fmt.Sprintf("nginx:%d.1", i)}}},
			},
		},
	}
}

// runRollout is `bench rollout`: built-in vs ours, side by side in one run.
func runRollout(args []string) error {
	fs := flag.NewFlagSet("rollout", flag.ExitOnError)
	parsed := benchFlags(fs, 100, 10)
	workers := fs.Int("workers", 5, "deployment workers for both controllers")
	_ = fs.Parse(args)
	b := bench{workers: *workers}
	if err := parsed(&b); err != nil {
		return err
	}
	var rows []result
	for _, ours := range []bool{false, true} {
		r, err := b.run(context.Background(), ours)
		if err != nil {
			return err
		}
		rows = append(rows, r)
	}
	fmt.Printf("%d Deployments x %d replicas, maxSurge 25%% / maxUnavailable 25%%, %d workers each\n\n", b.deployments, b.replicas, b.workers)
	fmt.Println("| controller | rollout wall time | API writes / rollout | RS writes / rollout | Deployment status writes / rollout | RS creates | RS deletes |")
	fmt.Println("| --- | --- | --- | --- | --- | --- | --- |")
	for _, r := range rows {
		n := float64(b.deployments)
		fmt.Printf("| %s | %.1f s | %.1f | %.1f | %.1f | %d | %d |\n", r.name, r.wall.Seconds(),
			float64(r.writes.total)/n, float64(r.writes.replicaSets)/n, float64(r.writes.deploymentStatus)/n,
			r.writes.creates, r.writes.deletes)
	}
	if len(rows) == 2 && rows[0].wall > 0 {
		fmt.Printf("\nratio ours/built-in: wall time %.2f, writes %.2f\n", rows[1].wall.Seconds()/rows[0].wall.Seconds(),
			float64(rows[1].writes.total)/float64(rows[0].writes.total))
	}
	return nil
}

// forAll runs f for 0..n-1 on 10 goroutines and returns the first error.
func forAll(n int, f func(int) error) error {
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	next := make(chan int)
	for w := 0; w < 10; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := f(i); err != nil {
					once.Do(func() { first = err })
				}
			}
		}()
	}
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	return first
}

// startControlPlane starts a control plane with opts: with kube-controller-manager's built-in
// deployment controller, or, for ours, without it and with gray-controller --mode=instead
// beside it, with the extra flags. stop ends it all.
func (b bench) startControlPlane(ctx context.Context, opts cluster.Options, ours bool, extra ...string) (c *cluster.Cluster, stop func(), err error) {
	if ours {
		opts.Controllers = cluster.WithoutDeploymentController
	}
	if c, err = cluster.Start(ctx, opts); err != nil {
		return nil, nil, err
	}
	stop = func() {
		if err := c.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "bench: stop control plane:", err)
		}
	}
	if ours {
		port, err := cluster.FreePort()
		if err == nil {
			err = startInstead(ctx, c, b.controller, b.workers, port, extra...)
		}
		if err != nil {
			stop()
			return nil, nil, err
		}
	}
	return c, stop, nil
}

// startInstead runs gray-controller --mode=instead beside c. Its metrics (off unless extra
// gives --metrics-bind-address) and pprof endpoints are plain HTTP on loopback
// (--metrics-secure=false): the benchmarks read them without a token, and the API server's
// token and access reviews that the secure endpoint makes are no part of what they measure.
func startInstead(ctx context.Context, c *cluster.Cluster, binary string, workers, port int, extra ...string) error {
	health := "127.0.0.1:" + strconv.Itoa(port)
	return c.StartComponent(ctx, "gray-controller", binary, "http://"+health+"/readyz",
		append([]string{"--kubeconfig=" + c.Kubeconfig, "--mode=instead", "--leader-elect=false",
			"--workers=" + strconv.Itoa(workers), "--metrics-bind-address=0", "--metrics-secure=false",
			"--health-probe-bind-address=" + health}, extra...)...)
}

// changeImages gives each of namespace's n Deployments a new image at once: every rollout starts.
func changeImages(ctx context.Context, client kubernetes.Interface, namespace string, n int) error {
	return forAll(n, func(i int) error { return changeImage(ctx, client, namespace, i) })
}

// changeImage gives namespace's Deployment i its new image.
func changeImage(ctx context.Context, client kubernetes.Interface, namespace string, i int) error {
	patch := fmt.Sprintf(`{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"nginx:%d.2"}]}}}}`, i)
	_, err := client.AppsV1().Deployments(namespace).Patch(ctx, deploymentName(i), "application/strategic-merge-patch+json", []byte(patch), metav1.PatchOptions{})
	return err
}

// waitAll polls until done holds for n Deployments of namespace.
func waitAll(ctx context.Context, client kubernetes.Interface, namespace string, n int, timeout time.Duration, what string, done func(*appsv1.Deployment) bool) error {
	err := cluster.Poll(ctx, timeout, 200*time.Millisecond, func(ctx context.Context) (bool, string, error) {
		list, err := client.AppsV1().Deployments(namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		count := 0
		for i := range list.Items {
			if done(&list.Items[i]) {
				count++
			}
		}
		return count == n, fmt.Sprintf("%d of %d Deployments %s", count, n, what), nil
	})
	if err != nil {
		return fmt.Errorf("waiting for %d Deployments of %s %s: %w", n, namespace, what, err)
	}
	return nil
}

func waitAllRolledOut(ctx context.Context, client kubernetes.Interface, namespace string, n int, timeout time.Duration) error {
	return waitAll(ctx, client, namespace, n, timeout, "rolled out", rolledOut)
}

// rolledOut reports whether d's controller has seen its spec and every
// replica runs the current template and is available, old ones gone.
func rolledOut(d *appsv1.Deployment) bool {
	s, want := d.Status, *d.Spec.Replicas
	return s.ObservedGeneration >= d.Generation && s.UpdatedReplicas == want && s.Replicas == want && s.AvailableReplicas == want
}

type writeCounts struct {
	total, replicaSets, deploymentStatus, creates, deletes int
}

// countWrites counts, in the audit log, the writes made since since by the
// client whose User-Agent contains agent.
func countWrites(path string, since time.Time, agent string) (writeCounts, error) {
	var w writeCounts
	writes, err := readAudit(path)
	if err != nil {
		return w, err
	}
	for _, ev := range writes {
		if ev.at.Before(since) || !strings.Contains(ev.UserAgent, agent) {
			continue
		}
		w.total++
		switch {
		case ev.ObjectRef.Resource == "replicasets":
			w.replicaSets++
			switch ev.Verb {
			case "create":
				w.creates++
			case "delete":
				w.deletes++
			}
		case ev.ObjectRef.Resource == "deployments" && ev.ObjectRef.Subresource == "status":
			w.deploymentStatus++
		}
	}
	return w, nil
}
