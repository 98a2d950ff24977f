package plugin

// How status draws its output: colour (and when it is on), the progress bar, and -o json
// checked against the documented StatusView types.

import (
	"context"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubegray/kubectl-gray/internal/testutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

func TestStatusColour(t *testing.T) {
	cs := fake.NewClientset(heldWeb(t)...)
	out, _, err := statusRun(context.Background(), cs, []string{"web"}, func(o *StatusOptions) { o.Color = true })
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"\x1b[33mHeld\x1b[0m", "\x1b[32mready\x1b[0m", "\x1b[1mweb\x1b[0m"} {
		if !strings.Contains(out, want) {
			t.Errorf("coloured output lacks %q", want)
		}
	}
}

// TestAbortedReadsAsAFailure pins that an Aborted rollout is painted like a
// failure and shows no target in the table: its canary is at 0 whatever the
// hold point says.
func TestAbortedReadsAsAFailure(t *testing.T) {
	if got := palette(true).phase(grayapi.PhaseAborted); got != "\x1b[31mAborted\x1b[0m" {
		t.Errorf("phase colour %q, want red", got)
	}
	if got := targetText(StatusView{Phase: grayapi.PhaseAborted, Target: 3}); got != "-" {
		t.Errorf("TARGET %q, want -", got)
	}
}

func TestWantColor(t *testing.T) {
	tests := []struct {
		name     string
		terminal bool
		noColor  string
		want     bool
	}{
		{name: "terminal", terminal: true, want: true},
		{name: "terminal with NO_COLOR", terminal: true, noColor: "1", want: false},
		{name: "pipe", terminal: false, want: false},
		{name: "pipe with NO_COLOR", terminal: false, noColor: "1", want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := wantColor(tt.terminal, tt.noColor); got != tt.want {
				t.Fatalf("wantColor(%v, %q) = %v, want %v", tt.terminal, tt.noColor, got, tt.want)
			}
		})
	}
}

// TestStatusJSONSchema checks -o json against the documented StatusView:
// every key printed is a field of the type (decoding rejects unknown keys),
// every field without omitempty is printed, and every field of the view
// types has a doc comment.
func TestStatusJSONSchema(t *testing.T) {
	// degradedWeb fills the failure view, timedHoldWeb the policy, pointHoldsWeb the hold
	// points' own durations.
	for name, objects := range map[string]func(*testing.T) []runtime.Object{
		"held": heldWeb, "degraded": degradedWeb, "timed hold": timedHoldWeb("10m", time.Minute), "aborted": abortedWeb,
		"point holds": pointHoldsWeb,
	} {
		t.Run(name, func(t *testing.T) {
			cs := fake.NewClientset(objects(t)...)
			out, _, err := statusRun(context.Background(), cs, []string{"web"}, func(o *StatusOptions) { *o.PrintFlags.OutputFormat = "json" })
			if err != nil {
				t.Fatal(err)
			}
			dec := json.NewDecoder(strings.NewReader(out))
			dec.DisallowUnknownFields()
			var v StatusView
			if err := dec.Decode(&v); err != nil {
				t.Fatalf("output does not match StatusView: %v", err)
			}
			if v.Kind != "GrayStatus" || v.APIVersion != "kubectl-gray/v1" {
				t.Errorf("kind/apiVersion = %q/%q", v.Kind, v.APIVersion)
			}
			var raw map[string]any
			if err := json.Unmarshal([]byte(out), &raw); err != nil {
				t.Fatal(err)
			}
			checkRequiredKeys(t, "", reflect.TypeOf(StatusView{}), raw)
		})
	}

	documented := map[string]bool{"StatusView": true, "ConditionView": true, "RevisionView": true, "PodView": true, "EventView": true, "StatusViewList": true, "ContainerImage": true,
		"PolicyView": true, "FailureView": true, "NotReadyView": true, "PodReasonView": true}
	for _, file := range []string{"statusview.go", "deployments.go", "policy.go", "failure.go"} {
		f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSpec)
			if !ok || !documented[ts.Name.Name] {
				return true
			}
			delete(documented, ts.Name.Name)
			for _, field := range ts.Type.(*ast.StructType).Fields.List {
				if field.Doc == nil || strings.TrimSpace(field.Doc.Text()) == "" {
					t.Errorf("%s.%s has no doc comment", ts.Name.Name, field.Names[0].Name)
				}
			}
			return false
		})
	}
	for name := range documented {
		t.Errorf("type %s not found", name)
	}
}

// checkRequiredKeys asserts that every exported field of typ without omitempty is a
// key of obj, recursing into nested view objects and the first list item.
func checkRequiredKeys(t *testing.T, path string, typ reflect.Type, obj map[string]any) {
	t.Helper()
	for i := range typ.NumField() {
		f := typ.Field(i)
		if !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		val, present := obj[name]
		if !present {
			if !strings.Contains(opts, "omitempty") {
				t.Errorf("key %s%s is missing from the output", path, name)
			}
			continue
		}
		ft := f.Type
		if ft.Kind() == reflect.Pointer && ft.Elem().Kind() == reflect.Struct {
			if m, ok := val.(map[string]any); ok {
				checkRequiredKeys(t, path+name+".", ft.Elem(), m)
			}
		}
		if ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct {
			if items, _ := val.([]any); len(items) > 0 {
				if m, ok := items[0].(map[string]any); ok {
					checkRequiredKeys(t, path+name+"[0].", ft.Elem(), m)
				}
			}
		}
	}
}

// Status shows what gray-controller serves, as its status lists it: the list, "nothing", or,
// for a status of an older gray-controller, that it is not listed; -o json carries the list,
// [] for none, and no key for an older gray-controller.
func TestStatusServes(t *testing.T) {
	tests := []struct {
		name     string
		older    bool
		serves   grayapi.Serves
		line     string
		wantJSON string
	}{
		{name: "listed", serves: grayapi.Serves{grayapi.RequestNext, grayapi.RequestFull, grayapi.RequestAbort, grayapi.RequestUndo},
			line: "Serves:      next, full, abort, undo\n", wantJSON: `["next","full","abort","undo"]`},
		{name: "nothing", serves: grayapi.Serves{}, line: "Serves:      nothing\n", wantJSON: `[]`},
		{name: "older gray-controller", older: true,
			line: "Serves:      not listed: gray-controller is older than this plugin; upgrade it\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := heldStatus(0, 10)
			st.Serves = tt.serves
			gray := withGray(t, "10,30", st)
			if tt.older {
				gray = withOlderGray(t, "10,30", st)
			}
			v := newStatusView(deployment("web", testutil.WithRevision(2), testutil.WithGeneration(4, 4), gray), nil)
			var text strings.Builder
			if err := renderStatus(&text, v, clock(), false); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(text.String(), tt.line) {
				t.Errorf("status lacks %q:\n%s", tt.line, text.String())
			}
			out, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			var raw map[string]json.RawMessage
			if err := json.Unmarshal(out, &raw); err != nil {
				t.Fatal(err)
			}
			if got := string(raw["serves"]); got != tt.wantJSON {
				t.Errorf("json serves = %s, want %s", got, tt.wantJSON)
			}
		})
	}
}

func TestProgressBar(t *testing.T) {
	tests := []struct {
		name        string
		done, total int32
		want        string
	}{
		{name: "empty", done: 0, total: 4, want: "[--------]"},
		{name: "three quarters", done: 3, total: 4, want: "[######--]"},
		{name: "full", done: 4, total: 4, want: "[########]"},
		{name: "over is capped", done: 6, total: 4, want: "[########]"},
		{name: "hold at zero", done: 0, total: 0, want: "[########]"},
		{name: "one of three rounds down", done: 1, total: 3, want: "[##------]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := progressBar(tt.done, tt.total, 8); got != tt.want {
				t.Fatalf("progressBar(%d, %d, 8) = %q, want %q", tt.done, tt.total, got, tt.want)
			}
		})
	}
}
