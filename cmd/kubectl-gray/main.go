// Command kubectl-gray is the kubectl plugin `kubectl gray`: kubectl runs it
// for `kubectl gray ...` when it is on PATH.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubegray/kubectl-gray/plugin"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	cmd := plugin.NewCmdGray(genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr})
	err := cmd.ExecuteContext(ctx)
	stop()
	os.Exit(plugin.ExitCode(err))
}
