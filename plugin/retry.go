package plugin

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/util/templates"

	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

var (
	retryLong = templates.LongDesc(`
		Start an Aborted gray rollout again, from its first hold point, with the
		template the Deployment already has.

		An aborted revision stays aborted until its template changes or it is
		retried, so that nothing re-applied from Git rolls a failed canary out
		again by itself. Retry is for when the cause was outside the template: a
		missing image that has since been pushed, a quota raised, a node added.
		To go back to the stable template instead, use 'kubectl gray undo'.

		The request is written to the kubegray.io/resume annotation for the
		aborted revision; gray-controller consumes it. It is written only when
		gray-controller's status lists "retry" among the requests it serves now,
		which 'kubectl gray status' shows; otherwise it is refused with the
		reason.`)

	retryExample = templates.Examples(`
		# Roll the aborted revision of web out again, holding at the first hold point
		kubectl gray retry web

		# See the request that would be written, without writing it
		kubectl gray retry deploy/web --dry-run=client -o yaml`)
)

// RetryOptions holds what `kubectl gray retry` needs.
type RetryOptions struct {
	TargetOptions
	WriteOptions
	genericiooptions.IOStreams
}

// NewRetryOptions returns RetryOptions with defaults.
func NewRetryOptions(streams genericiooptions.IOStreams) *RetryOptions {
	return &RetryOptions{WriteOptions: newWriteOptions(), IOStreams: streams}
}

// NewCmdRetry returns `kubectl gray retry`.
func NewCmdRetry(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := NewRetryOptions(streams)
	cmd := &cobra.Command{
		Use:                   "retry (DEPLOYMENT... | -l SELECTOR)",
		DisableFlagsInUseLine: true,
		Short:                 "Start an aborted gray rollout again at its first hold point",
		Long:                  retryLong,
		Example:               retryExample,
		ValidArgsFunction:     completeDeploymentNames(f),
		RunE:                  runE(f, o),
	}
	o.addSelectorFlag(cmd, "retry")
	o.addWriteFlags(cmd)
	return cmd
}

// Complete reads the arguments, then the namespace and client from f.
func (o *RetryOptions) Complete(f cmdutil.Factory, args []string) error {
	if err := o.complete(args); err != nil {
		return err
	}
	return o.completeClient(f)
}

func (o *RetryOptions) complete(args []string) error {
	if err := o.completeNames("retry", args); err != nil {
		return err
	}
	return o.completeDryRun()
}

// Validate checks the output format.
func (o *RetryOptions) Validate() error {
	return o.validatePrinter()
}

// Run writes the retry request.
func (o *RetryOptions) Run(ctx context.Context) error {
	return writeRequests(ctx, &o.TargetOptions, &o.WriteOptions, o.Out, decideRetry)
}

// decideRetry decides a retry request.
func decideRetry(d *appsv1.Deployment, templateRevision func() (int64, bool, error)) (requestOutcome, error) {
	req, first, err := retryRequest(d, templateRevision)
	return requestOutcome{req: req,
		done:  fmt.Sprintf("gray retry requested (revision %d starts again at %d%%)", req.Revision, first),
		again: fmt.Sprintf("gray retry already requested (revision %d)", req.Revision)}, err
}

// retryRequest is the request that starts d's aborted rollout again, and the first hold point
// it goes to, written when gray-controller serves "retry" for the rollout it reports
// (refuseUnserved), so that a retry it would drop with a Warning event is refused here with
// the reason.
func retryRequest(d *appsv1.Deployment, templateRevision func() (int64, bool, error)) (grayapi.Resume, int32, error) {
	obj := fmt.Sprintf("deployment %s/%s", d.Namespace, d.Name)
	st, err := reportedStatus(d, "retry")
	if err != nil {
		return grayapi.Resume{}, 0, err
	}
	if changed, err := templateChanged(d, st, templateRevision); err != nil || changed {
		if err == nil {
			// The new template is a new rollout: it starts at the first hold point by itself.
			err = fmt.Errorf("%s has a new template since gray-controller reported on revision %d (phase %s); its rollout starts by itself, follow it with 'kubectl gray status %s'",
				obj, st.Revision, st.Phase, d.Name)
		}
		return grayapi.Resume{}, 0, err
	}
	if err := refuseUnserved(d, st, grayapi.RequestRetry, retryRefusal(d, st)); err != nil {
		return grayapi.Resume{}, 0, err
	}
	points, err := grayapi.ParsePercent(d.Annotations[grayapi.PercentAnnotation])
	if err != nil {
		// Not a rule of gray-controller's but the request's own content: the retried rollout
		// starts again at the first hold point, and these hold points (edited since the
		// status, as an annotation edit keeps the generation) do not parse; it would only be
		// stopped as Invalid.
		return grayapi.Resume{}, 0, fmt.Errorf("%s: %w; fix it with 'kubectl gray set %s PERCENT' first", obj, err, d.Name)
	}
	rev, err := statusRevision(d, st, "retry")
	if err != nil {
		return grayapi.Resume{}, 0, err
	}
	return grayapi.Resume{Revision: rev, Retry: true}, grayapi.StepPercent(points, 0), nil
}

// retryRefusal explains why a retry of the rollout st reports is refused, where the state
// says: only an Aborted rollout is retried. It words refuseUnserved's refusal and does not
// decide it.
func retryRefusal(d *appsv1.Deployment, st grayapi.Status) string {
	if st.Phase == grayapi.PhaseAborted {
		return ""
	}
	return fmt.Sprintf("deployment %s/%s is not Aborted (phase %s, revision %d); only an aborted rollout can be retried, see 'kubectl gray status %s'",
		d.Namespace, d.Name, st.Phase, st.Revision, d.Name)
}
