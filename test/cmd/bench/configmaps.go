package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegray/kubectl-gray/pkg/grayapi"
	"github.com/kubegray/kubectl-gray/test/cluster"
)

// `bench configmaps`: what tenants' labelled ConfigMaps cost gray-controller's memory. One control
// plane holds -configmaps ConfigMaps labelled kubegray.io/gates=true, spread over -namespaces
// namespaces, each with -size bytes of data in four keys (definitions far over their bound, as a
// hostile tenant would write them); -baseline (gray-controller built before its caches were
// bounded) and -controller run one after the other against them, and each one's RSS is read once
// its caches have synced and -settle has passed, with its peak (VmHWM) since it started.

// chartMemoryLimit is the chart's memory limit of gray-controller (charts/*/values.yaml).
const chartMemoryLimit = 256

func runConfigMaps(args []string) error {
	fs := flag.NewFlagSet("configmaps", flag.ExitOnError)
	controller := fs.String("controller", "", "path of the gray-controller binary under test (required)")
	baseline := fs.String("baseline", "", "path of a gray-controller binary to compare with (optional)")
	count := fs.Int("configmaps", 1000, "labelled ConfigMaps")
	namespaces := fs.Int("namespaces", 10, "namespaces they are spread over")
	size := fs.Int("size", 256<<10, "bytes of data per ConfigMap")
	settle := fs.Duration("settle", 20*time.Second, "time after ready before RSS is read")
	_ = fs.Parse(args)
	if *controller == "" || *count < 1 || *namespaces < 1 || *size < 4 {
		return fmt.Errorf("need -controller, -configmaps >= 1, -namespaces >= 1, -size >= 4")
	}
	ctx := context.Background()
	c, err := cluster.Start(ctx, cluster.Options{Controllers: cluster.WithoutDeploymentController, Nodes: 1})
	if err != nil {
		return err
	}
	defer func() {
		if err := c.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "bench: stop control plane:", err)
		}
	}()
	fmt.Fprintf(os.Stderr, "bench: creating %d ConfigMaps of %d bytes in %d namespaces\n", *count, *size, *namespaces)
	for n := range *namespaces {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("tenant-%d", n)}}
		if _, err := c.Client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	value := strings.Repeat("x", *size/4)
	if err := forAll(*count, func(i int) error {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("gates-%d", i), Namespace: fmt.Sprintf("tenant-%d", i%*namespaces),
			Labels: map[string]string{grayapi.GatesLabel: grayapi.GatesLabelValue}},
			Data: map[string]string{"a": value, "b": value, "c": value, "d": value}}
		_, err := c.Client.CoreV1().ConfigMaps(cm.Namespace).Create(ctx, cm, metav1.CreateOptions{})
		return err
	}); err != nil {
		return err
	}
	type run struct {
		name         string
		settled, hwm int64
	}
	var runs []run
	for _, r := range []struct{ name, binary string }{{"before", *baseline}, {"bounded", *controller}} {
		if r.binary == "" {
			continue
		}
		ports, err := cluster.FreePorts(1)
		if err != nil {
			return err
		}
		// Components run in the cluster folder, so a relative path would not resolve.
		binary, err := filepath.Abs(r.binary)
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "bench: %s: starting %s\n", r.name, binary)
		if err := startInstead(ctx, c, binary, 5, ports[0]); err != nil {
			return err
		}
		pid := c.Processes()["gray-controller"]
		time.Sleep(*settle)
		settled, err := readRSS(pid)
		if err != nil {
			return err
		}
		hwm, err := readStatusKB(pid, "VmHWM")
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "bench: %s: RSS %d KiB settled, %d KiB peak\n", r.name, settled, hwm)
		runs = append(runs, run{r.name, settled, hwm})
		if err := c.StopComponent("gray-controller", 10*time.Second); err != nil {
			return err
		}
	}
	fmt.Printf("%d ConfigMaps labelled %s=%s in %d namespaces, %d KiB of data each (%d MiB in all), four keys; gray-controller --mode=instead, "+
		"RSS %v after ready; the chart's memory limit is %d MiB\n\n", *count, grayapi.GatesLabel, grayapi.GatesLabelValue, *namespaces, *size>>10,
		*count**size>>20, *settle, chartMemoryLimit)
	fmt.Println("| gray-controller | RSS settled, MiB | RSS peak (VmHWM), MiB | peak within the limit |")
	fmt.Println("| --- | --- | --- | --- |")
	for _, r := range runs {
		fmt.Printf("| %s | %.0f | %.0f | %t |\n", r.name, float64(r.settled)/1024, float64(r.hwm)/1024, r.hwm/1024 < chartMemoryLimit)
	}
	return nil
}
