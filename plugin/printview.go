package plugin

// The -o flags of the verbs that print a view of their own (status, history): kubectl get's
// printers run over the view objects of statusview.go and history.go.

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kubectl/pkg/cmd/get"
)

// view is an object the plugin computes and prints. The printers of json,
// yaml, the templates and custom-columns print it as it is; name prints the
// Deployments it describes.
type view interface {
	runtime.Object
	// deployments are the Deployments the view describes, for -o name.
	deployments() []metav1.ObjectMeta
}

// newViewPrintFlags are kubectl get's printing flags without what needs API
// objects' metadata or order (--sort-by, -L, --show-kind): the views come
// sorted. withLabels keeps --show-labels for the views whose rows are
// Deployments.
func newViewPrintFlags(withLabels bool) *get.PrintFlags {
	f := get.NewGetPrintFlags()
	f.HumanReadableFlags.SortBy = nil
	f.HumanReadableFlags.ColumnLabels = nil
	f.HumanReadableFlags.ShowKind = nil
	if !withLabels {
		f.HumanReadableFlags.ShowLabels = nil
	}
	return f
}

// addViewPrintFlags binds -o, --no-headers, the template flags and, where
// kept, --show-labels; object names what json, yaml and the templates print.
func addViewPrintFlags(cmd *cobra.Command, f *get.PrintFlags, object string) {
	cmd.Flags().StringVarP(f.OutputFormat, "output", "o", *f.OutputFormat, fmt.Sprintf(
		"Output format. One of: (%s). json, yaml, the templates and custom-columns read %s; name prints deployment.apps/NAME; wide adds columns to the table.",
		strings.Join(f.AllowedFormats(), ", "), object))
	cmd.Flags().BoolVar(f.NoHeaders, "no-headers", *f.NoHeaders, "Print tables (the default and wide formats, custom-columns) without their header line.")
	f.TemplateFlags.AddFlags(cmd)
	f.HumanReadableFlags.AddFlags(cmd)
	if labels := cmd.Flags().Lookup("show-labels"); labels != nil {
		labels.Usage = "Show each Deployment's labels as the last column of the table."
	}
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(f.AllowedFormats(), cobra.ShellCompDirectiveNoFileComp))
}

// outputFormat is the -o value, with go-template when only --template was
// given, as kubectl get reads it.
func outputFormat(f *get.PrintFlags) string {
	if *f.OutputFormat == "" && f.TemplateFlags.TemplateArgument != nil && *f.TemplateFlags.TemplateArgument != "" {
		return "go-template"
	}
	return *f.OutputFormat
}

// humanOutput is true for the tables meant for people, the default and
// wide: an empty one is said in words, where the other formats print the
// empty object, or nothing.
func humanOutput(f *get.PrintFlags) bool {
	format := outputFormat(f)
	return format == "" || format == "wide"
}

// printView prints v with the -o printer, or for the default and wide
// formats the table that table builds of it. A fresh printer for each call:
// cli-runtime's printers remember what they printed (yaml's "---", a
// table's header), and -w separates its drawings itself.
func printView(f *get.PrintFlags, w io.Writer, v view, table func() *metav1.Table) error {
	printer, err := f.ToPrinter()
	if err != nil {
		return err
	}
	switch outputFormat(f) {
	case "", "wide":
		return printer.PrintObj(table(), w)
	case "name":
		// The name printer takes one object at a time.
		for _, m := range v.deployments() {
			d := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}, ObjectMeta: m}
			if err := printer.PrintObj(d, w); err != nil {
				return err
			}
		}
		return nil
	}
	return printer.PrintObj(v, w)
}

// drawSeparator goes between the states -w appends: a blank line between
// tables and texts, "---" in a YAML stream, nothing in a JSON stream or
// after a template (which ends its output as it likes) or kyaml (which
// starts each document with "---").
func drawSeparator(f *get.PrintFlags) string {
	switch outputFormat(f) {
	case "", "wide":
		return "\n"
	case "yaml":
		return "---\n"
	}
	return ""
}

// viewKind is the schema.ObjectKind of a view: its own apiVersion and kind
// fields, so that the printers, which refuse objects without them, accept
// the views with the JSON shape they always had.
type viewKind struct{ apiVersion, kind *string }

func (k viewKind) SetGroupVersionKind(gvk schema.GroupVersionKind) {
	*k.apiVersion, *k.kind = gvk.ToAPIVersionAndKind()
}

func (k viewKind) GroupVersionKind() schema.GroupVersionKind {
	return schema.FromAPIVersionAndKind(*k.apiVersion, *k.kind)
}

// copyView is the DeepCopyObject of the views. Printers copy a list before
// they drop managed fields from its items and then print the copy as JSON,
// so a copy through JSON is exact for everything that is printed; the views
// have no field that JSON cannot hold.
func copyView[T any](v *T) *T {
	data, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("copying a %T: %v", v, err))
	}
	var c T
	if err := json.Unmarshal(data, &c); err != nil {
		panic(fmt.Sprintf("copying a %T: %v", v, err))
	}
	return &c
}
