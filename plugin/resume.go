package plugin

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/util/templates"

	"github.com/kubegray/kubectl-gray/pkg/deployutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

var (
	resumeLong = templates.LongDesc(`
		Let a held gray rollout go on: to the next hold point, or with --full to
		the end, skipping the remaining hold points.

		The request is written to the kubegray.io/resume annotation for the
		revision being rolled out; gray-controller consumes it. It is written only
		when gray-controller's status lists "next" (with --full, "full") among the
		requests it serves now, which 'kubectl gray status' shows; otherwise it is
		refused with the reason. gray-controller serves no resume of a rollout that
		has not reached its current hold point, so a resume can never skip a hold
		that has not been looked at; once reached, it serves one even while a scale
		of the held Deployment is being absorbed, and moves on once the hold stands
		again.`)

	resumeExample = templates.Examples(`
		# Go on to the next hold point
		kubectl gray resume web

		# Finish the rollout now
		kubectl gray resume deploy/web --full

		# Let the held rollouts of every Deployment labelled tier=frontend go on
		kubectl gray resume -l tier=frontend`)
)

// ResumeOptions holds what `kubectl gray resume` needs.
type ResumeOptions struct {
	// Flags.
	Full bool

	TargetOptions
	WriteOptions
	genericiooptions.IOStreams
}

// NewResumeOptions returns ResumeOptions with defaults.
func NewResumeOptions(streams genericiooptions.IOStreams) *ResumeOptions {
	return &ResumeOptions{WriteOptions: newWriteOptions(), IOStreams: streams}
}

// NewCmdResume returns `kubectl gray resume`.
func NewCmdResume(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := NewResumeOptions(streams)
	cmd := &cobra.Command{
		Use:                   "resume (DEPLOYMENT... | -l SELECTOR) [--full]",
		DisableFlagsInUseLine: true,
		Short:                 "Let a held gray rollout go on to the next hold point, or to the end",
		Long:                  resumeLong,
		Example:               resumeExample,
		ValidArgsFunction:     completeDeploymentNames(f),
		RunE:                  runE(f, o),
	}
	cmd.Flags().BoolVar(&o.Full, "full", o.Full, "Complete the rollout, skipping the remaining hold points.")
	o.addSelectorFlag(cmd, "resume")
	o.addWriteFlags(cmd)
	return cmd
}

// Complete reads the arguments, then the namespace and client from f.
func (o *ResumeOptions) Complete(f cmdutil.Factory, args []string) error {
	if err := o.complete(args); err != nil {
		return err
	}
	return o.completeClient(f)
}

func (o *ResumeOptions) complete(args []string) error {
	if err := o.completeNames("resume", args); err != nil {
		return err
	}
	return o.completeDryRun()
}

// Validate checks the output format.
func (o *ResumeOptions) Validate() error {
	return o.validatePrinter()
}

// Run writes the resume request.
func (o *ResumeOptions) Run(ctx context.Context) error {
	return writeRequests(ctx, &o.TargetOptions, &o.WriteOptions, o.Out, resumeDecision(o.Full))
}

// resumeDecision decides a resume request, to the next hold point or with full to the end.
func resumeDecision(full bool) decideRequest {
	return func(d *appsv1.Deployment, templateRevision func() (int64, bool, error)) (requestOutcome, error) {
		req, next, err := resumeRequest(d, templateRevision, full)
		return requestOutcome{req: req,
			done:  fmt.Sprintf("gray resumed to %d%% (revision %d)", next, req.Revision),
			again: fmt.Sprintf("gray resume to %d%% already requested (revision %d)", next, req.Revision)}, err
	}
}

// resumeRequest is the request that lets d's held rollout go on, and the share it goes on to:
// "next", or with full "full", written when gray-controller serves it for the rollout it
// reports (refuseUnserved). When d changed after that report, templateRevision (the revision
// of the ReplicaSet running d's template, if any) tells whether the change was a new template,
// whose rollout has not held yet and whose serves are not reported yet.
func resumeRequest(d *appsv1.Deployment, templateRevision func() (int64, bool, error), full bool) (grayapi.Resume, int32, error) {
	obj := fmt.Sprintf("deployment %s/%s", d.Namespace, d.Name)
	raw, ok := d.Annotations[grayapi.PercentAnnotation]
	if !ok {
		return grayapi.Resume{}, 0, fmt.Errorf("%s is not a gray Deployment (no %s annotation), so there is no hold to resume; make it one with 'kubectl gray set %s PERCENT'", obj, grayapi.PercentAnnotation, d.Name)
	}
	st, recorded, err := grayapi.RecordedStatus(d.Annotations)
	if !recorded {
		return grayapi.Resume{}, 0, fmt.Errorf("%s is not held: gray-controller has not reported on it yet; check that gray-controller is running, then 'kubectl gray status %s'", obj, d.Name)
	}
	if err != nil {
		return grayapi.Resume{}, 0, fmt.Errorf("%s: cannot tell whether it is held: %w", obj, err)
	}
	if changed, err := templateChanged(d, st, templateRevision); err != nil || changed {
		if err == nil {
			err = fmt.Errorf("%s has a new template since gray-controller reported the hold of revision %d; its rollout holds at the first point first, wait for it with 'kubectl gray status %s --until held'", obj, st.Revision, d.Name)
		}
		return grayapi.Resume{}, 0, err
	}
	if err := refuseUnserved(d, st, resumeServed(full), resumeRefusal(d, st)); err != nil {
		return grayapi.Resume{}, 0, err
	}
	rev, err := statusRevision(d, st, "resume")
	if err != nil {
		return grayapi.Resume{}, 0, err
	}
	req := grayapi.Resume{Revision: rev, Full: full}
	if full {
		return req, grayapi.FullPercent, nil
	}
	// Hold points that no longer parse were edited since the status (an annotation edit keeps
	// the generation), so what it serves was decided on other ones; the next share is unknown.
	points, err := grayapi.ParsePercent(raw)
	if err != nil {
		return grayapi.Resume{}, 0, fmt.Errorf("%s: %w; fix it with 'kubectl gray set %s PERCENT'", obj, err, d.Name)
	}
	return req, grayapi.StepPercent(points, st.Step+1), nil
}

// resumeServed is the request a resume makes of gray-controller.
func resumeServed(full bool) grayapi.Request {
	if full {
		return grayapi.RequestFull
	}
	return grayapi.RequestNext
}

// resumeRefusal explains why a resume of the rollout st reports is refused, where the state
// says: an Invalid or Aborted rollout, or one that has not reached its hold point (heldAt) and
// is not Held. It words refuseUnserved's refusal and does not decide it.
func resumeRefusal(d *appsv1.Deployment, st grayapi.Status) string {
	obj := fmt.Sprintf("deployment %s/%s", d.Namespace, d.Name)
	switch {
	case st.Phase == grayapi.PhaseInvalid:
		return fmt.Sprintf("%s is Invalid: %s; fix it with 'kubectl gray set %s PERCENT'", obj, st.Message, d.Name)
	case st.Phase == grayapi.PhaseAborted:
		return fmt.Sprintf("%s is Aborted (revision %d), so there is no hold to resume; %s", obj, st.Revision, againHint(d.Name))
	case st.Phase != grayapi.PhaseHeld && st.HeldAt == nil:
		return fmt.Sprintf("%s is not held (phase %s); only a rollout that has reached its hold point can be resumed, wait for the hold with 'kubectl gray status %s --until held'", obj, st.Phase, d.Name)
	}
	return ""
}

// newReplicaSetRevision is the revision of the ReplicaSet that runs d's
// template, and whether there is one.
func newReplicaSetRevision(ctx context.Context, client kubernetes.Interface, d *appsv1.Deployment) (int64, bool, error) {
	rss, _, err := ownedReplicaSets(ctx, client, d)
	if err != nil {
		return 0, false, err
	}
	return replicaSetRevision(deployutil.FindNewReplicaSet(d, rss))
}

// replicaSetRevision is rs's revision, and false for no ReplicaSet.
func replicaSetRevision(rs *appsv1.ReplicaSet) (int64, bool, error) {
	if rs == nil {
		return 0, false, nil
	}
	rev, err := deployutil.Revision(rs)
	return rev, err == nil, err
}
