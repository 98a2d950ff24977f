package plugin

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/kubectl/pkg/util/templates"

	"github.com/kubegray/kubectl-gray/pkg/version"
)

var (
	versionLong = templates.LongDesc(`
		Print the build information of this kubectl-gray binary. It does not
		contact the cluster.`)

	versionExample = templates.Examples(`
		# Print the build information
		kubectl gray version

		# Print only the version
		kubectl gray version --short`)
)

// versionOutput is what -o json|yaml prints, shaped like kubectl version.
type versionOutput struct {
	ClientVersion version.Info `json:"clientVersion"`
}

// VersionOptions holds what `kubectl gray version` needs.
type VersionOptions struct {
	// Flags.
	Short  bool
	Output string

	// BuildInfo returns the build information; tests replace it.
	BuildInfo func() version.Info

	genericiooptions.IOStreams
}

// NewVersionOptions returns VersionOptions with defaults.
func NewVersionOptions(streams genericiooptions.IOStreams) *VersionOptions {
	return &VersionOptions{BuildInfo: version.Get, IOStreams: streams}
}

// NewCmdVersion returns `kubectl gray version`. It needs no cluster, hence no
// factory.
func NewCmdVersion(streams genericiooptions.IOStreams) *cobra.Command {
	o := NewVersionOptions(streams)
	cmd := &cobra.Command{
		Use:                   "version [--short] [-o json|yaml]",
		DisableFlagsInUseLine: true,
		Short:                 "Print the build information of kubectl-gray",
		Long:                  versionLong,
		Example:               versionExample,
		ValidArgsFunction:     cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.Complete(args); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(commandContext(cmd))
		},
	}
	cmd.Flags().BoolVar(&o.Short, "short", o.Short, "Print only the version.")
	addViewOutputFlag(cmd, &o.Output, "Output format: json or yaml.")
	return cmd
}

// Complete checks that no arguments were given.
func (o *VersionOptions) Complete(args []string) error {
	if len(args) > 0 {
		return fmt.Errorf("version takes no arguments")
	}
	return nil
}

// Validate checks flag combinations.
func (o *VersionOptions) Validate() error {
	if o.Output != "" && o.Output != "json" && o.Output != "yaml" {
		return fmt.Errorf("invalid --output %q: use json or yaml", o.Output)
	}
	if o.Short && o.Output != "" {
		return fmt.Errorf("--short and --output cannot be combined")
	}
	return nil
}

// Run prints the build information.
func (o *VersionOptions) Run(_ context.Context) error {
	info := o.BuildInfo()
	if o.Output != "" {
		return printData(o.Out, o.Output, versionOutput{ClientVersion: info})
	}
	if o.Short {
		_, err := fmt.Fprintln(o.Out, info.Version)
		return err
	}
	_, err := fmt.Fprintf(o.Out, "Client Version: %s\nCommit:         %s\nBuild Date:     %s\nGo Version:     %s\nPlatform:       %s\n",
		info.Version, info.Commit, info.Date, info.GoVersion, info.Platform)
	return err
}
