package plugin

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/util/templates"

	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

var (
	releaseLong = templates.LongDesc(`
		Hand a Deployment that gray-controller took over (alongside mode) back to
		the built-in deployment controller, without gray-controller: after an
		uninstall, say, or with --takeover=eager, which keeps annotated
		Deployments taken over between rollouts.

		The strategy saved in kubegray.io/strategy is restored and the gray
		bookkeeping (kubegray.io/strategy, kubegray.io/paused, kubegray.io/status,
		kubegray.io/resume) goes, in one write that keeps the Deployment paused;
		then it is unpaused (or left paused if its user had paused it,
		kubegray.io/paused). Before them the sizes of its ReplicaSets are handed
		back (the kubegray.io/frozen label goes). The built-in controller then
		finishes any rollout in flight. If the API server still runs the
		kubegray-takeover policy, which keeps the Deployment on Recreate, nothing
		is unpaused and the command says so: run it again once the policy is gone.
		kubegray.io/percent stays: remove it too to leave gray rollouts.

		While gray-controller's admission policies are installed it releases
		Deployments itself, and the kubegray-guard policy refuses this command:
		remove kubegray.io/percent instead, or uninstall first.`)

	releaseExample = templates.Examples(`
		# After uninstalling gray-controller, hand web back to the built-in controller
		kubectl gray release web

		# See what would be written, without writing it
		kubectl gray release web --dry-run=client -o yaml`)
)

// ReleaseOptions holds what `kubectl gray release` needs.
type ReleaseOptions struct {
	TargetOptions
	WriteOptions
	genericiooptions.IOStreams
}

// NewReleaseOptions returns ReleaseOptions with defaults.
func NewReleaseOptions(streams genericiooptions.IOStreams) *ReleaseOptions {
	return &ReleaseOptions{WriteOptions: newWriteOptions(), IOStreams: streams}
}

// NewCmdRelease returns `kubectl gray release`.
func NewCmdRelease(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := NewReleaseOptions(streams)
	cmd := &cobra.Command{
		Use:                   "release DEPLOYMENT",
		DisableFlagsInUseLine: true,
		Short:                 "Hand a taken-over Deployment back to the built-in controller, without gray-controller",
		Long:                  releaseLong,
		Example:               releaseExample,
		ValidArgsFunction:     completeDeploymentNames(f),
		RunE:                  runE(f, o),
	}
	o.addWriteFlags(cmd)
	return cmd
}

// Complete reads the arguments, then the namespace and client from f.
func (o *ReleaseOptions) Complete(f cmdutil.Factory, args []string) error {
	if err := o.complete(args); err != nil {
		return err
	}
	return o.completeClient(f)
}

func (o *ReleaseOptions) complete(args []string) error {
	if err := o.completeName("release", args); err != nil {
		return err
	}
	return o.completeDryRun()
}

// Validate checks the output format.
func (o *ReleaseOptions) Validate() error {
	return o.validatePrinter()
}

// Run releases the Deployment: a server dry run first, so that a refusal by the guard policy
// leaves everything as it was, then the ReplicaSets' sizes, then the Deployment in two writes:
// the strategy restored while it stays paused, and only once the server kept that strategy,
// the unpause. The takeover policy, while kube-apiserver still runs it after an uninstall (it
// drops a deleted policy asynchronously, and not together with the guard), keeps a taken-over
// Deployment on Recreate when its strategy is set; unpaused on Recreate, the built-in
// controller would kill every old pod at once.
func (o *ReleaseOptions) Run(ctx context.Context) error {
	if err := o.resolveName(); err != nil {
		return err
	}
	var restored string
	userPaused := false
	restore := func(d *appsv1.Deployment) error {
		var err error
		restored, userPaused, err = released(d)
		return err
	}
	unpause := func(d *appsv1.Deployment) error {
		d.Spec.Paused = userPaused
		return nil
	}
	if o.DryRunStrategy != cmdutil.DryRunNone {
		res, err := writeDeployment(ctx, o.Client, o.Namespace, o.Name, o.DryRunStrategy, strategicPatch, restore, unpause)
		if err != nil {
			return err
		}
		return o.printRelease(res.After, restored)
	}
	dry, err := writeDeployment(ctx, o.Client, o.Namespace, o.Name, cmdutil.DryRunServer, strategicPatch, restore)
	if err != nil {
		return fmt.Errorf("%w; while gray-controller's admission policies are installed, gray-controller releases the Deployment itself: "+
			"remove %s ('kubectl annotate deployment %s -n %s %s-'), or uninstall gray-controller and its policies first",
			err, grayapi.PercentAnnotation, o.Name, o.Namespace, grayapi.PercentAnnotation)
	}
	if err := keptTakenOver(dry); err != nil {
		return err
	}
	if err := o.thaw(ctx); err != nil {
		return err
	}
	res, err := writeDeployment(ctx, o.Client, o.Namespace, o.Name, cmdutil.DryRunNone, strategicPatch, restore)
	if err != nil {
		return err
	}
	if !res.Changed {
		return o.printRelease(res.After, restored)
	}
	if err := keptTakenOver(res); err != nil {
		return err
	}
	if res, err = writeDeployment(ctx, o.Client, o.Namespace, o.Name, cmdutil.DryRunNone, strategicPatch, unpause); err != nil {
		return err
	}
	if err := o.dropGrayConditions(ctx); err != nil {
		return err
	}
	return o.printRelease(res.After, restored)
}

// printRelease says what the release did, or would do, to d: restored is the strategy it
// restored, empty when d was not taken over.
func (o *ReleaseOptions) printRelease(d *appsv1.Deployment, restored string) error {
	if restored == "" {
		return o.printResult("not taken over, nothing to release", d, o.Out)
	}
	how := "unpaused"
	if d.Spec.Paused {
		how = "left paused as its user paused it"
	}
	return o.printResult(fmt.Sprintf("released (strategy %s restored, %s)", restored, how), d, o.Out)
}

// keptTakenOver fails when the server answered a write that restored the strategy with a
// Deployment still taken over: an admission policy (kubegray-takeover, still run by the API
// server) saved the strategy again and kept Recreate. The Deployment is still paused then.
func keptTakenOver(res writeResult) error {
	saved, taken := res.After.Annotations[grayapi.StrategyAnnotation]
	if !res.Changed || !taken {
		return nil
	}
	d := res.After
	return fmt.Errorf("deployment %s/%s: the API server kept it taken over (strategy %s, %s=%s): the kubegray-takeover admission policy still acts; "+
		"nothing was unpaused: once 'kubectl get mutatingadmissionpolicy kubegray-takeover' finds none (the API server drops a deleted policy within seconds), "+
		"run kubectl gray release again", d.Namespace, d.Name, d.Spec.Strategy.Type, grayapi.StrategyAnnotation, grayapi.QuoteValue(saved))
}

// released turns a taken-over Deployment into the one it was before the takeover, still
// paused, and returns the strategy it restored and whether its user had paused it; a
// Deployment that is not taken over is left as it is.
func released(d *appsv1.Deployment) (restored string, userPaused bool, err error) {
	saved, taken := d.Annotations[grayapi.StrategyAnnotation]
	if !taken {
		return "", false, nil
	}
	strategy, err := grayapi.ParseStrategy(saved)
	if err != nil {
		return "", false, fmt.Errorf("deployment %s/%s: %w; set spec.strategy yourself after removing the annotation", d.Namespace, d.Name, err)
	}
	if strategy.Type == appsv1.RollingUpdateDeploymentStrategyType {
		strategy = withRollingDefaults(strategy)
	}
	_, userPaused = d.Annotations[grayapi.PausedAnnotation]
	d.Spec.Strategy = strategy
	for _, key := range []string{grayapi.StrategyAnnotation, grayapi.PausedAnnotation, grayapi.StatusAnnotation, grayapi.ResumeAnnotation} {
		delete(d.Annotations, key)
	}
	return saved, userPaused, nil
}

// withRollingDefaults fills in the API defaults (25%) for limits a saved strategy leaves out.
func withRollingDefaults(s appsv1.DeploymentStrategy) appsv1.DeploymentStrategy {
	quarter := intstr.FromString("25%")
	ru := appsv1.RollingUpdateDeployment{MaxSurge: &quarter, MaxUnavailable: &quarter}
	if s.RollingUpdate != nil {
		if s.RollingUpdate.MaxSurge != nil {
			ru.MaxSurge = s.RollingUpdate.MaxSurge
		}
		if s.RollingUpdate.MaxUnavailable != nil {
			ru.MaxUnavailable = s.RollingUpdate.MaxUnavailable
		}
	}
	s.RollingUpdate = &ru
	return s
}

// thaw removes the freeze label from the Deployment's ReplicaSets.
func (o *ReleaseOptions) thaw(ctx context.Context) error {
	d, err := o.Client.AppsV1().Deployments(o.Namespace).Get(ctx, o.Name, metav1.GetOptions{})
	if err != nil {
		return apiError(err, "get", o.Namespace, o.Name)
	}
	rss, _, err := ownedReplicaSets(ctx, o.Client, d)
	if err != nil {
		return err
	}
	patch := []byte(`{"metadata":{"labels":{"` + grayapi.FrozenLabel + `":null}}}`)
	for _, rs := range rss {
		if _, frozen := rs.Labels[grayapi.FrozenLabel]; !frozen {
			continue
		}
		if _, err := o.Client.AppsV1().ReplicaSets(rs.Namespace).Patch(ctx, rs.Name, types.MergePatchType, patch,
			metav1.PatchOptions{FieldManager: fieldManager}); err != nil {
			return fmt.Errorf("deployment %s/%s: handing the size of replica set %s back: %w", o.Namespace, o.Name, rs.Name, err)
		}
	}
	return nil
}

// dropGrayConditions removes gray-controller's conditions, which nobody keeps up any more.
func (o *ReleaseOptions) dropGrayConditions(ctx context.Context) error {
	var conditions []any
	for _, c := range grayapi.Conditions {
		conditions = append(conditions, map[string]any{"type": string(c), "$patch": "delete"})
	}
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": conditions}})
	if err != nil {
		return err
	}
	if _, err := o.Client.AppsV1().Deployments(o.Namespace).Patch(ctx, o.Name, types.StrategicMergePatchType, patch,
		metav1.PatchOptions{FieldManager: fieldManager}, "status"); err != nil {
		return apiError(err, "patch", o.Namespace, o.Name)
	}
	return nil
}
