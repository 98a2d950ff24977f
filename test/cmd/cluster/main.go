// Command cluster brings the local control plane up or down for a person:
// `cluster up DIR` starts it (the processes outlive this command) and prints
// the KUBECONFIG to export; `cluster add DIR NAME HEALTH_URL BINARY ARGS...`
// starts one more process beside it (our controller, for the demo) and
// records it; `cluster impersonate DIR USER OUT` writes a kubeconfig that acts
// as USER (a ServiceAccount, say) with exactly its RBAC permissions;
// `cluster down DIR` stops everything by the recorded pids.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubegray/kubectl-gray/test/cluster"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "cluster:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 4 && args[0] == "impersonate" {
		return impersonate(args[1], args[2], args[3])
	}
	if len(args) >= 5 && args[0] == "add" {
		return add(args[1], args[2], args[3], args[4], args[5:])
	}
	if len(args) != 2 || (args[0] != "up" && args[0] != "down") {
		return fmt.Errorf("usage: cluster up|down DIR, cluster add DIR NAME HEALTH_URL BINARY [ARGS...], or cluster impersonate DIR USER OUT")
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

// add starts another component beside the recorded cluster, waits for its
// health URL, and records it so that `cluster down` stops it too.
func add(dir, name, healthURL, binary string, args []string) error {
	c, err := cluster.Attach(dir)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.StartComponent(ctx, name, binary, healthURL, args...); err != nil {
		return err
	}
	if err := c.SaveState(); err != nil {
		return err
	}
	fmt.Printf("%s started (pid %d, log %s/%s.log)\n", name, c.Processes()[name], dir, name)
	return nil
}

// impersonate writes a copy of the cluster's admin kubeconfig whose user
// impersonates user, so a process using it has exactly that user's rights.
func impersonate(dir, user, out string) error {
	cfg, err := clientcmd.LoadFromFile(filepath.Join(dir, "admin.kubeconfig"))
	if err != nil {
		return err
	}
	for _, auth := range cfg.AuthInfos {
		auth.Impersonate = user
	}
	return clientcmd.WriteToFile(*cfg, out)
}
