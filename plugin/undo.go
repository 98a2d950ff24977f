package plugin

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/util/templates"

	"github.com/kubegray/kubectl-gray/pkg/deployutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

var (
	undoLong = templates.LongDesc(`
		Roll a Deployment back to its stable revision (the one fully rolled out
		before the current rollout), or to --to-revision N.

		The pod template of that revision's ReplicaSet replaces the Deployment's in
		one patch, with the annotations kubectl rollout undo would carry over; the
		kubegray.io annotations of the Deployment are kept. Unlike kubectl rollout
		undo, this works while the rollout is held (paused). gray-controller then
		rolls back without stopping at any hold point.`)

	undoExample = templates.Examples(`
		# Roll web back to its stable revision
		kubectl gray undo web

		# Roll back to revision 3 (see 'kubectl gray history web')
		kubectl gray undo deploy/web --to-revision 3

		# See the template a rollback would apply, without applying it
		kubectl gray undo web --dry-run=client -o yaml`)
)

// UndoOptions holds what `kubectl gray undo` needs.
type UndoOptions struct {
	// Flags.
	ToRevision int64

	TargetOptions
	WriteOptions
	genericiooptions.IOStreams
}

// NewUndoOptions returns UndoOptions with defaults.
func NewUndoOptions(streams genericiooptions.IOStreams) *UndoOptions {
	return &UndoOptions{WriteOptions: newWriteOptions(), IOStreams: streams}
}

// NewCmdUndo returns `kubectl gray undo`.
func NewCmdUndo(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := NewUndoOptions(streams)
	cmd := &cobra.Command{
		Use:                   "undo (DEPLOYMENT... | -l SELECTOR) [--to-revision N]",
		DisableFlagsInUseLine: true,
		Short:                 "Roll a Deployment back to its stable revision, even while held",
		Long:                  undoLong,
		Example:               undoExample,
		ValidArgsFunction:     completeDeploymentNames(f),
		RunE:                  runE(f, o),
	}
	cmd.Flags().Int64Var(&o.ToRevision, "to-revision", o.ToRevision, "The revision to roll back to. 0 means the stable revision from kubegray.io/status.")
	o.addSelectorFlag(cmd, "roll back")
	o.addWriteFlags(cmd)
	return cmd
}

// Complete reads the arguments, then the namespace and client from f.
func (o *UndoOptions) Complete(f cmdutil.Factory, args []string) error {
	if err := o.complete(args); err != nil {
		return err
	}
	return o.completeClient(f)
}

func (o *UndoOptions) complete(args []string) error {
	if err := o.completeNames("undo", args); err != nil {
		return err
	}
	return o.completeDryRun()
}

// Validate checks the flags.
func (o *UndoOptions) Validate() error {
	if o.ToRevision < 0 {
		return fmt.Errorf("invalid --to-revision %d: revisions start at 1", o.ToRevision)
	}
	return o.validatePrinter()
}

// Run rolls the template of each Deployment back in one patch.
func (o *UndoOptions) Run(ctx context.Context) error {
	return o.eachTarget(ctx, func(name string) error {
		res, err := undoRevision(ctx, o.Client, o.Namespace, name, o.DryRunStrategy, o.ToRevision)
		if err != nil {
			return err
		}
		if res.applyManaged {
			fmt.Fprintf(o.ErrOut, "Warning: %s is managed with 'kubectl apply'; the rollback does not change its %s annotation, so apply the configuration of revision %d next, or the next apply undoes the rollback.\n",
				deploymentRef(name), corev1.LastAppliedConfigAnnotation, res.target)
		}
		return o.printResult(res.operation, res.after, o.Out)
	})
}

// undoResult is what an undo did.
type undoResult struct {
	// operation says it, e.g. "rolled back to revision 3 (web: v2 -> v1)".
	operation string
	after     *appsv1.Deployment
	// target is the revision rolled back to.
	target int64
	// applyManaged is true when the Deployment carries kubectl apply's last-applied
	// configuration, which the undo leaves as it was.
	applyManaged bool
}

// undoRevision writes the template of revision toRevision (0: the stable revision) into
// Deployment namespace/name in one patch. `kubectl gray undo` and the dashboard's undo both
// write through it.
func undoRevision(ctx context.Context, client kubernetes.Interface, namespace, name string, dryRun cmdutil.DryRunStrategy, toRevision int64) (undoResult, error) {
	var target int64
	res, err := writeDeployment(ctx, client, namespace, name, dryRun, templatePatch, func(d *appsv1.Deployment) error {
		rss, _, err := ownedReplicaSets(ctx, client, d)
		if err != nil {
			return err
		}
		if target, err = undoTarget(d, toRevision); err != nil {
			return err
		}
		rs, err := replicaSetOfRevision(d, rss, target, toRevision == 0)
		if err != nil {
			return err
		}
		if !deployutil.EqualIgnoreHash(&rs.Spec.Template, &d.Spec.Template) {
			undoTo(d, rs)
		}
		return nil
	})
	if err != nil {
		return undoResult{}, err
	}
	if !res.Changed {
		return undoResult{operation: fmt.Sprintf("skipped rollback (current template already matches revision %d)", target), after: res.After, target: target}, nil
	}
	_, applyManaged := res.Before.Annotations[corev1.LastAppliedConfigAnnotation]
	operation := fmt.Sprintf("rolled back to revision %d", target)
	if changes := imageChanges(templateImages(&res.Before.Spec.Template.Spec), templateImages(&res.After.Spec.Template.Spec)); changes != "" {
		operation += " (" + changes + ")"
	} else {
		operation += " (images unchanged)"
	}
	return undoResult{operation: operation, after: res.After, target: target, applyManaged: applyManaged}, nil
}

// undoTarget is the revision to roll back to: toRevision if given, else the
// stable revision gray-controller recorded.
func undoTarget(d *appsv1.Deployment, toRevision int64) (int64, error) {
	if toRevision > 0 {
		return toRevision, nil
	}
	obj := fmt.Sprintf("deployment %s/%s", d.Namespace, d.Name)
	hint := fmt.Sprintf("choose one with --to-revision N (see 'kubectl gray history %s')", d.Name)
	st, recorded, err := grayapi.RecordedStatus(d.Annotations)
	if !recorded {
		return 0, fmt.Errorf("%s has no %s annotation to take the stable revision from; %s", obj, grayapi.StatusAnnotation, hint)
	}
	if err != nil {
		return 0, fmt.Errorf("%s: %w; %s", obj, err, hint)
	}
	if st.StableRevision < 1 {
		return 0, fmt.Errorf("%s has no stable revision yet; %s", obj, hint)
	}
	return st.StableRevision, nil
}

// replicaSetOfRevision finds the ReplicaSet of a revision: the one that has it, or had it
// before a rollback renumbered it. For the stable revision the ReplicaSet gray-controller
// labelled stable wins (its record outlives any copy of the status).
func replicaSetOfRevision(d *appsv1.Deployment, rss []*appsv1.ReplicaSet, rev int64, stable bool) (*appsv1.ReplicaSet, error) {
	if stable {
		for _, rs := range rss {
			if rs.Labels[grayapi.StableLabel] == grayapi.StableLabelValue {
				return rs, nil
			}
		}
	}
	var known []int64
	for _, rs := range rss {
		r, err := deployutil.Revision(rs)
		if err != nil {
			continue
		}
		if r == rev || deployutil.RevisionHistoryContains(rs, rev) {
			return rs, nil
		}
		known = append(known, r)
	}
	slices.Sort(known)
	have := "it has none"
	if len(known) > 0 {
		s := make([]string, len(known))
		for i, r := range known {
			s[i] = strconv.FormatInt(r, 10)
		}
		have = "it has " + strings.Join(s, ", ")
	}
	if stable {
		return nil, fmt.Errorf("deployment %s/%s: the replica set of its stable revision %d is gone (deleted), so there is nothing to roll back to; "+
			"finish the rollout with 'kubectl gray resume %s --full', or roll back to another revision with --to-revision N (%s; see 'kubectl gray history %s')",
			d.Namespace, d.Name, rev, d.Name, have, d.Name)
	}
	return nil, fmt.Errorf("deployment %s/%s has no revision %d (%s); see 'kubectl gray history %s'", d.Namespace, d.Name, rev, have, d.Name)
}

// keepOnUndo reports whether an undo keeps an annotation of the live
// Deployment instead of taking it from the ReplicaSet: the ones the
// Deployment controller owns, last-applied-configuration (as kubectl rollout
// undo does), and the gray API, of which an old ReplicaSet may carry stale
// copies.
func keepOnUndo(key string) bool {
	return deployutil.SkipCopyAnnotation(key) || grayapi.IsGrayAnnotation(key)
}

// undoTo sets d's template to rs's without the pod-template-hash label,
// and its annotations to the kept ones of d plus the others of rs.
func undoTo(d *appsv1.Deployment, rs *appsv1.ReplicaSet) {
	deployutil.SetFromReplicaSetTemplate(d, rs.Spec.Template)
	deployutil.SetDeploymentAnnotationsKeeping(d, rs, keepOnUndo)
}
