package plugin

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/util/templates"

	"github.com/kubegray/kubectl-gray/pkg/deployutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

var (
	abortLong = templates.LongDesc(`
		Stop the gray rollout in flight and put every replica back on the stable
		revision, without touching the pod template.

		gray-controller scales the canary's ReplicaSet to 0 and the stable
		revision's back to all replicas. spec.template stays as it was written, so
		Git (or whoever wrote it) stays the source of truth and a GitOps tool's
		self-heal has nothing to re-apply. The phase becomes Aborted and the
		Stalled condition True; nothing rolls again until the template changes or
		'kubectl gray retry' starts the same revision again.

		'kubectl gray undo' is the other way back: it writes the stable revision's
		template into the Deployment, for Deployments nobody re-applies from Git.

		The request is written to the kubegray.io/resume annotation for the
		revision being rolled out; gray-controller consumes it. It is written only
		when gray-controller's status lists "abort" among the requests it serves
		now, which 'kubectl gray status' shows (a rollout in flight, Progressing,
		Held, Degraded or Invalid, with a stable revision to go back to); otherwise
		it is refused with the reason.`)

	abortExample = templates.Examples(`
		# Send every replica of web back to its stable revision, keeping the template
		kubectl gray abort web

		# Abort the rollouts of web and api
		kubectl gray abort web api

		# See the request that would be written, without writing it
		kubectl gray abort deploy/web --dry-run=client -o yaml`)
)

// AbortOptions holds what `kubectl gray abort` needs.
type AbortOptions struct {
	TargetOptions
	WriteOptions
	genericiooptions.IOStreams
}

// NewAbortOptions returns AbortOptions with defaults.
func NewAbortOptions(streams genericiooptions.IOStreams) *AbortOptions {
	return &AbortOptions{WriteOptions: newWriteOptions(), IOStreams: streams}
}

// NewCmdAbort returns `kubectl gray abort`.
func NewCmdAbort(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := NewAbortOptions(streams)
	cmd := &cobra.Command{
		Use:                   "abort (DEPLOYMENT... | -l SELECTOR)",
		DisableFlagsInUseLine: true,
		Short:                 "Size a gray rollout back to its stable revision, keeping the template",
		Long:                  abortLong,
		Example:               abortExample,
		ValidArgsFunction:     completeDeploymentNames(f),
		RunE:                  runE(f, o),
	}
	o.addSelectorFlag(cmd, "abort")
	o.addWriteFlags(cmd)
	return cmd
}

// Complete reads the arguments, then the namespace and client from f.
func (o *AbortOptions) Complete(f cmdutil.Factory, args []string) error {
	if err := o.complete(args); err != nil {
		return err
	}
	return o.completeClient(f)
}

func (o *AbortOptions) complete(args []string) error {
	if err := o.completeNames("abort", args); err != nil {
		return err
	}
	return o.completeDryRun()
}

// Validate checks the output format.
func (o *AbortOptions) Validate() error {
	return o.validatePrinter()
}

// Run writes the abort request.
func (o *AbortOptions) Run(ctx context.Context) error {
	return writeRequests(ctx, &o.TargetOptions, &o.WriteOptions, o.Out, decideAbort)
}

// decideAbort decides an abort request.
func decideAbort(d *appsv1.Deployment, templateRevision func() (int64, bool, error)) (requestOutcome, error) {
	req, stable, err := abortRequest(d, templateRevision)
	return requestOutcome{req: req,
		done:  fmt.Sprintf("gray abort requested (revision %d back to stable revision %d, template kept)", req.Revision, stable),
		again: fmt.Sprintf("gray abort already requested (revision %d)", req.Revision)}, err
}

// abortRequest is the request that aborts d's rollout in flight, and the stable revision it
// goes back to, written when gray-controller serves "abort" for the rollout it reports
// (refuseUnserved). It refuses when d has a template that gray-controller has not reported on
// yet: the request would name the old revision, and gray-controller drops a request for any
// other revision.
func abortRequest(d *appsv1.Deployment, templateRevision func() (int64, bool, error)) (grayapi.Resume, int64, error) {
	obj := fmt.Sprintf("deployment %s/%s", d.Namespace, d.Name)
	st, err := reportedStatus(d, "abort")
	if err != nil {
		return grayapi.Resume{}, 0, err
	}
	if changed, err := templateChanged(d, st, templateRevision); err != nil || changed {
		if err == nil {
			err = fmt.Errorf("%s has a new template since gray-controller reported on revision %d (phase %s); wait until it reports on the new rollout ('kubectl gray status %s'), then abort it",
				obj, st.Revision, st.Phase, d.Name)
		}
		return grayapi.Resume{}, 0, err
	}
	if err := refuseUnserved(d, st, grayapi.RequestAbort, abortRefusal(d, st)); err != nil {
		return grayapi.Resume{}, 0, err
	}
	rev, err := statusRevision(d, st, "abort")
	if err != nil {
		return grayapi.Resume{}, 0, err
	}
	return grayapi.Resume{Revision: rev, Abort: true}, st.StableRevision, nil
}

// abortRefusal explains why an abort of the rollout st reports is refused, where the state
// says: no rollout in flight, or nothing to go back to (scaling the canary to 0 would then
// leave no pods at all). It words refuseUnserved's refusal and does not decide it.
func abortRefusal(d *appsv1.Deployment, st grayapi.Status) string {
	obj := fmt.Sprintf("deployment %s/%s", d.Namespace, d.Name)
	switch st.Phase {
	case grayapi.PhaseProgressing, grayapi.PhaseHeld, grayapi.PhaseDegraded, grayapi.PhaseInvalid:
	case grayapi.PhaseAborted:
		return fmt.Sprintf("%s is already Aborted (revision %d); %s", obj, st.Revision, againHint(d.Name))
	case grayapi.PhaseRolledBack:
		return fmt.Sprintf("%s has no rollout in flight to abort (phase RolledBack): it is already going back to stable revision %d", obj, st.StableRevision)
	default:
		return fmt.Sprintf("%s has no rollout in flight to abort (phase %s): revision %d is rolled out; 'kubectl gray undo %s' rolls it back",
			obj, st.Phase, st.Revision, d.Name)
	}
	switch {
	case st.Failure != nil && st.Failure.Reason == grayapi.ReasonStableReplicaSetGone:
		return fmt.Sprintf("%s cannot be aborted: the replica set of its stable revision %d is gone, so the canary is all there is; finish the rollout with 'kubectl gray resume %s --full', or roll back to another revision with 'kubectl gray undo %s --to-revision N'",
			obj, st.StableRevision, d.Name, d.Name)
	case st.StableRevision < 1:
		return fmt.Sprintf("%s has no stable revision to go back to (gray-controller reports none for revision %d), so an abort would leave no pods; roll back to another revision with 'kubectl gray undo %s --to-revision N' instead",
			obj, st.Revision, d.Name)
	}
	return ""
}

// againHint says how an Aborted rollout goes on, so that the verbs and the
// status view say it in the same words.
func againHint(name string) string {
	return fmt.Sprintf("'kubectl gray retry %s', or a new template, starts again; 'kubectl gray undo %s' writes the stable template back", name, name)
}

// reportedStatus is gray-controller's status of d, for a verb that acts on
// the rollout it reports. It refuses a Deployment that is not gray or has no
// readable status yet, naming the verb.
func reportedStatus(d *appsv1.Deployment, verb string) (grayapi.Status, error) {
	obj := fmt.Sprintf("deployment %s/%s", d.Namespace, d.Name)
	if _, ok := d.Annotations[grayapi.PercentAnnotation]; !ok {
		return grayapi.Status{}, fmt.Errorf("%s is not a gray Deployment (no %s annotation), so there is no gray rollout to %s; make it one with 'kubectl gray set %s PERCENT'",
			obj, grayapi.PercentAnnotation, verb, d.Name)
	}
	st, recorded, err := grayapi.RecordedStatus(d.Annotations)
	if !recorded {
		return grayapi.Status{}, fmt.Errorf("%s has no rollout to %s: gray-controller has not reported on it yet; check that gray-controller is running, then 'kubectl gray status %s'",
			obj, verb, d.Name)
	}
	if err != nil {
		return grayapi.Status{}, fmt.Errorf("%s: cannot tell which rollout to %s: %w", obj, verb, err)
	}
	return st, nil
}

// templateChanged reports whether d's template changed since gray-controller
// wrote st. A newer generation alone (a scale) is no change: templateRevision,
// the revision of the ReplicaSet running d's template, then still is st's.
func templateChanged(d *appsv1.Deployment, st grayapi.Status, templateRevision func() (int64, bool, error)) (bool, error) {
	if st.ObservedGeneration >= d.Generation {
		return false, nil
	}
	rev, found, err := templateRevision()
	if err != nil {
		return false, fmt.Errorf("deployment %s/%s: %w", d.Namespace, d.Name, err)
	}
	return !found || rev != st.Revision, nil
}

// statusRevision is the revision a request names: the one gray-controller
// reports, or the Deployment's own when an older status has none.
func statusRevision(d *appsv1.Deployment, st grayapi.Status, verb string) (int64, error) {
	rev := st.Revision
	if rev == 0 {
		var err error
		if rev, err = deployutil.Revision(d); err != nil {
			return 0, fmt.Errorf("deployment %s/%s: %w", d.Namespace, d.Name, err)
		}
	}
	if rev < 1 {
		return 0, fmt.Errorf("deployment %s/%s has no revision yet, so there is nothing to %s", d.Namespace, d.Name, verb)
	}
	return rev, nil
}
