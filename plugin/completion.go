package plugin

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/util/templates"
)

var (
	completionLong = templates.LongDesc(`
		Print a shell completion script for the kubectl-gray binary.

		For 'kubectl gray <TAB>' (kubectl 1.26 or newer), put the kubectl_complete-gray
		script of the kubectl-gray repository on your PATH instead: kubectl runs it
		to complete plugin commands, flags and Deployment names.`)

	completionExample = templates.Examples(`
		# Load completion for kubectl-gray into the current bash shell
		source <(kubectl gray completion bash)

		# Install zsh completion
		kubectl gray completion zsh > "${fpath[1]}/_kubectl-gray"

		# Load fish completion
		kubectl gray completion fish | source

		# Load PowerShell completion
		kubectl gray completion powershell | Out-String | Invoke-Expression`)
)

// shells are the shells completion scripts exist for.
var shells = []string{"bash", "zsh", "fish", "powershell"}

// completionTimeout bounds the API call behind a <TAB>: a shell that hangs
// is worse than no suggestions.
const completionTimeout = 5 * time.Second

// CompletionOptions holds what `kubectl gray completion` needs.
type CompletionOptions struct {
	// Filled in by Complete.
	Shell string
	Root  *cobra.Command

	genericiooptions.IOStreams
}

// NewCompletionOptions returns CompletionOptions with defaults.
func NewCompletionOptions(streams genericiooptions.IOStreams) *CompletionOptions {
	return &CompletionOptions{IOStreams: streams}
}

// NewCmdCompletion returns `kubectl gray completion`. It needs no cluster,
// hence no factory.
func NewCmdCompletion(streams genericiooptions.IOStreams) *cobra.Command {
	o := NewCompletionOptions(streams)
	cmd := &cobra.Command{
		Use:                   "completion bash|zsh|fish|powershell",
		DisableFlagsInUseLine: true,
		Short:                 "Print a shell completion script",
		Long:                  completionLong,
		Example:               completionExample,
		ValidArgs:             shells,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.Complete(cmd, args); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(commandContext(cmd))
		},
	}
	return cmd
}

// Complete reads the shell and finds the root command to describe.
func (o *CompletionOptions) Complete(cmd *cobra.Command, args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("give one shell: %s", strings.Join(shells, ", "))
	}
	o.Shell = args[0]
	o.Root = cmd.Root()
	return nil
}

// Validate checks the shell.
func (o *CompletionOptions) Validate() error {
	if !slices.Contains(shells, o.Shell) {
		return fmt.Errorf("unsupported shell %q: use one of %s", o.Shell, strings.Join(shells, ", "))
	}
	return nil
}

// Run prints the script. The scripts name the command they complete after
// the root command, so the root is named after the binary while they are
// generated: a script for "gray" would complete a command nobody runs.
func (o *CompletionOptions) Run(_ context.Context) error {
	use := o.Root.Use
	o.Root.Use = binaryName
	defer func() { o.Root.Use = use }()
	switch o.Shell {
	case "bash":
		return o.Root.GenBashCompletionV2(o.Out, true)
	case "zsh":
		return o.Root.GenZshCompletion(o.Out)
	case "fish":
		return o.Root.GenFishCompletion(o.Out, true)
	default:
		return o.Root.GenPowerShellCompletionWithDesc(o.Out)
	}
}

// completeDeploymentNames completes the first argument with the names of
// the Deployments in the namespace the flags select, keeping a TYPE/ prefix
// the user typed (deploy/we<TAB> → deploy/web).
func completeDeploymentNames(f cmdutil.Factory) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ns, _, err := f.ToRawKubeConfigLoader().Namespace()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		client, err := f.KubernetesClientSet()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ctx, cancel := context.WithTimeout(commandContext(cmd), completionTimeout)
		defer cancel()
		return deploymentCompletions(ctx, f, client, ns, toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}

// deploymentCompletions lists the Deployment names in ns that complete
// toComplete; nothing when the list fails (completion must not print errors).
func deploymentCompletions(ctx context.Context, names genericclioptions.RESTClientGetter, client kubernetes.Interface, ns, toComplete string) []cobra.Completion {
	prefix, partial := "", toComplete
	if typ, name, ok := strings.Cut(toComplete, "/"); ok {
		if _, err := deploymentName(names, ns, typ+"/x"); err != nil {
			return nil
		}
		prefix, partial = typ+"/", name
	}
	list, err := client.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil
	}
	var out []cobra.Completion
	for _, d := range list.Items {
		if strings.HasPrefix(d.Name, partial) {
			out = append(out, prefix+d.Name)
		}
	}
	slices.Sort(out)
	return out
}

// registerNamespaceCompletion completes -n/--namespace with namespace names.
func registerNamespaceCompletion(root *cobra.Command, f cmdutil.Factory) {
	_ = root.RegisterFlagCompletionFunc("namespace", func(cmd *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		client, err := f.KubernetesClientSet()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ctx, cancel := context.WithTimeout(commandContext(cmd), completionTimeout)
		defer cancel()
		return namespaceCompletions(ctx, client, toComplete), cobra.ShellCompDirectiveNoFileComp
	})
}

// namespaceCompletions lists the namespace names starting with toComplete.
func namespaceCompletions(ctx context.Context, client kubernetes.Interface, toComplete string) []cobra.Completion {
	list, err := client.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil
	}
	var out []cobra.Completion
	for _, ns := range list.Items {
		if strings.HasPrefix(ns.Name, toComplete) {
			out = append(out, ns.Name)
		}
	}
	slices.Sort(out)
	return out
}

// commandContext is the command's context; cobra leaves it nil when the
// command tree runs without ExecuteContext.
func commandContext(cmd *cobra.Command) context.Context {
	if ctx := cmd.Context(); ctx != nil {
		return ctx
	}
	return context.Background()
}
