package plugin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/kubectl/pkg/cmd/get"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/util/templates"
	"k8s.io/kubectl/pkg/util/term"
)

var (
	statusLong = templates.LongDesc(`
		Show where gray rollouts stand.

		With a Deployment: a summary (phase, step among the hold points, target
		against available new replicas, stable and current revision, images,
		conditions, the latest gray events) and a tree of revisions, ReplicaSets
		and pods. With several: a table of them. Without one: a table of the gray
		Deployments of the namespace, or of all namespaces with -A, those -l
		selects if given.

		Why pods of the new ReplicaSet are not ready (ImagePullBackOff,
		CrashLoopBackOff, unschedulable, quota, ...) is listed grouped and counted,
		and a failed rollout shows gray-controller's reason, and whether it was
		aborted (by kubegray.io/on-failure or by a person) or rolled back. The policy lines show
		kubegray.io/on-failure and kubegray.io/hold-for, and how long a timed
		hold has left.

		-w redraws on every change (the API server's watch, not polling). --until
		waits for a phase: it exits 0 when the phase is reached, 1 as soon as the
		rollout is Degraded, Aborted or Invalid, or failed and was rolled back
		(printing why), 2 when --timeout passes first.

		-o json|yaml prints a GrayStatus object (apiVersion kubectl-gray/v1), or
		without a Deployment a GrayStatusList, whose fields are documented with the
		StatusView type of the plugin package; -o jsonpath=..., go-template=...
		and custom-columns=... read the same object. -o wide prints the table
		(for one Deployment, its row) with the mode, the stable revision, the
		new and stable ReplicaSets, the images and the gates; -o name prints deployment.apps/NAME.
		Colour is used on terminals unless NO_COLOR is set.`)

	statusExample = templates.Examples(`
		# Show the gray rollout of web
		kubectl gray status web

		# List the gray Deployments of every namespace
		kubectl gray status -A

		# Show web and api in one table, or the gray Deployments labelled tier=frontend
		kubectl gray status web api
		kubectl gray status -l tier=frontend

		# Wait up to 10 minutes for web to reach its next hold point
		kubectl gray status web --until held --timeout 10m

		# Follow the rollout of web as it happens
		kubectl gray status deploy/web -w

		# Read the phase from a script
		kubectl gray status web -o jsonpath='{.phase}'

		# List the gray Deployments with their mode, images and gates
		kubectl gray status -o wide`)
)

// The phases --until can wait for.
const (
	untilHeld     = "held"
	untilComplete = "complete"
)

// errTimeout marks the end of --timeout as the cause of a cancelled context.
var errTimeout = errors.New("timeout")

// StatusOptions holds what `kubectl gray status` needs.
type StatusOptions struct {
	// Flags.
	AllNamespaces bool
	Watch         bool
	Until         string
	Timeout       time.Duration
	PrintFlags    *get.PrintFlags

	// Filled in by Complete.
	Now func() time.Time
	// Color paints the text output; Terminal redraws -w output in place.
	Color    bool
	Terminal bool

	TargetOptions
	genericiooptions.IOStreams
}

// NewStatusOptions returns StatusOptions with defaults.
func NewStatusOptions(streams genericiooptions.IOStreams) *StatusOptions {
	return &StatusOptions{IOStreams: streams, Now: time.Now, PrintFlags: newViewPrintFlags(true)}
}

// NewCmdStatus returns `kubectl gray status`.
func NewCmdStatus(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := NewStatusOptions(streams)
	cmd := &cobra.Command{
		Use:                   "status [DEPLOYMENT... | -l SELECTOR] [-A] [-w] [--until held|complete] [--timeout DURATION] [-o FORMAT] [--no-headers] [--show-labels]",
		DisableFlagsInUseLine: true,
		Short:                 "Show gray rollouts, or wait for one to hold or complete",
		Long:                  statusLong,
		Example:               statusExample,
		ValidArgsFunction:     completeDeploymentNames(f),
		RunE:                  runE(f, o),
	}
	cmd.Flags().BoolVarP(&o.AllNamespaces, "all-namespaces", "A", o.AllNamespaces, "List gray Deployments of all namespaces.")
	o.addSelectorFlag(cmd, "list")
	cmd.Flags().BoolVarP(&o.Watch, "watch", "w", o.Watch, "Redraw on every change until interrupted (or until --until is reached).")
	cmd.Flags().StringVar(&o.Until, "until", o.Until, "Wait until the rollout is held or complete; exit 1 if it is Degraded, Aborted or Invalid, or it failed and was rolled back.")
	cmd.Flags().DurationVar(&o.Timeout, "timeout", o.Timeout, "Give up after this long (e.g. 5m); with --until the exit code is then 2. 0 waits forever.")
	addViewPrintFlags(cmd, o.PrintFlags, "a GrayStatus object (a GrayStatusList without a Deployment)")
	_ = cmd.RegisterFlagCompletionFunc("until", cobra.FixedCompletions([]string{untilHeld, untilComplete}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// Complete reads the arguments, then namespace, client and terminal.
func (o *StatusOptions) Complete(f cmdutil.Factory, args []string) error {
	if err := o.complete(args); err != nil {
		return err
	}
	if err := o.completeClient(f); err != nil {
		return err
	}
	o.Terminal = term.TTY{Out: o.Out}.IsTerminalOut()
	o.Color = wantColor(o.Terminal, os.Getenv("NO_COLOR"))
	return nil
}

// complete reads the arguments: none for the table (of those -l selects), one name for its
// summary, several for their table.
func (o *StatusOptions) complete(args []string) error {
	switch {
	case o.Selector != "" && len(args) > 0:
		return o.completeNames("status", args)
	case len(args) == 1:
		o.Arg = args[0]
	case len(args) > 1:
		o.Args = args
	}
	if o.AllNamespaces {
		return o.PrintFlags.EnsureWithNamespace()
	}
	return nil
}

// wantColor decides on colour: only on a terminal, and never when NO_COLOR
// is set to anything (https://no-color.org).
func wantColor(terminal bool, noColor string) bool {
	return terminal && noColor == ""
}

// Validate checks flag combinations.
func (o *StatusOptions) Validate() error {
	if _, err := o.PrintFlags.ToPrinter(); err != nil {
		return outputError(err)
	}
	switch {
	case o.Until != "" && o.Until != untilHeld && o.Until != untilComplete:
		return fmt.Errorf("invalid --until %q: use %q or %q", o.Until, untilHeld, untilComplete)
	case o.Until != "" && len(o.Args) > 0:
		return fmt.Errorf("--until waits for one Deployment; give one name, not %d", len(o.Args))
	case o.Until != "" && o.Selector != "":
		return fmt.Errorf("--until waits for one Deployment; give one name instead of -l %s", o.Selector)
	case o.Until != "" && o.Arg == "":
		return fmt.Errorf("--until needs a Deployment, e.g. 'kubectl gray status web --until %s'", o.Until)
	case o.Watch && len(o.Args) > 0:
		return fmt.Errorf("-w follows one Deployment, or the table of gray Deployments (-l chooses among them); give one name, not %d", len(o.Args))
	case o.AllNamespaces && (o.Arg != "" || len(o.Args) > 0):
		return fmt.Errorf("-A lists every namespace; use -n NAMESPACE with a Deployment name")
	case o.Timeout < 0:
		return fmt.Errorf("invalid --timeout %s: must not be negative", o.Timeout)
	case o.Timeout > 0 && o.Until == "" && !o.Watch:
		return fmt.Errorf("--timeout only applies with --until or -w")
	}
	return nil
}

// Run shows one Deployment, or the table of several or of the namespace, once or on every
// change.
func (o *StatusOptions) Run(ctx context.Context) error {
	if err := o.resolveName(); err != nil {
		return err
	}
	if o.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, o.Timeout, errTimeout)
		defer cancel()
	}
	switch {
	case len(o.Args) > 0:
		return o.runNamed(ctx)
	case o.Name == "":
		return o.runList(ctx)
	}
	return o.runOne(ctx)
}

// snapshot is one Deployment's view and the resource versions to watch from.
type snapshot struct {
	view    StatusView
	watches []watchSpec
}

// loadOne reads the Deployment, its ReplicaSets, their pods and its events.
func (o *StatusOptions) loadOne(ctx context.Context) (snapshot, error) {
	ns, name := o.Namespace, o.Name
	d, err := o.Client.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return snapshot{}, apiError(err, "get", ns, name)
	}
	rss, rsVersion, err := ownedReplicaSets(ctx, o.Client, d)
	if err != nil {
		return snapshot{}, err
	}
	selector, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return snapshot{}, fmt.Errorf("deployment %s/%s has an invalid selector: %w", ns, name, err)
	}
	podList, err := o.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector.String()})
	if err != nil {
		return snapshot{}, fmt.Errorf("listing pods of deployment %s/%s: %w", ns, name, err)
	}
	pods := make([]*corev1.Pod, len(podList.Items))
	for i := range podList.Items {
		pods[i] = &podList.Items[i]
	}
	// Events are a courtesy: a user who may read Deployments but not events
	// still gets the status, with a note.
	var eventNote string
	events, err := o.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{
		FieldSelector: fields.Set{"involvedObject.kind": "Deployment", "involvedObject.name": name}.String(),
	})
	if err != nil {
		eventNote = fmt.Sprintf("gray events not shown: %v", err)
		events = &corev1.EventList{}
	}
	view := newStatusView(d, &related{replicaSets: rss, pods: pods, events: events.Items})
	if eventNote != "" {
		view.Warnings = append(view.Warnings, eventNote)
	}
	apps, core := o.Client.AppsV1(), o.Client.CoreV1()
	nameSelector := fields.OneTermEqualSelector("metadata.name", name).String()
	return snapshot{
		view: view,
		watches: []watchSpec{
			{what: "deployment " + ns + "/" + name, resourceVersion: d.ResourceVersion, open: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
				opts.FieldSelector = nameSelector
				return apps.Deployments(ns).Watch(ctx, opts)
			}},
			{what: "ReplicaSets of deployment " + ns + "/" + name, resourceVersion: rsVersion, open: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
				opts.LabelSelector = selector.String()
				return apps.ReplicaSets(ns).Watch(ctx, opts)
			}},
			{what: "pods of deployment " + ns + "/" + name, resourceVersion: podList.ResourceVersion, open: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
				opts.LabelSelector = selector.String()
				return core.Pods(ns).Watch(ctx, opts)
			}},
		},
	}, nil
}

// runOne shows one Deployment; with -w or --until it reloads and shows it
// again on every change until done.
func (o *StatusOptions) runOne(ctx context.Context) error {
	snap, err := o.loadOne(ctx)
	if err != nil {
		return err
	}
	if !o.Watch && o.Until == "" {
		return o.render(o.Out, snap.view)
	}
	s := newScreen(o.Out, o.Terminal, drawSeparator(o.PrintFlags))
	if done, err := o.show(s, snap.view); done || err != nil {
		return err
	}
	err = watchLoop(ctx, snap.watches, func() (bool, []watchSpec, error) {
		next, err := o.loadOne(ctx)
		if err != nil {
			return false, nil, err
		}
		snap = next
		done, err := o.show(s, snap.view)
		return done, snap.watches, err
	})
	if ctx.Err() != nil {
		return o.ended(ctx, snap.view)
	}
	return err
}

// show draws one state of the Deployment and says whether --until is done.
func (o *StatusOptions) show(s *screen, v StatusView) (bool, error) {
	done, untilErr := false, error(nil)
	if o.Until != "" {
		done, untilErr = untilReached(v, o.Until)
	}
	switch {
	case o.Watch:
		text, err := o.renderString(v)
		if err != nil {
			return false, err
		}
		if err := s.draw(text); err != nil {
			return false, err
		}
	case done && !o.text():
		if err := o.render(o.Out, v); err != nil {
			return false, err
		}
	case !done && untilErr == nil && o.text():
		if err := s.line(waitingLine(v, o.Until)); err != nil {
			return false, err
		}
	}
	if done && o.text() {
		_, err := fmt.Fprintln(o.Out, reachedLine(v, o.Until))
		return true, err
	}
	return done || untilErr != nil, untilErr
}

// ended turns the end of the context into the command's result: a timeout
// of --until exits 2, a timeout of a plain watch or an interrupt ends it.
func (o *StatusOptions) ended(ctx context.Context, v StatusView) error {
	if o.Until == "" {
		return nil
	}
	if errors.Is(context.Cause(ctx), errTimeout) {
		phase := string(v.Phase)
		if phase == "" {
			phase = "not reported"
		}
		return &exitError{code: ExitTimeout, err: fmt.Errorf("timed out after %s waiting for deployment %s/%s to be %s (phase %s)", o.Timeout, o.Namespace, o.Name, o.Until, phase)}
	}
	return fmt.Errorf("interrupted while waiting for deployment %s/%s to be %s", o.Namespace, o.Name, o.Until)
}

// text is true for the default output: one Deployment's summary and tree,
// with --until's progress lines.
func (o *StatusOptions) text() bool {
	return outputFormat(o.PrintFlags) == ""
}

// render prints one Deployment: its summary and tree, or its view or table
// row with -o.
func (o *StatusOptions) render(w io.Writer, v StatusView) error {
	if o.text() {
		return renderStatus(w, v, o.Now(), o.Color)
	}
	return printView(o.PrintFlags, w, &v, func() *metav1.Table { return statusTable([]StatusView{v}, o.Now()) })
}

func (o *StatusOptions) renderString(v StatusView) (string, error) {
	var b strings.Builder
	err := o.render(&b, v)
	return b.String(), err
}
