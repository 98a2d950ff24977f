package plugin

// `kubectl gray status` without a name: the table of gray Deployments, once or on every change.

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// loadList reads the gray Deployments of the namespace (all with -A) and
// returns the watches that follow them.
func (o *StatusOptions) loadList(ctx context.Context) ([]StatusView, []watchSpec, error) {
	ns, where := o.Namespace, "namespace "+o.Namespace
	if o.AllNamespaces {
		ns, where = metav1.NamespaceAll, "all namespaces"
	}
	apps := o.Client.AppsV1()
	list, err := apps.Deployments(ns).List(ctx, metav1.ListOptions{LabelSelector: o.Selector})
	if err != nil {
		if apierrors.IsForbidden(err) {
			return nil, nil, fmt.Errorf("you may not list deployments.apps in %s; ask for RBAC permission or name one Deployment: %w", where, err)
		}
		return nil, nil, fmt.Errorf("listing Deployments in %s: %w", where, err)
	}
	watches := []watchSpec{{what: "Deployments", resourceVersion: list.ResourceVersion, open: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
		opts.LabelSelector = o.Selector
		return apps.Deployments(ns).Watch(ctx, opts)
	}}}
	// -o wide names each Deployment's new and stable ReplicaSets: one list
	// of them all, watched too, as a new ReplicaSet comes after the change
	// of its Deployment.
	var owned map[types.UID][]*appsv1.ReplicaSet
	if outputFormat(o.PrintFlags) == "wide" {
		rss, err := apps.ReplicaSets(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, nil, fmt.Errorf("listing ReplicaSets in %s for -o wide: %w", where, err)
		}
		owned = map[types.UID][]*appsv1.ReplicaSet{}
		for i := range rss.Items {
			if ref := metav1.GetControllerOf(&rss.Items[i]); ref != nil {
				owned[ref.UID] = append(owned[ref.UID], &rss.Items[i])
			}
		}
		watches = append(watches, watchSpec{what: "ReplicaSets", resourceVersion: rss.ResourceVersion, open: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return apps.ReplicaSets(ns).Watch(ctx, opts)
		}})
	}
	views := []StatusView{}
	for i := range list.Items {
		d := &list.Items[i]
		if !isGray(d) {
			continue
		}
		var rel *related
		if owned != nil {
			rel = &related{replicaSets: owned[d.UID]}
		}
		views = append(views, newStatusView(d, rel))
	}
	sort.Slice(views, func(i, j int) bool {
		if views[i].Namespace != views[j].Namespace {
			return views[i].Namespace < views[j].Namespace
		}
		return views[i].Name < views[j].Name
	})
	return views, watches, nil
}

// isGray reports whether d belongs in the list of gray Deployments: it carries
// kubegray.io/percent, or a status gray-controller wrote while it did.
func isGray(d *appsv1.Deployment) bool {
	_, percent := d.Annotations[grayapi.PercentAnnotation]
	_, status := d.Annotations[grayapi.StatusAnnotation]
	return percent || status
}

// runList shows the table, once or on every change of a Deployment.
func (o *StatusOptions) runList(ctx context.Context) error {
	ns := o.Namespace
	if o.AllNamespaces {
		ns = metav1.NamespaceAll
	}
	s := newScreen(o.Out, o.Terminal, drawSeparator(o.PrintFlags))
	// load reads and draws the table and returns the watches that follow it.
	load := func() ([]watchSpec, error) {
		views, watches, err := o.loadList(ctx)
		if err != nil {
			return nil, err
		}
		text, err := o.renderListString(views)
		if err != nil {
			return nil, err
		}
		switch {
		case len(views) == 0 && humanOutput(o.PrintFlags) && !o.Watch:
			_, err = fmt.Fprintln(o.ErrOut, noGrayDeployments(ns))
		case !o.Watch:
			_, err = io.WriteString(o.Out, text)
		case len(views) == 0 && humanOutput(o.PrintFlags):
			err = s.draw(noGrayDeployments(ns) + "\n")
		default:
			err = s.draw(text)
		}
		return watches, err
	}
	specs, err := load()
	if err != nil || !o.Watch {
		return err
	}
	err = watchLoop(ctx, specs, func() (bool, []watchSpec, error) {
		specs, err := load()
		return false, specs, err
	})
	if ctx.Err() != nil {
		return nil
	}
	return err
}

func noGrayDeployments(ns string) string {
	if ns == "" {
		return "No gray Deployments found."
	}
	return fmt.Sprintf("No gray Deployments found in %s namespace.", ns)
}

// renderListString prints the list with -o: by default its table, which
// has no header when it has no rows.
func (o *StatusOptions) renderListString(views []StatusView) (string, error) {
	var b strings.Builder
	list := &StatusViewList{Kind: statusViewListKind, APIVersion: viewAPIVersion, Items: views}
	err := printView(o.PrintFlags, &b, list, func() *metav1.Table { return statusTable(views, o.Now()) })
	return b.String(), err
}

// runNamed shows the table of the Deployments named, in the order named, as kubectl get shows
// several names: the rows of those read, then the others' failures (eachTarget).
func (o *StatusOptions) runNamed(ctx context.Context) error {
	var views []StatusView
	err := o.eachTarget(ctx, func(name string) error {
		v, err := o.loadRow(ctx, name)
		if err == nil {
			views = append(views, v)
		}
		return err
	})
	if len(views) == 0 && humanOutput(o.PrintFlags) {
		return err
	}
	text, printErr := o.renderListString(views)
	if printErr != nil {
		return printErr
	}
	if _, printErr := io.WriteString(o.Out, text); printErr != nil {
		return printErr
	}
	return err
}

// loadRow reads the view of Deployment name for a table row: with -o wide, with its
// ReplicaSets, as loadList reads them.
func (o *StatusOptions) loadRow(ctx context.Context, name string) (StatusView, error) {
	d, err := o.Client.AppsV1().Deployments(o.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return StatusView{}, apiError(err, "get", o.Namespace, name)
	}
	var rel *related
	if outputFormat(o.PrintFlags) == "wide" {
		rss, _, err := ownedReplicaSets(ctx, o.Client, d)
		if err != nil {
			return StatusView{}, err
		}
		rel = &related{replicaSets: rss}
	}
	return newStatusView(d, rel), nil
}
