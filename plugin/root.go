// Package plugin implements kubectl gray, the kubectl plugin of kubectl-gray:
// one file per verb (set, status, resume, undo, abort, retry, restart, release,
// history, gate, dashboard, version, completion), the status view model and its rendering.
package plugin

import (
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/rest"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/util/templates"

	"github.com/kubegray/kubectl-gray/pkg/version"
)

// binaryName is the executable kubectl finds on PATH for `kubectl gray`.
const binaryName = "kubectl-gray"

// errPrefix starts each error line on stderr, as kubectl's do.
const errPrefix = "error:"

// fieldManager names kubectl gray in managedFields of every object it writes.
const fieldManager = "kubectl-gray"

var rootLong = templates.LongDesc(`
	Hold Deployment rollouts at a share of their replicas (gray release, canary),
	look at them, then resume, abort or roll back. Everything lives in kubegray.io/*
	annotations on the Deployment; gray-controller does the rolling.

	Exit codes:

	* 0: success, or the phase awaited by 'status --until' was reached
	* 1: error, or the rollout is Degraded, Aborted or Invalid, or failed and was rolled back
	* 2: 'status --until' or 'restart' timed out`)

// NewCmdGray returns the root command, "gray", shown as `kubectl gray` in
// help because kubectl runs the binary kubectl-gray for it.
func NewCmdGray(streams genericiooptions.IOStreams) *cobra.Command {
	configFlags := genericclioptions.NewConfigFlags(true)
	configFlags.WrapConfigFn = func(c *rest.Config) *rest.Config {
		c.UserAgent = version.UserAgent(binaryName)
		return c
	}
	f := cmdutil.NewFactory(cmdutil.NewMatchVersionFlags(configFlags))

	cmd := &cobra.Command{
		Use:   "gray",
		Short: "Hold Deployment rollouts at a share of their replicas",
		Long:  rootLong,
		Annotations: map[string]string{
			cobra.CommandDisplayNameAnnotation: "kubectl gray",
		},
		// A failed rollout is not a usage mistake; the usage text would bury
		// the error that says what to do.
		SilenceUsage: true,
		// Our own completion verb replaces cobra's, so it follows the verb
		// shape and documents kubectl_complete-gray.
		CompletionOptions: cobra.CompletionOptions{DisableDefaultCmd: true},
	}
	cmd.SetIn(streams.In)
	cmd.SetOut(streams.Out)
	cmd.SetErr(streams.ErrOut)
	cmd.SetErrPrefix(errPrefix)

	configFlags.AddFlags(cmd.PersistentFlags())
	registerNamespaceCompletion(cmd, f)

	cmd.AddCommand(
		NewCmdSet(f, streams),
		NewCmdStatus(f, streams),
		NewCmdResume(f, streams),
		NewCmdUndo(f, streams),
		NewCmdAbort(f, streams),
		NewCmdRetry(f, streams),
		NewCmdRelease(f, streams),
		NewCmdHistory(f, streams),
		NewCmdRestart(f, streams),
		NewCmdGate(f, streams),
		NewCmdDashboard(f, streams),
		NewCmdVersion(streams),
		NewCmdCompletion(streams),
	)
	return cmd
}
