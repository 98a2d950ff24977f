package plugin

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/util/templates"
)

var (
	restartLong = templates.LongDesc(`
		Restart the pods of a Deployment a few at a time without a new revision:
		each pod is evicted through the Eviction API, so PodDisruptionBudgets are
		honoured, and its ReplicaSet replaces it from the same template. The
		template, the revision and the ReplicaSets and their sizes stay as they are.

		It is meant for a held gray rollout, which 'kubectl rollout restart'
		refuses because the Deployment is paused (in alongside mode it always is),
		and which a new revision would start over. The canary's pods are
		restarted first, so that a bad restart shows on the small side, then the
		stable ReplicaSet's.

		At most as many pods are unavailable at once as the Deployment's
		maxUnavailable allows, resolved against spec.replicas as a rolling update
		resolves it (a percentage rounds down), pods already unavailable
		included; after each batch the restart waits until the replacements are
		available. A Deployment whose maxUnavailable is 0, or rounds down to 0,
		or that uses Recreate, is refused unless --max-unavailable says how many
		may go. An eviction a PodDisruptionBudget refuses is retried every 5
		seconds until --timeout.

		When the rollout is not held: a settled Deployment (one ReplicaSet with
		all the replicas: complete, or aborted) is restarted the same way; one in
		the middle of a step (two ReplicaSets moving) is refused, because the
		rollout takes pods down within the same maxUnavailable: wait for the hold
		or the end of the rollout, then restart. A restart stops when the
		Deployment or its ReplicaSets change under it.

		Several Deployments, named or chosen with -l, are restarted one after the
		other, each within its own --timeout; a failure of one does not stop the
		others.

		Needs RBAC permission to create pods/eviction in the namespace. Exits 0
		when every pod was replaced, 1 on an error or a refusal, 2 when --timeout
		passed first (naming the pods left).`)

	restartExample = templates.Examples(`
		# Restart the pods of web's held rollout, canary first
		kubectl gray restart web

		# Print the batches without evicting anything
		kubectl gray restart web --dry-run

		# Three pods at a time, whatever the Deployment's maxUnavailable says
		kubectl gray restart deploy/web --max-unavailable 3 --timeout 30m`)
)

// errRestartTimeout marks the end of --timeout as the cause of a cancelled
// context.
var errRestartTimeout = errors.New("restart timeout")

// RestartOptions holds what `kubectl gray restart` needs.
type RestartOptions struct {
	// Flags.
	Timeout        time.Duration
	MaxUnavailable string
	DryRun         string

	// Filled in by Complete (Now, Interval and EvictRetry by
	// NewRestartOptions, for tests to replace).
	maxUnavailable *intstr.IntOrString
	dryRun         cmdutil.DryRunStrategy
	Now            func() time.Time
	// Interval is the pause between reads while waiting for replacements.
	Interval time.Duration
	// EvictRetry is the pause before evicting again a pod whose eviction a
	// PodDisruptionBudget refused.
	EvictRetry time.Duration

	TargetOptions
	genericiooptions.IOStreams
}

// NewRestartOptions returns RestartOptions with defaults.
func NewRestartOptions(streams genericiooptions.IOStreams) *RestartOptions {
	return &RestartOptions{Timeout: 10 * time.Minute, DryRun: "none", Now: time.Now,
		Interval: time.Second, EvictRetry: 5 * time.Second, IOStreams: streams}
}

// NewCmdRestart returns `kubectl gray restart`.
func NewCmdRestart(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := NewRestartOptions(streams)
	cmd := &cobra.Command{
		Use:                   "restart (DEPLOYMENT... | -l SELECTOR) [--max-unavailable N] [--timeout DURATION] [--dry-run]",
		DisableFlagsInUseLine: true,
		Short:                 "Restart the pods of a held rollout a few at a time, without a new revision",
		Long:                  restartLong,
		Example:               restartExample,
		ValidArgsFunction:     completeDeploymentNames(f),
		RunE:                  runE(f, o),
	}
	cmd.Flags().DurationVar(&o.Timeout, "timeout", o.Timeout, "Give up on a Deployment after this long (exit code 2), naming the pods left. 0 waits forever.")
	o.addSelectorFlag(cmd, "restart")
	cmd.Flags().StringVar(&o.MaxUnavailable, "max-unavailable", "", "How many pods may be unavailable at once (a number, or a percentage of spec.replicas rounded down), instead of the Deployment's maxUnavailable.")
	addDryRunFlag(cmd, &o.DryRun, `Must be "none" or "client". If client (or given alone), only print the batches, evicting nothing.`, "none", "client")
	return cmd
}

// Complete reads the arguments, then the namespace and client from f.
func (o *RestartOptions) Complete(f cmdutil.Factory, args []string) error {
	if err := o.complete(args); err != nil {
		return err
	}
	return o.completeClient(f)
}

func (o *RestartOptions) complete(args []string) error {
	if err := o.completeNames("restart", args); err != nil {
		return err
	}
	if o.MaxUnavailable != "" {
		v := intstr.Parse(o.MaxUnavailable)
		o.maxUnavailable = &v
	}
	var err error
	o.dryRun, err = parseDryRun(o.DryRun)
	return err
}

// Validate checks the flags before anything is read.
func (o *RestartOptions) Validate() error {
	switch {
	case o.Timeout < 0:
		return fmt.Errorf("invalid --timeout %s: must not be negative", o.Timeout)
	case o.dryRun == cmdutil.DryRunServer:
		return fmt.Errorf("--dry-run=server is not supported by restart: each batch depends on the replacements of the one before; use --dry-run to print the batches")
	}
	if v := o.maxUnavailable; v != nil {
		n, err := intstr.GetScaledValueFromIntOrPercent(v, 100, false)
		if err != nil || n < 1 || (v.Type == intstr.String && n > 100) {
			return fmt.Errorf("invalid --max-unavailable %q: must be a number of pods of 1 or more, or a percentage from 1%% to 100%%", o.MaxUnavailable)
		}
	}
	return nil
}

// Run restarts each Deployment in turn (eachTarget).
func (o *RestartOptions) Run(ctx context.Context) error {
	return o.eachTarget(ctx, func(name string) error { return o.restart(ctx, name) })
}

// restart restarts the pods of Deployment name, batch by batch: read, decide the batch, evict
// it, wait for its replacements; the Deployment is read again before each batch and the
// restart stops if it changed. --timeout counts for each Deployment on its own.
func (o *RestartOptions) restart(ctx context.Context, name string) error {
	if o.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, o.Timeout, errRestartTimeout)
		defer cancel()
	}
	d, rss, err := o.read(ctx, name)
	if err != nil {
		return err
	}
	targets, stands, err := restartTargets(d, rss)
	if err != nil {
		return err
	}
	if len(targets) == 0 {
		_, err := fmt.Fprintf(o.Out, "%s has no pods to restart (%s)\n", deploymentRef(d.Name), stands)
		return err
	}
	limit, source, err := restartLimit(d, o.maxUnavailable)
	if err != nil {
		return err
	}
	s, err := o.observe(ctx, d, rss)
	if err != nil {
		return err
	}
	r := &restartRun{o: o, d: d, targets: targets, limit: limit, originals: map[types.UID]bool{}, gone: map[types.UID]bool{}}
	for _, p := range s.Pods {
		if slices.ContainsFunc(targets, func(t restartTarget) bool { return t.UID == p.ReplicaSet }) {
			r.originals[p.UID] = true
		}
	}
	r.left = s.left(r.originals, r.gone)
	suffix := ""
	if o.dryRun == cmdutil.DryRunClient {
		suffix = " (dry run)"
	}
	order := make([]string, len(targets))
	for i, t := range targets {
		order[i] = t.String()
	}
	fmt.Fprintf(o.Out, "Restarting %s (%s): %s, at most %d unavailable at a time (%s)%s\n",
		deploymentRef(d.Name), stands, podCount(len(r.originals)), limit, source, suffix)
	fmt.Fprintf(o.Out, "Order: %s\n", strings.Join(order, ", then "))
	if o.dryRun == cmdutil.DryRunClient {
		return r.printPlan(s)
	}
	if err := r.restart(ctx); err != nil {
		return err
	}
	_, err = fmt.Fprintf(o.Out, "%s restarted: %s evicted and replaced in %d batches, no new revision\n", deploymentRef(d.Name), podCount(r.evicted), r.batches)
	return err
}

// read gets Deployment name and the ReplicaSets it controls.
func (o *RestartOptions) read(ctx context.Context, name string) (*appsv1.Deployment, []*appsv1.ReplicaSet, error) {
	d, err := o.Client.AppsV1().Deployments(o.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, nil, apiError(err, "get", o.Namespace, name)
	}
	rss, _, err := ownedReplicaSets(ctx, o.Client, d)
	return d, rss, err
}

// observe lists the pods of d's ReplicaSets rss.
func (o *RestartOptions) observe(ctx context.Context, d *appsv1.Deployment, rss []*appsv1.ReplicaSet) (restartState, error) {
	selector, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return restartState{}, fmt.Errorf("deployment %s/%s has an invalid selector: %w", d.Namespace, d.Name, err)
	}
	list, err := o.Client.CoreV1().Pods(d.Namespace).List(ctx, metav1.ListOptions{LabelSelector: selector.String()})
	if err != nil {
		return restartState{}, fmt.Errorf("listing pods of deployment %s/%s: %w", d.Namespace, d.Name, err)
	}
	owners := map[types.UID]bool{}
	for _, rs := range rss {
		owners[rs.UID] = true
	}
	return restartState{Replicas: deploymentReplicas(d), Pods: podsOf(list.Items, owners, d.Spec.MinReadySeconds, metav1.NewTime(o.Now()))}, nil
}
