// Command gray-controller is the Deployment controller of kubectl-gray.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/klog/v2"

	"github.com/kubegray/kubectl-gray/controller"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// After the first signal starts a graceful shutdown, a second one kills
	// the process the default way.
	context.AfterFunc(ctx, stop)

	err := controller.NewCommand().ExecuteContext(ctx)
	stop()
	klog.Flush()
	if err != nil {
		os.Exit(1)
	}
}
