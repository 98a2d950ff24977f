package controller

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
)

// builtinManager is the field manager the API server derives from
// kube-controller-manager's User-Agent; every controller inside it, the
// deployment controller included, writes under this name.
const builtinManager = "kube-controller-manager"

// listPageSize keeps each list call of the check small on large clusters.
const listPageSize = 500

// maxListedWrites bounds the error message; the rest are counted.
const maxListedWrites = 5

// builtinWrite is one managedFields entry that shows the built-in deployment
// controller at work.
type builtinWrite struct {
	// Kind is "deployment" or "replicaset", as it reads in kubectl.
	Kind        string
	Namespace   string
	Name        string
	Manager     string
	Operation   metav1.ManagedFieldsOperationType
	Subresource string
	Time        time.Time
}

// builtinControllerWrites returns the writes that only kube-controller-
// manager's deployment controller makes, no older than window at now, newest
// first:
//
//   - Deployment status (subresource "status") written by
//     kube-controller-manager: only the deployment controller writes it.
//   - ReplicaSet spec or metadata (operation Update, no subresource) written
//     by kube-controller-manager: the deployment controller creates and
//     scales ReplicaSets that way. The ReplicaSet controller, which keeps
//     running in instead mode, writes only the status subresource, so those
//     entries do not count.
//
// An entry without a time never counts; an entry stamped after now (clock
// skew between us and the API server) counts as recent. The garbage
// collector also writes ReplicaSet metadata as kube-controller-manager when
// it orphans one, which is the one known false positive;
// --skip-builtin-controller-check covers it.
func builtinControllerWrites(deployments []appsv1.Deployment, replicaSets []appsv1.ReplicaSet, now time.Time, window time.Duration) []builtinWrite {
	recent := func(e metav1.ManagedFieldsEntry) bool {
		return e.Manager == builtinManager && e.Time != nil && now.Sub(e.Time.Time) <= window
	}
	var writes []builtinWrite
	add := func(kind string, meta metav1.ObjectMeta, e metav1.ManagedFieldsEntry) {
		writes = append(writes, builtinWrite{
			Kind: kind, Namespace: meta.Namespace, Name: meta.Name,
			Manager: e.Manager, Operation: e.Operation, Subresource: e.Subresource, Time: e.Time.Time,
		})
	}
	for _, d := range deployments {
		for _, e := range d.ManagedFields {
			if recent(e) && e.Subresource == "status" {
				add("deployment", d.ObjectMeta, e)
			}
		}
	}
	for _, rs := range replicaSets {
		for _, e := range rs.ManagedFields {
			if recent(e) && e.Operation == metav1.ManagedFieldsOperationUpdate && e.Subresource == "" {
				add("replicaset", rs.ObjectMeta, e)
			}
		}
	}
	slices.SortFunc(writes, func(a, b builtinWrite) int {
		return cmp.Or(
			b.Time.Compare(a.Time),
			cmp.Compare(a.Kind, b.Kind),
			cmp.Compare(a.Namespace, b.Namespace),
			cmp.Compare(a.Name, b.Name),
		)
	})
	return writes
}

// builtinControllerError explains why instead mode refuses to start and
// what to do about it. writes must not be empty.
func builtinControllerError(writes []builtinWrite, now time.Time, window time.Duration) error {
	var b strings.Builder
	b.WriteString("the built-in deployment controller of kube-controller-manager appears to be running; " +
		"refusing to start in --mode=instead, where two controllers would fight over the same ReplicaSets. " +
		"Recent writes by it:\n")
	for i, w := range writes {
		if i == maxListedWrites {
			fmt.Fprintf(&b, "  ... and %d more\n", len(writes)-maxListedWrites)
			break
		}
		what := "spec/metadata"
		if w.Subresource != "" {
			what = w.Subresource
		}
		fmt.Fprintf(&b, "  %s %s/%s: %s written by manager %q (%s) at %s (%s)\n",
			w.Kind, w.Namespace, w.Name, what, w.Manager, w.Operation,
			w.Time.UTC().Format(time.RFC3339), age(now, w.Time))
	}
	fmt.Fprintf(&b, "To fix it, either:\n"+
		"  - start kube-controller-manager with --controllers=*,-deployment-controller, "+
		"then start gray-controller once its last write is older than --builtin-check-window (%v), or\n"+
		"  - pass --skip-builtin-controller-check if you are sure the built-in controller is disabled", window)
	return errors.New(b.String())
}

func age(now, t time.Time) string {
	d := now.Sub(t).Round(time.Second)
	if d < 0 {
		return fmt.Sprintf("%v in the future: are the clocks in sync?", -d)
	}
	return fmt.Sprintf("%v ago", d)
}

// checkBuiltinController lists every Deployment and ReplicaSet and fails if
// the built-in deployment controller wrote any of them within window.
func checkBuiltinController(ctx context.Context, client kubernetes.Interface, now time.Time, window time.Duration) error {
	logger := klog.FromContext(ctx)

	var deployments []appsv1.Deployment
	opts := metav1.ListOptions{Limit: listPageSize}
	for {
		list, err := client.AppsV1().Deployments(metav1.NamespaceAll).List(ctx, opts)
		if err != nil {
			return fmt.Errorf("checking for the built-in deployment controller: listing deployments: %w", err)
		}
		deployments = append(deployments, list.Items...)
		if list.Continue == "" {
			break
		}
		opts.Continue = list.Continue
	}

	var replicaSets []appsv1.ReplicaSet
	opts = metav1.ListOptions{Limit: listPageSize}
	for {
		list, err := client.AppsV1().ReplicaSets(metav1.NamespaceAll).List(ctx, opts)
		if err != nil {
			return fmt.Errorf("checking for the built-in deployment controller: listing replicasets: %w", err)
		}
		replicaSets = append(replicaSets, list.Items...)
		if list.Continue == "" {
			break
		}
		opts.Continue = list.Continue
	}

	writes := builtinControllerWrites(deployments, replicaSets, now, window)
	if len(writes) > 0 {
		return builtinControllerError(writes, now, window)
	}
	logger.Info("The built-in deployment controller made no writes recently",
		"window", window, "deployments", len(deployments), "replicaSets", len(replicaSets))
	return nil
}
