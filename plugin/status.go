package plugin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/util/templates"
	"k8s.io/kubectl/pkg/util/term"

	"github.com/kubegray/kubectl-gray/pkg/deployutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

var (
	statusLong = templates.LongDesc(`
		Show where gray rollouts stand.

		With a Deployment: a summary (phase, step among the hold points, target
		against available new replicas, stable and current revision, images,
		conditions, the latest gray events) and a tree of revisions, ReplicaSets
		and pods. Without one: a table of the gray Deployments of the namespace, or
		of all namespaces with -A.

		Why pods of the new ReplicaSet are not ready (ImagePullBackOff,
		CrashLoopBackOff, unschedulable, quota, ...) is listed grouped and counted,
		and a failed rollout shows gray-controller's reason, and whether
		kubegray.io/on-failure rolled it back. The policy lines show
		kubegray.io/on-failure and kubegray.io/hold-for, and how long a timed
		hold has left.

		-w redraws on every change (the API server's watch, not polling). --until
		waits for a phase: it exits 0 when the phase is reached, 1 as soon as the
		rollout is Degraded or Invalid or was rolled back by
		kubegray.io/on-failure (printing why), 2 when --timeout passes first.

		-o json|yaml prints a GrayStatus object (apiVersion kubectl-gray/v1) whose
		fields are documented with the StatusView type of the plugin package.
		Colour is used on terminals unless NO_COLOR is set.`)

	statusExample = templates.Examples(`
		# Show the gray rollout of web
		kubectl gray status web

		# List the gray Deployments of every namespace
		kubectl gray status -A

		# Wait up to 10 minutes for web to reach its next hold point
		kubectl gray status web --until held --timeout 10m

		# Follow the rollout of web as it happens
		kubectl gray status deploy/web -w

		# Read the phase from a script
		kubectl gray status web -o json | jq -r .phase`)
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
	Output        string

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
	return &StatusOptions{IOStreams: streams, Now: time.Now}
}

// NewCmdStatus returns `kubectl gray status`.
func NewCmdStatus(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := NewStatusOptions(streams)
	cmd := &cobra.Command{
		Use:                   "status [DEPLOYMENT] [-A] [-w] [--until held|complete] [--timeout DURATION] [-o json|yaml]",
		DisableFlagsInUseLine: true,
		Short:                 "Show gray rollouts, or wait for one to hold or complete",
		Long:                  statusLong,
		Example:               statusExample,
		ValidArgsFunction:     completeDeploymentNames(f),
		RunE:                  runE(f, o),
	}
	cmd.Flags().BoolVarP(&o.AllNamespaces, "all-namespaces", "A", o.AllNamespaces, "List gray Deployments of all namespaces.")
	cmd.Flags().BoolVarP(&o.Watch, "watch", "w", o.Watch, "Redraw on every change until interrupted (or until --until is reached).")
	cmd.Flags().StringVar(&o.Until, "until", o.Until, "Wait until the rollout is held or complete; exit 1 if it is Degraded or Invalid, or kubegray.io/on-failure rolled it back.")
	cmd.Flags().DurationVar(&o.Timeout, "timeout", o.Timeout, "Give up after this long (e.g. 5m); with --until the exit code is then 2. 0 waits forever.")
	addViewOutputFlag(cmd, &o.Output, "Output format: json or yaml (a GrayStatus object). Default: text.")
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

func (o *StatusOptions) complete(args []string) error {
	switch len(args) {
	case 0:
	case 1:
		name, err := parseDeploymentName(args[0])
		if err != nil {
			return err
		}
		o.Name = name
	default:
		return fmt.Errorf("give at most one Deployment, e.g. 'kubectl gray status web'")
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
	switch {
	case o.Until != "" && o.Until != untilHeld && o.Until != untilComplete:
		return fmt.Errorf("invalid --until %q: use %q or %q", o.Until, untilHeld, untilComplete)
	case o.Output != "" && o.Output != "json" && o.Output != "yaml":
		return fmt.Errorf("invalid --output %q: use json or yaml (or nothing for text)", o.Output)
	case o.Until != "" && o.Name == "":
		return fmt.Errorf("--until needs a Deployment, e.g. 'kubectl gray status web --until %s'", o.Until)
	case o.AllNamespaces && o.Name != "":
		return fmt.Errorf("-A lists every namespace; use -n NAMESPACE with a Deployment name")
	case o.Timeout < 0:
		return fmt.Errorf("invalid --timeout %s: must not be negative", o.Timeout)
	case o.Timeout > 0 && o.Until == "" && !o.Watch:
		return fmt.Errorf("--timeout only applies with --until or -w")
	}
	return nil
}

// Run shows one Deployment or the table, once or on every change.
func (o *StatusOptions) Run(ctx context.Context) error {
	if o.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, o.Timeout, errTimeout)
		defer cancel()
	}
	if o.Name == "" {
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
	s := newScreen(o.Out, o.Terminal, o.Output)
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
	case done && o.Output != "":
		if err := o.render(o.Out, v); err != nil {
			return false, err
		}
	case !done && untilErr == nil && o.Output == "":
		if err := s.line(waitingLine(v, o.Until)); err != nil {
			return false, err
		}
	}
	if done && o.Output == "" {
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

func (o *StatusOptions) render(w io.Writer, v StatusView) error {
	if o.Output != "" {
		return printData(w, o.Output, v)
	}
	return renderStatus(w, v, o.Now(), o.Color)
}

func (o *StatusOptions) renderString(v StatusView) (string, error) {
	var b strings.Builder
	err := o.render(&b, v)
	return b.String(), err
}

// untilReached says whether the wait for a phase is over: true when reached,
// an error when it cannot be reached (Degraded, rolled back by
// kubegray.io/on-failure, Invalid, or a rollout that completed without
// holding).
func untilReached(v StatusView, until string) (bool, error) {
	obj := fmt.Sprintf("deployment %s/%s", v.Namespace, v.Name)
	if !v.Gray {
		if until == untilHeld {
			return false, fmt.Errorf("%s is not a gray Deployment, so it never holds; make it one with 'kubectl gray set %s PERCENT'", obj, v.Name)
		}
		return plainRolloutComplete(v)
	}
	if v.Stale {
		return false, nil
	}
	if err := failureError(v); err != nil {
		return false, err
	}
	switch v.Phase {
	case grayapi.PhaseInvalid:
		return false, fmt.Errorf("%s is Invalid: %s; fix it with '%s'", obj, orPlaceholder(v.Message, "(no message)"), fixCommand(v))
	case grayapi.PhaseHeld:
		return until == untilHeld, nil
	case grayapi.PhaseComplete:
		if until == untilHeld {
			return false, fmt.Errorf("%s is Complete: revision %d rolled out without a hold; start a gray rollout with 'kubectl gray set %s PERCENT --image CONTAINER=IMAGE'", obj, v.Revision, v.Name)
		}
		return true, nil
	}
	return false, nil
}

// fixCommand is the set command that rewrites the annotations that may have
// made a rollout Invalid. set always writes the hold points, so PERCENT is in
// it even when only the policy is wrong.
func fixCommand(v StatusView) string {
	cmd := "kubectl gray set " + v.Name + " PERCENT"
	if v.Policy != nil && v.Policy.OnFailureError != "" {
		cmd += " --on-failure hold|rollback"
	}
	if v.Policy != nil && v.Policy.HoldForError != "" {
		cmd += " --hold-for DURATION"
	}
	return cmd
}

// plainRolloutComplete applies kubectl rollout status's test to a Deployment
// without gray annotations: every replica updated and available.
func plainRolloutComplete(v StatusView) (bool, error) {
	for _, c := range v.Conditions {
		if c.Type == string(appsv1.DeploymentProgressing) && c.Reason == deployutil.TimedOutReason {
			return false, fmt.Errorf("deployment %s/%s exceeded its progress deadline", v.Namespace, v.Name)
		}
	}
	if v.Stale {
		return false, nil
	}
	return v.UpdatedReplicas == v.Replicas && v.CurrentReplicas == v.Replicas && v.AvailableReplicas == v.Replicas, nil
}

// waitingLine is the progress line --until prints without -w.
func waitingLine(v StatusView, until string) string {
	prefix := fmt.Sprintf("Waiting for %s to be %s: ", deploymentRef(v.Name), until)
	switch {
	case len(v.StaleReasons) > 0:
		return prefix + v.StaleReasons[0]
	case !v.Gray:
		return prefix + fmt.Sprintf("%d of %d replicas updated, %d available", v.UpdatedReplicas, v.Replicas, v.AvailableReplicas)
	case v.Phase == "":
		return prefix + "gray-controller has not reported yet"
	}
	var available int32
	if v.NewAvailableReplicas != nil {
		available = *v.NewAvailableReplicas
	}
	line := prefix + fmt.Sprintf("%s at %d%% (step %s), %d of %d new replicas available", v.Phase, v.Percent, stepText(v), available, v.Target)
	// Why the wait is long shows in a CI log before the progress deadline.
	if v.NotReady != nil && v.NotReady.Top != "" {
		line += "; not ready: " + v.NotReady.Top
	}
	return line
}

// reachedLine is the last line of a successful --until.
func reachedLine(v StatusView, until string) string {
	if until == untilHeld {
		return fmt.Sprintf("%s held at %d%% (step %s, revision %d)", deploymentRef(v.Name), v.Percent, stepText(v), v.Revision)
	}
	return fmt.Sprintf("%s rollout complete (revision %d)", deploymentRef(v.Name), v.Revision)
}

// loadList reads the gray Deployments of the namespace (all with -A).
func (o *StatusOptions) loadList(ctx context.Context) ([]StatusView, string, error) {
	ns := o.Namespace
	if o.AllNamespaces {
		ns = metav1.NamespaceAll
	}
	list, err := o.Client.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		where := "namespace " + ns
		if ns == "" {
			where = "all namespaces"
		}
		if apierrors.IsForbidden(err) {
			return nil, "", fmt.Errorf("you may not list deployments.apps in %s; ask for RBAC permission or name one Deployment: %w", where, err)
		}
		return nil, "", fmt.Errorf("listing Deployments in %s: %w", where, err)
	}
	views := []StatusView{}
	for i := range list.Items {
		d := &list.Items[i]
		_, percent := d.Annotations[grayapi.PercentAnnotation]
		_, status := d.Annotations[grayapi.StatusAnnotation]
		if percent || status {
			views = append(views, newStatusView(d, nil))
		}
	}
	sort.Slice(views, func(i, j int) bool {
		if views[i].Namespace != views[j].Namespace {
			return views[i].Namespace < views[j].Namespace
		}
		return views[i].Name < views[j].Name
	})
	return views, list.ResourceVersion, nil
}

// runList shows the table, once or on every change of a Deployment.
func (o *StatusOptions) runList(ctx context.Context) error {
	ns := o.Namespace
	if o.AllNamespaces {
		ns = metav1.NamespaceAll
	}
	s := newScreen(o.Out, o.Terminal, o.Output)
	apps := o.Client.AppsV1()
	// load reads and draws the table and returns the watch that follows it.
	load := func() ([]watchSpec, error) {
		views, rv, err := o.loadList(ctx)
		if err != nil {
			return nil, err
		}
		text, err := o.renderListString(views)
		if err != nil {
			return nil, err
		}
		switch {
		case len(views) == 0 && o.Output == "" && !o.Watch:
			_, err = fmt.Fprintln(o.ErrOut, noGrayDeployments(ns))
		case !o.Watch:
			_, err = io.WriteString(o.Out, text)
		case len(views) == 0 && o.Output == "":
			err = s.draw(noGrayDeployments(ns) + "\n")
		default:
			err = s.draw(text)
		}
		return []watchSpec{{what: "Deployments", resourceVersion: rv, open: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return apps.Deployments(ns).Watch(ctx, opts)
		}}}, err
	}
	specs, err := load()
	if err != nil || !o.Watch {
		return err
	}
	err = watchLoop(ctx, specs, func() (bool, []watchSpec, error) {
		specs, err := load()
		return false, specs, err
	})
	if ctx.Err() != nil {
		return nil
	}
	return err
}

func noGrayDeployments(ns string) string {
	if ns == "" {
		return "No gray Deployments found."
	}
	return fmt.Sprintf("No gray Deployments found in %s namespace.", ns)
}

func (o *StatusOptions) renderListString(views []StatusView) (string, error) {
	var b strings.Builder
	var err error
	if o.Output != "" {
		err = printData(&b, o.Output, StatusViewList{Kind: statusViewListKind, APIVersion: viewAPIVersion, Items: views})
	} else if len(views) > 0 {
		err = renderStatusTable(&b, views, o.AllNamespaces, o.Now())
	}
	return b.String(), err
}
