// Command cluster brings the local control plane up or down for a person:
// `cluster up DIR` starts it (the processes outlive this command) and prints
// the KUBECONFIG to export; `cluster down DIR` stops it by the recorded pids.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/kubegray/kubectl-gray/test/cluster"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "cluster:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) != 2 || (args[0] != "up" && args[0] != "down") {
		return fmt.Errorf("usage: cluster up|down DIR")
	}
	dir := args[1]
	if args[0] == "down" {
		c, err := cluster.Attach(dir)
		if err != nil {
			return err
		}
		if err := c.Stop(); err != nil {
			return err
		}
		if err := os.RemoveAll(dir); err != nil {
			return err
		}
		fmt.Printf("control plane in %s stopped\n", dir)
		return nil
	}
	if _, err := cluster.Attach(dir); err == nil {
		return fmt.Errorf("a control plane is already recorded in %s; run `make cluster-down` first", dir)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	began := time.Now()
	c, err := cluster.Start(ctx, cluster.Options{
		Controllers: os.Getenv("CONTROLLERS"),
		Dir:         dir,
	})
	if err != nil {
		return err
	}
	fmt.Printf("control plane ready in %v (logs in %s)\n", time.Since(began).Round(time.Millisecond), dir)
	for name, pid := range c.Processes() {
		fmt.Printf("  %-24s pid %d\n", name, pid)
	}
	fmt.Printf("\nexport KUBECONFIG=%s\n", c.Kubeconfig)
	return nil
}
