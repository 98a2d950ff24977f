package plugin

// The verbs that act on several Deployments at once (status, resume, undo, abort, retry,
// restart, and set with -l), named or chosen with -l, the way kubectl's rollout verbs take them.

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
)

// addSelectorFlag adds -l/--selector, choosing the Deployments instead of naming them.
func (o *TargetOptions) addSelectorFlag(cmd *cobra.Command, verb string) {
	cmd.Flags().StringVarP(&o.Selector, "selector", "l", o.Selector,
		fmt.Sprintf("Label selector choosing the Deployments to %s, instead of names (e.g. -l tier=frontend).", verb))
}

// completeNames reads the DEPLOYMENT arguments of a verb that takes several, or none with -l;
// verb goes into the example of the error.
func (o *TargetOptions) completeNames(verb string, args []string) error {
	switch {
	case o.Selector != "" && len(args) > 0:
		return fmt.Errorf("give Deployment names or -l %s, not both", o.Selector)
	case o.Selector == "" && len(args) == 0:
		return fmt.Errorf("give one or more Deployments, or -l SELECTOR, e.g. 'kubectl gray %s web'", verb)
	}
	o.Args = args
	return nil
}

// resolveNames are the names of the Deployments the arguments name (deploymentName), in their
// order, or those -l selects (selectedDeployments). A bad argument refuses the whole command
// before anything is done, as kubectl refuses an unknown type.
func (o *TargetOptions) resolveNames() ([]string, error) {
	if o.Selector != "" {
		return selectedDeployments(o.Getter, o.Namespace, o.Selector)
	}
	names := make([]string, len(o.Args))
	for i, arg := range o.Args {
		name, err := deploymentName(o.Getter, o.Namespace, arg)
		if err != nil {
			return nil, err
		}
		names[i] = name
	}
	return names, nil
}

// eachTarget runs one on every Deployment resolveNames returns, in order, and goes on after a
// failure as kubectl does, returning the failures together (objectErrors). A server that
// cannot be reached, or an interrupt (ctx done), stops it at once: every other Deployment
// would fail the same way.
func (o *TargetOptions) eachTarget(ctx context.Context, one func(name string) error) error {
	names, err := o.resolveNames()
	if err != nil {
		return err
	}
	var errs []error
	for _, name := range names {
		err := one(name)
		if err == nil {
			continue
		}
		errs = append(errs, err)
		if _, _, ok := unreachable(err); ok || ctx.Err() != nil {
			break
		}
	}
	return joinObjectErrors(errs)
}
