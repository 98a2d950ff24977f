package controller

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/component-base/term"

	"github.com/kubegray/kubectl-gray/pkg/version"
)

const commandLong = `gray-controller is a Deployment controller that behaves like the one built into
kube-controller-manager (Kubernetes v1.37), plus gray releases: a Deployment annotated with
kubegray.io/percent (for example "20" or "10,30,60") stops each rolling update when the new
ReplicaSet holds that share of the replicas, until "kubectl gray resume" lets it go on.

Modes (--mode):

  instead    gray-controller replaces the built-in deployment controller and manages every
             Deployment; those without the annotation roll out exactly as upstream would.
             Start kube-controller-manager with --controllers=*,-deployment-controller.
             gray-controller refuses to start while it sees recent writes by the built-in
             controller (see --builtin-check-window and --skip-builtin-controller-check).

  alongside  (the default) runs next to the built-in controller, for managed clusters, and
             manages only annotated Deployments. While a gray rollout runs, the Deployment
             is taken over (paused, strategy Recreate, original strategy saved in
             kubegray.io/strategy) so that the built-in controller leaves its ReplicaSets
             alone; the strategy is restored and the Deployment unpaused in one write when
             the rollout completes or the annotation is removed. --takeover=admission (the
             default) relies on the admission policies of manifests/alongside (Kubernetes
             1.36+) and "kubectl gray set --image"; --takeover=eager takes a Deployment over
             as soon as it is annotated.

Run several replicas with --leader-elect (the default): only the holder of the Lease
--leader-elect-namespace/--leader-elect-lease-name syncs Deployments, and a leader that loses
the Lease exits with status 1 so that it restarts as a standby. SIGTERM stops the workers,
releases the Lease and exits with status 0.

Endpoints: /metrics on --metrics-bind-address, over HTTPS to the bearer tokens the API server
authenticates and whose users may get /metrics (--metrics-secure, the default); /healthz and
/readyz on --health-probe-bind-address. /readyz passes once the informer caches have synced, or at once on
a standby replica.`

// NewCommand returns the gray-controller root command.
func NewCommand() *cobra.Command {
	o := NewOptions()
	fss := o.Flags()
	cmd := &cobra.Command{
		Use:   "gray-controller",
		Short: "A Deployment controller with gray (canary) releases",
		Long:  commandLong,
		Args:  cobra.NoArgs,
		// Errors here are about flags or the cluster, not about how to call
		// the command; the usage text would bury them.
		SilenceUsage:      true,
		CompletionOptions: cobra.CompletionOptions{DisableDefaultCmd: true},
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Complete(); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	for _, name := range fss.Order {
		cmd.Flags().AddFlagSet(fss.FlagSets[name])
	}
	setSectionedHelp(cmd, fss)
	cmd.AddCommand(newVersionCommand())
	return cmd
}

// setSectionedHelp prints the root command's flags in named sections, the
// way kube-controller-manager does, because the logging flags alone would
// drown the others in one list. Subcommands keep cobra's help.
func setSectionedHelp(root *cobra.Command, fss cliflag.NamedFlagSets) {
	inherited := root.HelpFunc()
	root.SetHelpFunc(func(cmd *cobra.Command, args []string) {
		if cmd != root {
			inherited(cmd, args)
			return
		}
		out := cmd.OutOrStdout()
		var b strings.Builder
		fmt.Fprintf(&b, "%s\n\nUsage:\n  %s\n  %s [command]\n\nCommands:\n", cmd.Long, cmd.UseLine(), cmd.CommandPath())
		for _, sub := range cmd.Commands() {
			if sub.IsAvailableCommand() || sub.Name() == "help" {
				fmt.Fprintf(&b, "  %-*s %s\n", cmd.NamePadding(), sub.Name(), sub.Short)
			}
		}
		cols := helpColumns(out)
		for _, name := range fss.Order {
			fmt.Fprintf(&b, "\n%s%s flags:\n\n%s", strings.ToUpper(name[:1]), name[1:], fss.FlagSets[name].FlagUsagesWrapped(cols))
		}
		fmt.Fprintf(&b, "\nUse \"%s [command] --help\" for more information about a command.\n", cmd.CommandPath())
		// Help has no error to return; a closed stdout is the reader's choice.
		_, _ = io.WriteString(out, b.String())
	})
}

// helpColumns is the terminal's width, or 100 when the help is piped into a
// file or pager, which read better wrapped than with one line per flag.
func helpColumns(out io.Writer) int {
	if width, _, err := term.TerminalSize(out); err == nil && width > 0 {
		return width
	}
	return 100
}

// versionOptions are the options of "gray-controller version".
type versionOptions struct {
	Short  bool
	Output string
	Out    io.Writer
}

func newVersionCommand() *cobra.Command {
	o := &versionOptions{}
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version of gray-controller",
		Long:  "Print the version, commit, build date, Go version and platform of gray-controller.",
		Example: `  gray-controller version
  gray-controller version --short
  gray-controller version -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.Out = cmd.OutOrStdout()
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run()
		},
	}
	cmd.Flags().BoolVar(&o.Short, "short", false, "Print only the version number.")
	cmd.Flags().StringVarP(&o.Output, "output", "o", "", `Output format: "json". Empty prints one line.`)
	return cmd
}

func (o *versionOptions) Validate() error {
	if o.Output != "" && o.Output != "json" {
		return fmt.Errorf(`invalid --output %q: the only format is "json"`, o.Output)
	}
	if o.Short && o.Output != "" {
		return errors.New("--short and --output cannot be used together")
	}
	return nil
}

func (o *versionOptions) Run() error {
	info := version.Get()
	switch {
	case o.Short:
		_, err := fmt.Fprintln(o.Out, info.Version)
		return err
	case o.Output == "json":
		data, err := json.MarshalIndent(info, "", "  ")
		if err != nil {
			return fmt.Errorf("encoding the version as JSON: %w", err)
		}
		_, err = fmt.Fprintf(o.Out, "%s\n", data)
		return err
	default:
		_, err := fmt.Fprintf(o.Out, "gray-controller %s\n", info)
		return err
	}
}
