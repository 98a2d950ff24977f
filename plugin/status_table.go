package plugin

// The table of `kubectl gray status`: the list view, and one Deployment's row with -o wide; and
// the status views as the objects cli-runtime's printers print.

import (
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// statusColumns are the table's columns; those of priority 1 show only with -o wide.
var statusColumns = []metav1.TableColumnDefinition{
	{Name: "Name", Type: "string", Format: "name"},
	{Name: "Phase", Type: "string"},
	{Name: "Step", Type: "string"},
	{Name: "Hold-Points", Type: "string"},
	{Name: "Target", Type: "string"},
	{Name: "Updated", Type: "integer"},
	{Name: "Available", Type: "integer"},
	{Name: "Replicas", Type: "integer"},
	{Name: "Revision", Type: "integer"},
	{Name: "Held", Type: "string"},
	{Name: "Mode", Type: "string", Priority: 1, Description: "gray-controller's mode, and in alongside mode its takeover path"},
	{Name: "Stable", Type: "string", Priority: 1, Description: "the stable revision, the one undo returns to"},
	{Name: "New-RS", Type: "string", Priority: 1, Description: "the ReplicaSet of the current template"},
	{Name: "Stable-RS", Type: "string", Priority: 1, Description: "the ReplicaSet of the stable revision"},
	{Name: "Images", Type: "string", Priority: 1},
	{Name: "Gates", Type: "string", Priority: 1, Description: "each gate of the hold and where it stands"},
}

// statusTable is the table of views at now, one row each.
func statusTable(views []StatusView, now time.Time) *metav1.Table {
	t := &metav1.Table{ColumnDefinitions: statusColumns}
	for i := range views {
		v := &views[i]
		held := "-"
		if v.HeldAt != nil && v.Phase == grayapi.PhaseHeld {
			held = age(now, *v.HeldAt)
		}
		stable := "-"
		if v.StableRevision > 0 {
			stable = fmt.Sprint(v.StableRevision)
		}
		t.Rows = append(t.Rows, metav1.TableRow{
			Cells: []any{
				v.Name,
				orPlaceholder(string(v.Phase), "-"),
				stepText(*v),
				orPlaceholder(grayapi.FormatHoldPoints(v.holdPoints()), "-"),
				targetText(*v),
				v.UpdatedReplicas,
				v.AvailableReplicas,
				v.Replicas,
				v.Revision,
				held,
				modeText(*v),
				stable,
				replicaSetName(v.Revisions, func(r RevisionView) bool { return r.New }),
				replicaSetName(v.Revisions, func(r RevisionView) bool { return r.Stable }),
				orPlaceholder(formatImages(v.Images), "-"),
				gatesText(v.Gates),
			},
			// The NAMESPACE column of -A and the LABELS of --show-labels
			// come from the row's object.
			Object: runtime.RawExtension{Object: &metav1.PartialObjectMetadata{ObjectMeta: v.deployment}},
		})
	}
	return t
}

// replicaSetName is the name of the first revision that is, or "-".
func replicaSetName(revisions []RevisionView, is func(RevisionView) bool) string {
	for _, r := range revisions {
		if is(r) {
			return r.ReplicaSet
		}
	}
	return "-"
}

// modeText is the MODE cell: "instead", or "alongside" with its takeover
// path ("alongside/admission"); "-" before gray-controller reported.
func modeText(v StatusView) string {
	mode := orPlaceholder(string(v.Mode), "-")
	if v.Takeover != "" {
		mode += "/" + v.Takeover
	}
	return mode
}

// gatesText is the GATES cell: each gate with its verdict, or its last
// outcome while it is still measuring, e.g. "errors=Passed,latency=Fail".
func gatesText(gates []grayapi.GateStatus) string {
	if len(gates) == 0 {
		return "-"
	}
	s := make([]string, len(gates))
	for i, g := range gates {
		state := string(g.Verdict)
		if state == "" {
			state = orPlaceholder(string(g.Last), "pending")
		}
		s[i] = g.Name + "=" + state
	}
	return strings.Join(s, ",")
}

// targetText is the TARGET cell: "-" until gray-controller reported one, and
// while the rollout has none (Invalid, Aborted).
func targetText(v StatusView) string {
	if v.Phase == "" || v.Phase == grayapi.PhaseInvalid || v.Phase == grayapi.PhaseAborted {
		return "-"
	}
	return fmt.Sprint(v.Target)
}

// The views as runtime.Objects, for the printers.

func (v *StatusView) GetObjectKind() schema.ObjectKind { return viewKind{&v.APIVersion, &v.Kind} }
func (v *StatusView) DeepCopyObject() runtime.Object   { return copyView(v) }

func (v *StatusView) deployments() []metav1.ObjectMeta { return []metav1.ObjectMeta{v.deployment} }

func (l *StatusViewList) GetObjectKind() schema.ObjectKind { return viewKind{&l.APIVersion, &l.Kind} }
func (l *StatusViewList) DeepCopyObject() runtime.Object   { return copyView(l) }

func (l *StatusViewList) deployments() []metav1.ObjectMeta {
	refs := make([]metav1.ObjectMeta, len(l.Items))
	for i := range l.Items {
		refs[i] = l.Items[i].deployment
	}
	return refs
}
