package plugin

// The -o formats, --no-headers and --show-labels on each view: status of one Deployment, the
// status list, history.

import (
	"context"
	"path/filepath"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/kubectl/pkg/cmd/get"

	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// gatedWeb is heldWeb with labels and two gates: one passed, one whose last
// measurement failed while it is still measuring.
func gatedWeb(t *testing.T) []runtime.Object {
	objs := heldWeb(t)
	d := objs[0].(*appsv1.Deployment)
	d.Labels = map[string]string{"app": "web", "tier": "front"}
	st, err := grayapi.ParseStatus(d.Annotations[grayapi.StatusAnnotation])
	if err != nil {
		t.Fatal(err)
	}
	st.Gates = []grayapi.GateStatus{
		{Name: "errors", Last: grayapi.GatePass, Verdict: grayapi.GatePassed, Passes: 3},
		{Name: "latency", Last: grayapi.GateFail, Fails: 1},
	}
	withGray(t, "10,30,60", &st)(d)
	return objs
}

// grayList is gatedWeb, "api" progressing in alongside mode with the
// admission takeover, "shop" in another namespace before gray-controller
// reported, and "db", which is not gray and not listed.
func grayList(t *testing.T) []runtime.Object {
	objs := gatedWeb(t)
	api := progressingWeb(t)[0].(*appsv1.Deployment)
	api.Name, api.UID = "api", "uid-api2"
	st, err := grayapi.ParseStatus(api.Annotations[grayapi.StatusAnnotation])
	if err != nil {
		t.Fatal(err)
	}
	st.Mode, st.Takeover = grayapi.ModeAlongside, grayapi.TakeoverAdmission
	withGray(t, "10,30,60", &st)(api)
	shop := deployment("shop", withGray(t, "50", nil))
	shop.Namespace, shop.Labels = "team-b", map[string]string{"app": "shop"}
	return append(objs, api, shop, deployment("db"))
}

// setOutput sets -o as the flag would.
func setOutput(f *get.PrintFlags, format string) {
	*f.OutputFormat = format
}

func TestStatusPrintFormats(t *testing.T) {
	templateFile := filepath.Join("testdata", "status", "phase.tmpl")
	tests := []struct {
		name  string
		args  []string
		flags func(o *StatusOptions)
	}{
		{name: "one-name", args: []string{"web"}, flags: func(o *StatusOptions) { setOutput(o.PrintFlags, "name") }},
		{name: "one-wide", args: []string{"web"}, flags: func(o *StatusOptions) { setOutput(o.PrintFlags, "wide") }},
		{name: "one-wide-no-headers", args: []string{"web"}, flags: func(o *StatusOptions) {
			setOutput(o.PrintFlags, "wide")
			*o.PrintFlags.NoHeaders = true
		}},
		{name: "one-jsonpath", args: []string{"web"}, flags: func(o *StatusOptions) {
			setOutput(o.PrintFlags, `jsonpath={.phase} {.percent}%{"\n"}{range .gates[*]}{.name}={.last}{"\n"}{end}`)
		}},
		{name: "one-jsonpath-as-json", args: []string{"web"}, flags: func(o *StatusOptions) {
			setOutput(o.PrintFlags, "jsonpath-as-json={.revisions[*].replicaSet}")
		}},
		{name: "one-go-template", args: []string{"web"}, flags: func(o *StatusOptions) {
			setOutput(o.PrintFlags, `go-template={{.name}} {{.phase}} {{range .revisions}}{{.revision}}:{{.replicaSet}} {{end}}{{"\n"}}`)
		}},
		{name: "one-go-template-file", args: []string{"web"}, flags: func(o *StatusOptions) { setOutput(o.PrintFlags, "go-template-file="+templateFile) }},
		{name: "one-custom-columns", args: []string{"web"}, flags: func(o *StatusOptions) {
			setOutput(o.PrintFlags, "custom-columns=NAME:.name,PHASE:.phase,STABLE:.stableRevision")
		}},
		{name: "list-name", flags: func(o *StatusOptions) { setOutput(o.PrintFlags, "name") }},
		{name: "list-wide", flags: func(o *StatusOptions) { setOutput(o.PrintFlags, "wide") }},
		{name: "list-wide-all-namespaces", flags: func(o *StatusOptions) {
			setOutput(o.PrintFlags, "wide")
			o.AllNamespaces = true
		}},
		{name: "list-no-headers", flags: func(o *StatusOptions) { *o.PrintFlags.NoHeaders = true }},
		{name: "list-show-labels", flags: func(o *StatusOptions) {
			*o.PrintFlags.HumanReadableFlags.ShowLabels = true
			o.AllNamespaces = true
		}},
		{name: "list-yaml", flags: func(o *StatusOptions) { setOutput(o.PrintFlags, "yaml") }},
		{name: "list-jsonpath", flags: func(o *StatusOptions) {
			setOutput(o.PrintFlags, `jsonpath={range .items[*]}{.namespace}/{.name} {.phase}{"\n"}{end}`)
		}},
		{name: "list-go-template", flags: func(o *StatusOptions) {
			setOutput(o.PrintFlags, `go-template={{range .items}}{{.name}} {{.mode}}{{"\n"}}{{end}}`)
		}},
		{name: "list-custom-columns", flags: func(o *StatusOptions) {
			setOutput(o.PrintFlags, "custom-columns=NAME:.name,MODE:.mode,TAKEOVER:.takeover")
			o.AllNamespaces = true
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, err := statusRun(context.Background(), fake.NewClientset(grayList(t)...), tt.args, tt.flags)
			if err != nil {
				t.Fatal(err)
			}
			if errOut != "" {
				t.Errorf("unexpected stderr %q", errOut)
			}
			checkGolden(t, "status", tt.name, out)
		})
	}
}

func TestStatusListEmptyOutput(t *testing.T) {
	// Machine formats print the empty list; the tables say so on stderr.
	for _, tt := range []struct{ format, wantOut, wantErr string }{
		{format: "wide", wantErr: "No gray Deployments found in default namespace.\n"},
		{format: "name"},
		{format: "jsonpath={.kind}", wantOut: "GrayStatusList"},
	} {
		t.Run(tt.format, func(t *testing.T) {
			out, errOut, err := statusRun(context.Background(), fake.NewClientset(deployment("db")), nil, func(o *StatusOptions) { setOutput(o.PrintFlags, tt.format) })
			if err != nil || out != tt.wantOut || errOut != tt.wantErr {
				t.Fatalf("got %q, %q, %v; want %q, %q", out, errOut, err, tt.wantOut, tt.wantErr)
			}
		})
	}
}

func TestHistoryPrintFormats(t *testing.T) {
	for _, tt := range []struct{ name, output string }{
		{name: "superseded-yaml", output: "yaml"},
		{name: "superseded-name", output: "name"},
		{name: "superseded-wide", output: "wide"},
		{name: "superseded-jsonpath", output: `jsonpath={range .revisions[*]}{.revision} {.marks}{"\n"}{end}`},
		{name: "superseded-go-template", output: `go-template={{range .revisions}}{{.revision}} {{.replicaSet}}{{"\n"}}{{end}}`},
		{name: "superseded-custom-columns", output: "custom-columns=REVISION:.revisions[*].revision"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, err := historyRun(fake.NewClientset(supersededWeb(t)...), []string{"web"}, tt.output)
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, "history", tt.name, out)
		})
	}
	t.Run("no-headers", func(t *testing.T) {
		streams, out, _ := testStreams()
		o := NewHistoryOptions(streams)
		o.Now, o.Namespace, o.Client = clock, ns, fake.NewClientset(supersededWeb(t)...)
		*o.PrintFlags.NoHeaders = true
		o.Getter = testNames()
		if err := o.complete([]string{"web"}); err != nil {
			t.Fatal(err)
		}
		if err := o.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		checkGolden(t, "history", "superseded-no-headers", out.String())
	})
}
