package plugin

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/kubectl/pkg/cmd/get"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/util/templates"

	"github.com/kubegray/kubectl-gray/pkg/deployutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

var (
	historyLong = templates.LongDesc(`
		List the revisions of a Deployment with their ReplicaSets and images, and
		what each was to the gray rollouts: the current one and its phase, the
		stable one, the ones rolled back, the ones aborted, and the ones
		abandoned for a newer template before they completed.`)

	historyExample = templates.Examples(`
		# Show the revisions of web
		kubectl gray history web

		# The same, for a script
		kubectl gray history deploy/web -o json

		# The ReplicaSet of each revision
		kubectl gray history web -o custom-columns=REVISION:.revisions[*].revision,REPLICASET:.revisions[*].replicaSet`)
)

const historyViewKind = "GrayHistory"

// History marks, the GRAY column of `kubectl gray history`.
const (
	markCurrent    = "current"
	markStable     = "stable"
	markRolledBack = "rolled back"
	markAbandoned  = "abandoned"
	markAborted    = "aborted"
)

// HistoryView is what `kubectl gray history -o json|yaml` prints (and the
// templates read).
type HistoryView struct {
	// Kind is always "GrayHistory".
	Kind string `json:"kind"`
	// APIVersion is always "kubectl-gray/v1".
	APIVersion string `json:"apiVersion"`
	// Namespace of the Deployment.
	Namespace string `json:"namespace"`
	// Name of the Deployment.
	Name string `json:"name"`
	// Revisions, oldest first.
	Revisions []HistoryRevision `json:"revisions"`
}

// HistoryRevision is one revision of a Deployment.
type HistoryRevision struct {
	// Revision is the ReplicaSet's deployment.kubernetes.io/revision.
	Revision int64 `json:"revision"`
	// ReplicaSet is the ReplicaSet name.
	ReplicaSet string `json:"replicaSet"`
	// Replicas is the ReplicaSet's spec.replicas.
	Replicas int32 `json:"replicas"`
	// ReadyReplicas is the ReplicaSet's status.readyReplicas.
	ReadyReplicas int32 `json:"readyReplicas"`
	// Images of the revision's pod template.
	Images []ContainerImage `json:"images"`
	// Marks say what the revision was to gray rollouts: "current" (with the
	// phase, e.g. "held at 10%"), "stable", "rolled back", "aborted",
	// "abandoned".
	Marks []string `json:"marks"`
	// ChangeCause is the kubernetes.io/change-cause annotation.
	ChangeCause string `json:"changeCause,omitempty"`
	// CreatedAt is when the ReplicaSet was created (RFC3339).
	CreatedAt metav1.Time `json:"createdAt"`
}

// HistoryOptions holds what `kubectl gray history` needs.
type HistoryOptions struct {
	// Flags.
	PrintFlags *get.PrintFlags

	// Filled in by Complete.
	Now func() time.Time

	TargetOptions
	genericiooptions.IOStreams
}

// NewHistoryOptions returns HistoryOptions with defaults.
func NewHistoryOptions(streams genericiooptions.IOStreams) *HistoryOptions {
	return &HistoryOptions{IOStreams: streams, Now: time.Now, PrintFlags: newViewPrintFlags(false)}
}

// NewCmdHistory returns `kubectl gray history`.
func NewCmdHistory(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := NewHistoryOptions(streams)
	cmd := &cobra.Command{
		Use:                   "history DEPLOYMENT [-o FORMAT] [--no-headers]",
		DisableFlagsInUseLine: true,
		Short:                 "List the revisions of a Deployment and what they were to gray rollouts",
		Long:                  historyLong,
		Example:               historyExample,
		ValidArgsFunction:     completeDeploymentNames(f),
		RunE:                  runE(f, o),
	}
	addViewPrintFlags(cmd, o.PrintFlags, "a GrayHistory object")
	return cmd
}

// Complete reads the arguments, then the namespace and client from f.
func (o *HistoryOptions) Complete(f cmdutil.Factory, args []string) error {
	if err := o.complete(args); err != nil {
		return err
	}
	return o.completeClient(f)
}

func (o *HistoryOptions) complete(args []string) error {
	return o.completeName("history", args)
}

// Validate checks the output format.
func (o *HistoryOptions) Validate() error {
	_, err := o.PrintFlags.ToPrinter()
	return outputError(err)
}

// Run prints the history.
func (o *HistoryOptions) Run(ctx context.Context) error {
	if err := o.resolveName(); err != nil {
		return err
	}
	d, err := o.Client.AppsV1().Deployments(o.Namespace).Get(ctx, o.Name, metav1.GetOptions{})
	if err != nil {
		return apiError(err, "get", o.Namespace, o.Name)
	}
	rss, _, err := ownedReplicaSets(ctx, o.Client, d)
	if err != nil {
		return err
	}
	view := newHistoryView(d, rss)
	if len(view.Revisions) == 0 && humanOutput(o.PrintFlags) {
		_, err := fmt.Fprintf(o.Out, "No rollout history found for deployment %s/%s.\n", o.Namespace, o.Name)
		return err
	}
	return printView(o.PrintFlags, o.Out, &view, func() *metav1.Table { return historyTable(view, o.Now()) })
}

// newHistoryView lists d's revisions and marks them. "rolled back": the
// current template was live before under an older revision (the
// ReplicaSet's revision-history), so the revisions in between were left by
// going back to it. "aborted": its rollout was aborted (gray-controller's
// kubegray.io/aborted label), which says more than "abandoned": newer than
// the stable revision, never completed, and replaced by a newer template.
func newHistoryView(d *appsv1.Deployment, rss []*appsv1.ReplicaSet) HistoryView {
	view := HistoryView{Kind: historyViewKind, APIVersion: viewAPIVersion, Namespace: d.Namespace, Name: d.Name, Revisions: []HistoryRevision{}}
	var st *grayapi.Status
	if s, recorded, err := grayapi.RecordedStatus(d.Annotations); recorded && err == nil {
		st = &s
	}
	newRS := deployutil.FindNewReplicaSet(d, rss)
	var current, previous int64
	if newRS != nil {
		current, _ = deployutil.Revision(newRS)
		previous = deployutil.LastRevisionInHistory(newRS, 0)
	}
	var stable int64
	if st != nil {
		stable = st.StableRevision
	}

	rss = append([]*appsv1.ReplicaSet(nil), rss...)
	sort.Sort(deployutil.ReplicaSetsByRevision(rss))
	for _, rs := range rss {
		rev, _ := deployutil.Revision(rs)
		marks := []string{}
		switch {
		case rs == newRS:
			marks = append(marks, markCurrent)
			if st != nil && st.Revision == rev {
				marks = append(marks, phaseMark(*st))
			}
		case abortedReplicaSet(rs, rev):
			marks = append(marks, markAborted)
		case previous > 0 && rev > previous && rev < current:
			marks = append(marks, markRolledBack)
		case stable > 0 && rev > stable && rev < current:
			marks = append(marks, markAbandoned)
		}
		if stable > 0 && rev == stable {
			marks = append(marks, markStable)
		}
		var replicas int32
		if rs.Spec.Replicas != nil {
			replicas = *rs.Spec.Replicas
		}
		view.Revisions = append(view.Revisions, HistoryRevision{
			Revision:      rev,
			ReplicaSet:    rs.Name,
			Replicas:      replicas,
			ReadyReplicas: rs.Status.ReadyReplicas,
			Images:        templateImages(&rs.Spec.Template.Spec),
			Marks:         marks,
			ChangeCause:   rs.Annotations["kubernetes.io/change-cause"],
			CreatedAt:     rs.CreationTimestamp,
		})
	}
	return view
}

// phaseMark describes the current revision's gray phase in a few words.
func phaseMark(st grayapi.Status) string {
	switch st.Phase {
	case grayapi.PhaseHeld:
		return fmt.Sprintf("held at %d%%", st.Percent)
	case grayapi.PhaseProgressing:
		return fmt.Sprintf("progressing to %d%%", st.Percent)
	case grayapi.PhaseRolledBack:
		return "rolled back to"
	case grayapi.PhaseAborted:
		return "aborted, template kept"
	}
	return strings.ToLower(string(st.Phase))
}

// historyColumns are the history table's columns; CREATED, the exact time
// AGE rounds, shows only with -o wide.
var historyColumns = []metav1.TableColumnDefinition{
	{Name: "Revision", Type: "integer"},
	{Name: "ReplicaSet", Type: "string"},
	{Name: "Ready", Type: "string"},
	{Name: "Images", Type: "string"},
	{Name: "Gray", Type: "string"},
	{Name: "Age", Type: "string"},
	{Name: "Change-Cause", Type: "string"},
	{Name: "Created", Type: "string", Format: "date-time", Priority: 1},
}

// historyTable is the table of view's revisions at now.
func historyTable(view HistoryView, now time.Time) *metav1.Table {
	t := &metav1.Table{ColumnDefinitions: historyColumns}
	for _, r := range view.Revisions {
		t.Rows = append(t.Rows, metav1.TableRow{Cells: []any{
			r.Revision, r.ReplicaSet, fmt.Sprintf("%d/%d", r.ReadyReplicas, r.Replicas), formatImages(r.Images),
			orPlaceholder(strings.Join(r.Marks, ", "), "-"), age(now, r.CreatedAt), orPlaceholder(r.ChangeCause, "<none>"),
			r.CreatedAt.UTC().Format(time.RFC3339),
		}})
	}
	return t
}

// The history as a runtime.Object, for the printers.

func (v *HistoryView) GetObjectKind() schema.ObjectKind { return viewKind{&v.APIVersion, &v.Kind} }
func (v *HistoryView) DeepCopyObject() runtime.Object   { return copyView(v) }

func (v *HistoryView) deployments() []metav1.ObjectMeta {
	return []metav1.ObjectMeta{{Namespace: v.Namespace, Name: v.Name}}
}
