package plugin

// `kubectl gray status` without a name: the table of gray Deployments, once or on every change.

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// loadList reads the gray Deployments of the namespace (all with -A).
func (o *StatusOptions) loadList(ctx context.Context) ([]StatusView, string, error) {
	ns := o.Namespace
	if o.AllNamespaces {
		ns = metav1.NamespaceAll
	}
	list, err := o.Client.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		where := "namespace " + ns
		if ns == "" {
			where = "all namespaces"
		}
		if apierrors.IsForbidden(err) {
			return nil, "", fmt.Errorf("you may not list deployments.apps in %s; ask for RBAC permission or name one Deployment: %w", where, err)
		}
		return nil, "", fmt.Errorf("listing Deployments in %s: %w", where, err)
	}
	views := []StatusView{}
	for i := range list.Items {
		d := &list.Items[i]
		_, percent := d.Annotations[grayapi.PercentAnnotation]
		_, status := d.Annotations[grayapi.StatusAnnotation]
		if percent || status {
			views = append(views, newStatusView(d, nil))
		}
	}
	sort.Slice(views, func(i, j int) bool {
		if views[i].Namespace != views[j].Namespace {
			return views[i].Namespace < views[j].Namespace
		}
		return views[i].Name < views[j].Name
	})
	return views, list.ResourceVersion, nil
}

// runList shows the table, once or on every change of a Deployment.
func (o *StatusOptions) runList(ctx context.Context) error {
	ns := o.Namespace
	if o.AllNamespaces {
		ns = metav1.NamespaceAll
	}
	s := newScreen(o.Out, o.Terminal, drawSeparator(o.PrintFlags))
	apps := o.Client.AppsV1()
	// load reads and draws the table and returns the watch that follows it.
	load := func() ([]watchSpec, error) {
		views, rv, err := o.loadList(ctx)
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
		return []watchSpec{{what: "Deployments", resourceVersion: rv, open: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return apps.Deployments(ns).Watch(ctx, opts)
		}}}, err
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
