package plugin

// One `kubectl gray restart` under way (restart.go): evict a batch, wait for its replacements,
// read the Deployment again, and stop when it changed or the time is up.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// restartRun is one restart under way: what it decided at the start and
// what it has done.
type restartRun struct {
	o         *RestartOptions
	d         *appsv1.Deployment
	targets   []restartTarget
	limit     int32
	originals map[types.UID]bool
	// gone holds the pods evicted, and those found gone when evicted.
	gone    map[types.UID]bool
	evicted int
	batches int
	// left is the pods not restarted yet as last read (some may have been
	// evicted since: see gone), for the message that ends a restart early.
	left []restartPod
	// waiting says what the restart waits for now, for the timeout's message.
	waiting string
}

// printPlan prints the batches of a dry run.
func (r *restartRun) printPlan(s restartState) error {
	batches := planBatches(r.targets, s, r.limit, r.originals)
	planned := 0
	for i, batch := range batches {
		names := make([]string, len(batch))
		for j, p := range batch {
			names[j] = "pod/" + p.Name
		}
		planned += len(batch)
		fmt.Fprintf(r.o.Out, "batch %d: %s\n", i+1, strings.Join(names, " "))
	}
	if rest := len(r.originals) - planned; rest > 0 {
		fmt.Fprintf(r.o.Out, "%s in no batch yet: %d of %d replicas are unavailable now, and the restart waits until fewer are\n",
			podCount(rest), s.Replicas-s.available(nil), s.Replicas)
	}
	_, err := fmt.Fprintf(r.o.Out, "%s restart planned: %s in %d batches (dry run)\n", deploymentRef(r.d.Name), podCount(planned), len(batches))
	return err
}

// restart evicts the batches until no original pod is left.
func (r *restartRun) restart(ctx context.Context) error {
	o := r.o
	for {
		s, err := r.check(ctx)
		if err != nil {
			return err
		}
		if len(r.left) == 0 {
			return nil
		}
		t, batch := nextBatch(r.targets, s, r.limit, r.originals, r.gone)
		if len(batch) == 0 {
			r.waiting = fmt.Sprintf("room for the next pod: %d of %d replicas unavailable, at most %d allowed", s.Replicas-s.available(r.gone), s.Replicas, r.limit)
			if err := r.pause(ctx, o.Interval); err != nil {
				return err
			}
			continue
		}
		before := s.available(r.gone)
		for _, p := range batch {
			if err := r.evict(ctx, p); err != nil {
				return err
			}
		}
		r.batches++
		if err := r.awaitReplacements(ctx, t, before); err != nil {
			return err
		}
	}
}

// check reads the Deployment again and fails when it is no longer the one
// the restart began with: another template, a resize, a hold left. It
// returns its pods.
func (r *restartRun) check(ctx context.Context) (restartState, error) {
	d, rss, err := r.o.read(ctx, r.d.Name)
	if err != nil {
		return restartState{}, r.stopped(ctx, err)
	}
	targets, _, err := restartTargets(d, rss)
	switch {
	case err != nil:
		return restartState{}, r.changed(err.Error())
	case d.UID != r.d.UID || d.Generation != r.d.Generation:
		return restartState{}, r.changed(fmt.Sprintf("deployment %s/%s changed (generation %d, was %d)", d.Namespace, d.Name, d.Generation, r.d.Generation))
	case !slices.Equal(targets, r.targets):
		return restartState{}, r.changed(fmt.Sprintf("the ReplicaSets of deployment %s/%s changed (%s)", d.Namespace, d.Name, describeTargets(targets)))
	}
	s, err := r.o.observe(ctx, d, rss)
	if err != nil {
		return restartState{}, r.stopped(ctx, err)
	}
	r.left = s.left(r.originals, r.gone)
	return s, nil
}

// awaitReplacements waits until as many pods are available as before the
// batch, the evicted ones not counted: the batch's replacements are up.
func (r *restartRun) awaitReplacements(ctx context.Context, t restartTarget, before int32) error {
	for {
		s, err := r.check(ctx)
		if err != nil {
			return err
		}
		available := s.available(r.gone)
		if available >= before {
			return nil
		}
		r.waiting = fmt.Sprintf("the replacements in replicaset %s to become available (%d of %d replicas available, %d before the last batch)", t.Name, available, s.Replicas, before)
		if err := r.pause(ctx, r.o.Interval); err != nil {
			return err
		}
	}
}

// evict evicts one pod, retrying while a PodDisruptionBudget refuses. A pod
// already gone (or replaced under its name) counts as restarted.
func (r *restartRun) evict(ctx context.Context, p restartPod) error {
	o := r.o
	eviction := &policyv1.Eviction{
		ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: o.Namespace},
		// The UID makes sure the pod evicted is the one decided on.
		DeleteOptions: &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &p.UID}},
	}
	warned := false
	for {
		err := o.Client.PolicyV1().Evictions(o.Namespace).Evict(ctx, eviction)
		switch {
		case err == nil:
			r.gone[p.UID] = true
			r.evicted++
			_, err := fmt.Fprintf(o.Out, "pod/%s evicted\n", p.Name)
			return err
		case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
			r.gone[p.UID] = true
			return nil
		case apierrors.IsTooManyRequests(err):
			// A PodDisruptionBudget (or the API server's own throttling)
			// says not now; kubectl drain waits and retries the same way.
			r.waiting = fmt.Sprintf("a PodDisruptionBudget to allow evicting pod %s: %v", p.Name, err)
			if !warned {
				fmt.Fprintf(o.ErrOut, "pod/%s: eviction refused, retrying every %s: %v\n", p.Name, o.EvictRetry, err)
				warned = true
			}
			if err := r.pause(ctx, o.EvictRetry); err != nil {
				return err
			}
		case apierrors.IsForbidden(err):
			return fmt.Errorf("pod %s/%s: you may not evict pods in namespace %s; ask for RBAC permission to create pods/eviction (check with 'kubectl auth can-i create pods/eviction -n %s'): %w", o.Namespace, p.Name, o.Namespace, o.Namespace, err)
		default:
			return r.stopped(ctx, fmt.Errorf("evicting pod %s/%s: %w", o.Namespace, p.Name, err))
		}
	}
}

// pause waits d, or ends the restart when the context ends first.
func (r *restartRun) pause(ctx context.Context, d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return r.stopped(ctx, ctx.Err())
	case <-timer.C:
		return nil
	}
}

// stopped turns err into the restart's result: after --timeout an exit code
// 2 error naming the pods left and what the restart waited for.
func (r *restartRun) stopped(ctx context.Context, err error) error {
	if !errors.Is(context.Cause(ctx), errRestartTimeout) {
		return err
	}
	return &exitError{code: ExitTimeout, err: fmt.Errorf("timed out after %s restarting deployment %s/%s: %s; waiting for %s",
		r.o.Timeout, r.d.Namespace, r.d.Name, r.leftText(), orWaiting(r.waiting))}
}

// changed ends a restart whose Deployment changed under it.
func (r *restartRun) changed(why string) error {
	return fmt.Errorf("restart of deployment %s/%s stopped: %s; %s; run 'kubectl gray restart %s' again once it is held or settled",
		r.d.Namespace, r.d.Name, why, r.leftText(), r.d.Name)
}

// leftText names the pods not restarted yet, the first ten of them.
func (r *restartRun) leftText() string {
	var names []string
	for _, p := range r.left {
		if !r.gone[p.UID] {
			names = append(names, p.Name)
		}
	}
	if len(names) == 0 {
		return "every pod was evicted"
	}
	more := ""
	if len(names) > 10 {
		more = fmt.Sprintf(" and %d more", len(names)-10)
	}
	return fmt.Sprintf("%s of %d not restarted yet (%s%s)", podCount(len(names)), len(r.originals), strings.Join(names[:min(10, len(names))], ", "), more)
}

func orWaiting(s string) string {
	if s == "" {
		return "the Deployment to be read"
	}
	return s
}

// describeTargets lists targets for a message.
func describeTargets(targets []restartTarget) string {
	if len(targets) == 0 {
		return "none with pods"
	}
	parts := make([]string, len(targets))
	for i, t := range targets {
		parts[i] = t.String()
	}
	return strings.Join(parts, ", ")
}
