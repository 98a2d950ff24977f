package plugin

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/util/templates"

	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

var (
	setLong = templates.LongDesc(`
		Make a Deployment gray, or change its hold points, by writing the
		kubegray.io/percent annotation. Every rollout of a gray Deployment stops at
		each hold point in turn until 'kubectl gray resume' lets it go on.

		Hold points are integers 0-99, strictly increasing, each with an optional %
		and an optional @DURATION (1s to 744h): how long that point's hold lasts
		before gray-controller resumes it by itself, winning over --hold-for for
		that point ("10@5m,50@30m"; in "10@5m,50" the second waits for
		kubegray.io/hold-for or 'kubectl gray resume'). They are checked before
		anything is sent to the cluster.

		With --image the new images go into the same patch as the hold points, so
		one command starts a gray rollout.

		--on-failure and --hold-for write the policy annotations in the same patch:
		kubegray.io/on-failure says whether a rollout that misses its progress
		deadline (Degraded) is left as it is for a person to look at (hold, the
		default) or aborted (abort: the canary goes to 0 and the stable revision
		back to all replicas, the template kept as written; the earlier name
		rollback is accepted and written as abort), and
		kubegray.io/hold-for makes each settled hold resume by itself after that
		long. Together they make a hands-off canary. Their values are
		checked before anything is sent, too.`)

	setExample = templates.Examples(`
		# Hold every rollout of web at 20% of its replicas
		kubectl gray set web 20

		# Start a gray rollout that holds at 10%, 30% and 60%
		kubectl gray set deploy/web 10,30,60 --image app=registry.example.com/web:1.27

		# Set hold points on every Deployment labelled tier=frontend, asking the server first
		kubectl gray set -l tier=frontend 25 --dry-run=server

		# A canary that goes on by itself after 10 minutes at each hold point, and is aborted if it fails
		kubectl gray set web 10,50 --image app=registry.example.com/web:1.28 --hold-for 10m --on-failure abort

		# Hold 5 minutes at 10%, then 30 minutes at 50%, then go to 100%
		kubectl gray set web 10@5m,50@30m --image app=registry.example.com/web:1.28

		# Holds wait for 'kubectl gray resume' again
		kubectl gray set web 10,50 --hold-for 0`)
)

// SetOptions holds what `kubectl gray set` needs.
type SetOptions struct {
	// Flags.
	Images []string
	// Takeover is "auto", "always" or "never": whether a template change
	// also takes the Deployment over for alongside mode (see takeOver).
	Takeover string
	// OnFailure and HoldFor are --on-failure and --hold-for, written to
	// the policy annotations when given.
	OnFailure optionalString
	HoldFor   optionalString

	// Filled in by Complete.
	HoldPoints    grayapi.HoldPoints
	ImageUpdates  []ContainerImage
	PolicyUpdates []annotationUpdate

	TargetOptions
	WriteOptions
	genericiooptions.IOStreams
}

// NewSetOptions returns SetOptions with defaults.
func NewSetOptions(streams genericiooptions.IOStreams) *SetOptions {
	return &SetOptions{
		Takeover:     takeoverAuto,
		WriteOptions: newWriteOptions(),
		IOStreams:    streams,
	}
}

// Values of --patch-takeover (named apart from gray-controller's --takeover admission|eager,
// which says how the controller expects Deployments to be taken over).
const (
	takeoverAuto   = "auto"
	takeoverAlways = "always"
	takeoverNever  = "never"
)

// NewCmdSet returns `kubectl gray set`.
func NewCmdSet(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := NewSetOptions(streams)
	cmd := &cobra.Command{
		Use:                   "set (DEPLOYMENT | -l SELECTOR) PERCENT[@DURATION][,PERCENT[@DURATION]...] [--image CONTAINER=IMAGE ...] [--on-failure hold|abort] [--hold-for DURATION]",
		DisableFlagsInUseLine: true,
		Short:                 "Set the hold points of a Deployment, optionally with new images",
		Long:                  setLong,
		Example:               setExample,
		ValidArgsFunction:     completeDeploymentNames(f),
		RunE:                  runE(f, o),
	}
	cmd.Flags().StringVarP(&o.Selector, "selector", "l", o.Selector, "Label selector choosing the Deployments to set, instead of a name (e.g. -l tier=frontend).")
	cmd.Flags().StringArrayVar(&o.Images, "image", o.Images, "CONTAINER=IMAGE to roll out with the hold points in the same patch; repeat for several containers.")
	cmd.Flags().StringVar(&o.Takeover, "patch-takeover", o.Takeover,
		`With --image, whether the same patch takes the Deployment over for gray-controller's alongside mode (paused, strategy Recreate, strategy saved in kubegray.io/strategy), so that the built-in deployment controller does not roll the new image out first: "auto" does unless gray-controller runs the Deployment in instead mode (its kubegray.io/status says so, or, without one, gray-controller owns its status.observedGeneration); "always"; "never".`)
	cmd.Flags().Var(&o.OnFailure, "on-failure",
		`What gray-controller does when a rollout misses its progress deadline (Degraded), written to kubegray.io/on-failure: "hold" reports it and changes nothing, "abort" sizes it back to the stable revision by itself, keeping the template ("rollback", the earlier name, is written as "abort"). An empty value removes the annotation (hold then applies).`)
	cmd.Flags().Var(&o.HoldFor, "hold-for",
		`How long each settled hold lasts before gray-controller resumes it to the next hold point by itself, unless its hold point names a duration of its own (10@5m), written to kubegray.io/hold-for: a Go duration from 1s to 744h, e.g. 10m or 1h30m. 0 or an empty value removes the annotation, so holds wait for 'kubectl gray resume'.`)
	o.addWriteFlags(cmd)
	_ = cmd.RegisterFlagCompletionFunc("on-failure", cobra.FixedCompletions([]string{string(grayapi.OnFailureHold), string(grayapi.OnFailureAbort)}, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("hold-for", cobra.NoFileCompletions)
	return cmd
}

// Complete reads the arguments, then the namespace and client from f.
func (o *SetOptions) Complete(f cmdutil.Factory, args []string) error {
	if err := o.complete(args); err != nil {
		return err
	}
	return o.completeClient(f)
}

// complete parses arguments and flags; it needs no cluster, so a bad value
// is reported before any client is built.
func (o *SetOptions) complete(args []string) error {
	var percent string
	switch {
	case o.Selector != "" && len(args) == 1:
		percent = args[0]
	case o.Selector == "" && len(args) == 2:
		o.Args, percent = args[:1], args[1]
	case o.Selector != "":
		return fmt.Errorf("with -l, give only the hold points, e.g. 'kubectl gray set -l %s 10,30,60'", o.Selector)
	default:
		return fmt.Errorf("give a Deployment and hold points, e.g. 'kubectl gray set web 10,30,60'")
	}
	points, err := grayapi.ParseHoldPoints(percent)
	if err != nil {
		return err
	}
	o.HoldPoints = points
	o.ImageUpdates = nil
	for _, arg := range o.Images {
		name, image, ok := strings.Cut(arg, "=")
		if !ok || name == "" || image == "" {
			return fmt.Errorf("invalid --image %q: use CONTAINER=IMAGE, e.g. --image app=nginx:1.27", arg)
		}
		o.ImageUpdates = append(o.ImageUpdates, ContainerImage{Name: name, Image: image})
	}
	switch o.Takeover {
	case takeoverAuto, takeoverAlways, takeoverNever:
	default:
		return fmt.Errorf("invalid --patch-takeover %q: must be %q, %q or %q", o.Takeover, takeoverAuto, takeoverAlways, takeoverNever)
	}
	if err := o.completePolicy(); err != nil {
		return err
	}
	return o.completeDryRun()
}

// annotationUpdate is one policy annotation a set writes, or removes.
type annotationUpdate struct {
	// Flag names the update in the result line.
	Flag   string
	Key    string
	Value  string
	Remove bool
}

// completePolicy checks --on-failure and --hold-for with the annotation
// API's parsers, so that a bad value is refused before anything is sent.
// An empty value, and a --hold-for of 0, remove the annotation: the way back
// to the defaults without kubectl annotate.
func (o *SetOptions) completePolicy() error {
	o.PolicyUpdates = nil
	if o.OnFailure.set {
		u := annotationUpdate{Flag: "on-failure", Key: grayapi.OnFailureAnnotation}
		if value := strings.TrimSpace(o.OnFailure.value); value == "" {
			u.Remove = true
		} else {
			onFailure, err := grayapi.ParseOnFailure(value, true)
			if err != nil {
				return fmt.Errorf("--on-failure: %w", err)
			}
			// Written as parsed, so "rollback" lands as "abort": one word for
			// one meaning in the cluster, which gray-controller reads either way.
			u.Value = string(onFailure)
		}
		o.PolicyUpdates = append(o.PolicyUpdates, u)
	}
	if o.HoldFor.set {
		// Written as given (a valid "10m" stays "10m"), the way it would be
		// kept in Git.
		u := annotationUpdate{Flag: "hold-for", Key: grayapi.HoldForAnnotation, Value: strings.TrimSpace(o.HoldFor.value)}
		if u.Value == "" || u.Value == "0" {
			u.Value, u.Remove = "", true
		} else if _, err := grayapi.ParseHoldFor(u.Value); err != nil {
			return fmt.Errorf("--hold-for: %w", err)
		}
		o.PolicyUpdates = append(o.PolicyUpdates, u)
	}
	return nil
}

// Validate checks flag combinations.
func (o *SetOptions) Validate() error {
	seen := map[string]bool{}
	for _, u := range o.ImageUpdates {
		if seen[u.Name] {
			return fmt.Errorf("--image names container %q twice", u.Name)
		}
		seen[u.Name] = true
	}
	return o.validatePrinter()
}

// Run writes the hold points (and images) to each chosen Deployment, one
// patch per Deployment. With -l it goes on after a failure and reports all
// failures at the end, as kubectl does (eachTarget).
func (o *SetOptions) Run(ctx context.Context) error {
	return o.eachTarget(ctx, func(name string) error { return o.setOne(ctx, name) })
}

// edits are the changes of one set, applied to the same copy of the
// Deployment and sent as one patch. The alongside-mode takeover (pause,
// Recreate, saved strategy) comes after the image edit, so the template
// change and the takeover reach the API server in one write; took reports
// whether the last application of the edits took the Deployment over.
func (o *SetOptions) edits(took *bool) []edit {
	edits := []edit{o.setHoldPoints, o.setPolicy}
	if len(o.ImageUpdates) > 0 {
		var before *corev1.PodTemplateSpec
		edits = append(edits,
			func(d *appsv1.Deployment) error {
				before = d.Spec.Template.DeepCopy()
				return o.setImages(d)
			},
			func(d *appsv1.Deployment) error {
				*took = false
				if apiequality.Semantic.DeepEqual(before, &d.Spec.Template) {
					return nil // no new revision, nothing to take over for
				}
				var err error
				*took, err = o.takeOver(d)
				return err
			})
	}
	return edits
}

func (o *SetOptions) setHoldPoints(d *appsv1.Deployment) error {
	metav1.SetMetaDataAnnotation(&d.ObjectMeta, grayapi.PercentAnnotation, grayapi.FormatHoldPoints(o.HoldPoints))
	return nil
}

func (o *SetOptions) setPolicy(d *appsv1.Deployment) error {
	for _, u := range o.PolicyUpdates {
		if u.Remove {
			delete(d.Annotations, u.Key)
		} else {
			metav1.SetMetaDataAnnotation(&d.ObjectMeta, u.Key, u.Value)
		}
	}
	return nil
}

// policyText describes the policy updates for the result line, e.g.
// ", on-failure abort, hold-for removed".
func (o *SetOptions) policyText() string {
	var b strings.Builder
	for _, u := range o.PolicyUpdates {
		value := u.Value
		if u.Remove {
			value = "removed"
		}
		fmt.Fprintf(&b, ", %s %s", u.Flag, value)
	}
	return b.String()
}

// setImages sets the image of each named container, init containers
// included, as kubectl set image does.
func (o *SetOptions) setImages(d *appsv1.Deployment) error {
	spec := &d.Spec.Template.Spec
	for _, u := range o.ImageUpdates {
		c := findContainer(spec, u.Name)
		if c == nil {
			return fmt.Errorf("deployment %s/%s has no container %q; its containers are: %s",
				d.Namespace, d.Name, u.Name, strings.Join(containerNames(spec), ", "))
		}
		c.Image = u.Image
	}
	return nil
}

func findContainer(spec *corev1.PodSpec, name string) *corev1.Container {
	for _, list := range [][]corev1.Container{spec.Containers, spec.InitContainers} {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
	}
	return nil
}

func containerNames(spec *corev1.PodSpec) []string {
	var names []string
	for _, c := range spec.InitContainers {
		names = append(names, c.Name+" (init)")
	}
	for _, c := range spec.Containers {
		names = append(names, c.Name)
	}
	return names
}

func (o *SetOptions) setOne(ctx context.Context, name string) error {
	var took bool
	res, err := writeDeployment(ctx, o.Client, o.Namespace, name, o.DryRunStrategy, strategicPatch, o.edits(&took)...)
	if err != nil {
		return err
	}
	points := grayapi.FormatHoldPoints(o.HoldPoints) + o.policyText()
	operation := "gray set to " + points
	if !res.Changed {
		operation = "gray unchanged at " + points
	}
	if changes := imageChanges(templateImages(&res.Before.Spec.Template.Spec), templateImages(&res.After.Spec.Template.Spec)); changes != "" {
		operation += " (" + changes + ")"
	}
	operation += takeoverText(took, res.Before, res.After)
	return o.printResult(operation, res.After, o.Out)
}

// takeoverText says which takeover path took the Deployment over in this write, if any:
// this command's own patch, or the kubegray-takeover admission policy acting on it; and for
// an eager alongside controller, that it keeps the Deployment taken over while annotated.
func takeoverText(took bool, before, after *appsv1.Deployment) string {
	saved, taken := after.Annotations[grayapi.StrategyAnnotation]
	_, wasTaken := before.Annotations[grayapi.StrategyAnnotation]
	st, recorded, err := grayapi.RecordedStatus(after.Annotations)
	eager := recorded && err == nil && st.Takeover == grayapi.TakeoverEager
	switch {
	case took:
		return ", taken over by kubectl gray (strategy " + saved + " saved)"
	case taken && !wasTaken:
		return ", taken over by the kubegray-takeover admission policy (strategy " + saved + " saved)"
	case taken && eager:
		return ", taken over by gray-controller --takeover=eager while annotated"
	}
	return ""
}
