package plugin

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
)

// The parts of the verbs' Options that several verbs share, embedded in their
// XxxOptions as kubectl embeds IOStreams, so each verb keeps the
// Complete/Validate/Run shape and only its own flags and checks stay in its
// file.

// TargetOptions are where a verb finds its Deployments: the one named on the
// command line, or for the verbs that take several (targets.go) those named or
// chosen with -l; the namespace of -n or the kubeconfig context; the client.
type TargetOptions struct {
	// Flags.
	Selector string

	// Filled in by Complete.
	Namespace string
	// Arg is the argument naming the Deployment as given (NAME or TYPE/NAME), Name the
	// Deployment's name it resolves to (resolveName, Run's first step); both empty for the
	// verbs where a name is optional and none was given.
	Arg, Name string
	// Args are the arguments of a verb that takes several Deployments (completeNames).
	Args   []string
	Client kubernetes.Interface
	// Getter resolves Arg or Args, and -l, through the server. Run asks it, not Complete, so
	// that Validate refuses a bad flag before any request, as kubectl does.
	Getter genericclioptions.RESTClientGetter
}

// completeName reads the one DEPLOYMENT argument of a verb that takes exactly
// one; verb goes into the example of the error.
func (o *TargetOptions) completeName(verb string, args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("give one Deployment, e.g. 'kubectl gray %s web'", verb)
	}
	o.Arg = args[0]
	return nil
}

// completeClient fills the namespace, the client and the getter from f; none of them sends a
// request.
func (o *TargetOptions) completeClient(f cmdutil.Factory) error {
	var err error
	if o.Namespace, _, err = f.ToRawKubeConfigLoader().Namespace(); err != nil {
		return err
	}
	o.Getter = f
	o.Client, err = f.KubernetesClientSet()
	return err
}

// resolveName sets Name to the Deployment Arg names (deploymentName).
func (o *TargetOptions) resolveName() error {
	if o.Arg == "" {
		return nil
	}
	name, err := deploymentName(o.Getter, o.Namespace, o.Arg)
	o.Name = name
	return err
}

// WriteOptions are the --dry-run and -o flags of the verbs that write a
// Deployment, and what they print.
type WriteOptions struct {
	PrintFlags *genericclioptions.PrintFlags

	// Flags.
	DryRun string

	// Filled in by Complete.
	DryRunStrategy cmdutil.DryRunStrategy

	// printer prints every object of a run with -o json or yaml: one printer, so that YAML
	// separates the objects with "---" as kubectl's does.
	printer printers.ResourcePrinter
}

// newWriteOptions returns WriteOptions with defaults.
func newWriteOptions() WriteOptions {
	return WriteOptions{PrintFlags: newPrintFlags(), DryRun: "none"}
}

// newPrintFlags are the -o flags of the mutating verbs: name, json and yaml
// (no templates: scripts that need a field use -o json).
func newPrintFlags() *genericclioptions.PrintFlags {
	f := genericclioptions.NewPrintFlags("").WithTypeSetter(scheme.Scheme)
	f.TemplatePrinterFlags = nil
	return f
}

// addWriteFlags adds --dry-run and the -o flags to cmd, with completion of
// their values.
func (o *WriteOptions) addWriteFlags(cmd *cobra.Command) {
	addDryRunFlag(cmd, &o.DryRun, `Must be "none", "server", or "client". If client strategy, only print the object that would be sent, without sending it. If server strategy, submit server-side request without persisting the resource.`,
		"none", "client", "server")
	o.PrintFlags.AddFlags(cmd)
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(o.PrintFlags.AllowedFormats(), cobra.ShellCompDirectiveNoFileComp))
}

// addDryRunFlag binds --dry-run to value, taking it without a value as the client strategy
// the way kubectl does, so `--dry-run web` reads web as an argument; values are completed.
func addDryRunFlag(cmd *cobra.Command, value *string, usage string, values ...string) {
	cmd.Flags().StringVar(value, "dry-run", "none", usage)
	cmd.Flags().Lookup("dry-run").NoOptDefVal = "client"
	_ = cmd.RegisterFlagCompletionFunc("dry-run", cobra.FixedCompletions(values, cobra.ShellCompDirectiveNoFileComp))
}

// completeDryRun reads --dry-run.
func (o *WriteOptions) completeDryRun() error {
	var err error
	o.DryRunStrategy, err = parseDryRun(o.DryRun)
	return err
}

// parseDryRun reads a --dry-run value. The boolean forms of old kubectl scripts are read as
// kubectl still reads them: true is the client strategy, false none.
func parseDryRun(value string) (cmdutil.DryRunStrategy, error) {
	switch value {
	case "", "none", "false":
		return cmdutil.DryRunNone, nil
	case "client", "true":
		return cmdutil.DryRunClient, nil
	case "server":
		return cmdutil.DryRunServer, nil
	}
	return cmdutil.DryRunNone, fmt.Errorf(`invalid --dry-run %q: must be "none", "client" or "server"`, value)
}

// validatePrinter checks -o before anything is written, so a typo in the
// format does not leave a change made and unreported.
func (o *WriteOptions) validatePrinter() error {
	_, err := o.PrintFlags.ToPrinter()
	return outputError(err)
}

// printResult prints a written Deployment with the -o printer: by default the
// line "deployment.apps/NAME <operation>", marked when it was a dry run.
func (o *WriteOptions) printResult(operation string, d *appsv1.Deployment, out io.Writer) error {
	if o.printer != nil {
		return o.printer.PrintObj(d, out)
	}
	o.PrintFlags.NamePrintFlags.Operation = strings.TrimSpace(operation) + dryRunSuffix(o.DryRunStrategy)
	printer, err := o.PrintFlags.ToPrinter()
	if err != nil {
		return err
	}
	// The name printer is made again for each object, whose operation it prints.
	if format := *o.PrintFlags.OutputFormat; format != "" && format != "name" {
		o.printer = printer
	}
	return printer.PrintObj(d, out)
}

// dryRunSuffix marks a result line of a dry run, as kubectl does.
func dryRunSuffix(dryRun cmdutil.DryRunStrategy) string {
	switch dryRun {
	case cmdutil.DryRunClient:
		return " (dry run)"
	case cmdutil.DryRunServer:
		return " (server dry run)"
	}
	return ""
}

// viewFormats are the -o values of `kubectl gray version`, json and yaml as
// kubectl version has them. status and history print with kubectl get's
// printers (printview.go).
var viewFormats = []string{"json", "yaml"}

// addViewOutputFlag binds -o/--output to output, with completion of
// viewFormats.
func addViewOutputFlag(cmd *cobra.Command, output *string, usage string) {
	cmd.Flags().StringVarP(output, "output", "o", *output, usage)
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(viewFormats, cobra.ShellCompDirectiveNoFileComp))
}

// verb is the shape of the Options of every verb that talks to the cluster.
type verb interface {
	Complete(f cmdutil.Factory, args []string) error
	Validate() error
	Run(ctx context.Context) error
}

// runE is the RunE of such a verb: it only chains Complete, Validate and Run,
// stopping at the first error, which reads as an unreachable server when that was its cause
// (reachError).
func runE(f cmdutil.Factory, o verb) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		if err := o.Complete(f, args); err != nil {
			return reachError(err)
		}
		if err := o.Validate(); err != nil {
			return err
		}
		return reachError(o.Run(commandContext(cmd)))
	}
}

// optionalString is a string flag that remembers whether it was given, for
// flags where an explicit empty value means something ("remove it") that
// leaving the flag out does not.
type optionalString struct {
	value string
	set   bool
}

func (s *optionalString) String() string { return s.value }

func (s *optionalString) Set(value string) error {
	s.value, s.set = value, true
	return nil
}

func (s *optionalString) Type() string { return "string" }
