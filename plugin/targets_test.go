package plugin

import (
	"context"
	"errors"
	"net"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// Failures of several Deployments, as the verbs that take several report them: each names its
// Deployment.
const (
	nopeNotFound = `deployment default/nope not found: check the name and the namespace (-n), or list them with 'kubectl get deployments -n default'`
	dbNotGray    = `deployment default/db is not a gray Deployment (no kubegray.io/percent annotation), so there is no `
)

// copyAs is a copy of the Deployment first in objs named name, with its own UID and labels.
func copyAs(objs []runtime.Object, name string, labels map[string]string) *appsv1.Deployment {
	d := objs[0].(*appsv1.Deployment).DeepCopy()
	d.Name, d.UID, d.Labels = name, types.UID("uid-"+name), labels
	return d
}

// TestCompleteNames pins the arguments of a verb that takes several Deployments: names or -l,
// one of the two.
func TestCompleteNames(t *testing.T) {
	tests := []struct {
		name     string
		selector string
		args     []string
		wantErr  string
	}{
		{name: "names", args: []string{"web", "deploy/api"}},
		{name: "selector", selector: "tier=front"},
		{name: "neither", wantErr: "give one or more Deployments, or -l SELECTOR, e.g. 'kubectl gray resume web'"},
		{name: "both", selector: "tier=front", args: []string{"web"}, wantErr: "give Deployment names or -l tier=front, not both"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := TargetOptions{Selector: tt.selector}
			err := o.completeNames("resume", tt.args)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || strings.Join(o.Args, " ") != strings.Join(tt.args, " ") {
				t.Fatalf("Args %q, err %v; want %q", o.Args, err, tt.args)
			}
		})
	}
}

// TestObjectErrors pins how the failures of several Deployments print: one a line, each after
// the error prefix (the first gets it from the root command), and the exit code of the worst.
func TestObjectErrors(t *testing.T) {
	err := joinObjectErrors([]error{errors.New("deployment default/a: one"), errors.New("deployment default/b: two")})
	if got, want := err.Error(), "deployment default/a: one\nerror: deployment default/b: two"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if ExitCode(err) != ExitFailure {
		t.Errorf("exit code %d, want %d", ExitCode(err), ExitFailure)
	}
	timedOut := joinObjectErrors([]error{errors.New("a"), &exitError{code: ExitTimeout, err: errors.New("b")}})
	if ExitCode(timedOut) != ExitTimeout {
		t.Errorf("exit code %d with a timeout among the failures, want %d", ExitCode(timedOut), ExitTimeout)
	}
	if joinObjectErrors(nil) != nil {
		t.Error("no failure is not nil")
	}
}

// TestResumeSeveral pins resume of several Deployments, as kubectl's rollout verbs take them:
// one result line each, in the order named, the failures (each naming its Deployment) after
// the others were done.
func TestResumeSeveral(t *testing.T) {
	web := heldWeb(t)
	cs := fake.NewClientset(append(web, copyAs(web, "api", nil), deployment("db"))...)
	out, err := resumeRun(cs, []string{"web", "nope", "db", "deploy/api"}, nil)
	checkGolden(t, "resume", "several", out)
	var errs objectErrors
	if !errors.As(err, &errs) || len(errs) != 2 || errs[0].Error() != nopeNotFound || !strings.HasPrefix(errs[1].Error(), dbNotGray) {
		t.Fatalf("err = %v, want the failures of nope and db", err)
	}
	for _, name := range []string{"web", "api"} {
		if got := getDeployment(t, cs, name).Annotations[grayapi.ResumeAnnotation]; got != "2:next" {
			t.Errorf("deployment %s: %s = %q, want 2:next", name, grayapi.ResumeAnnotation, got)
		}
	}
}

// TestResumeSelector pins resume -l: every Deployment the selector matches, none other; with
// -o yaml the objects are separated as kubectl separates them.
func TestResumeSelector(t *testing.T) {
	front := map[string]string{"tier": "front"}
	web := heldWeb(t)
	web[0].(*appsv1.Deployment).Labels = front
	cs := fake.NewClientset(append(web, copyAs(web, "api", front), copyAs(web, "db", map[string]string{"tier": "back"}))...)
	out, err := resumeRun(cs, nil, func(o *ResumeOptions) { o.Selector = "tier=front"; *o.PrintFlags.OutputFormat = "yaml" })
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(out, "\n---\n"); n != 1 || !strings.Contains(out, "name: web\n") || !strings.Contains(out, "name: api\n") {
		t.Errorf("-o yaml of two Deployments has %d separators:\n%s", n, out)
	}
	for name, want := range map[string]string{"web": "2:next", "api": "2:next", "db": ""} {
		if got := getDeployment(t, cs, name).Annotations[grayapi.ResumeAnnotation]; got != want {
			t.Errorf("deployment %s: %s = %q, want %q", name, grayapi.ResumeAnnotation, got, want)
		}
	}
}

// TestAbortRetryUndoSeveral pins that abort, retry and undo take several Deployments the same
// way: a result line for each that could be done, and the others' failures.
func TestAbortRetryUndoSeveral(t *testing.T) {
	tests := []struct {
		name    string
		run     func(cs *fake.Clientset, args []string) (string, error)
		objects func(t *testing.T) []runtime.Object
		want    string
	}{
		{name: "abort", objects: heldWeb, run: func(cs *fake.Clientset, args []string) (string, error) { return abortRun(cs, args, nil) },
			want: "deployment.apps/web gray abort requested (revision 2 back to stable revision 1, template kept)\ndeployment.apps/api gray abort requested (revision 2 back to stable revision 1, template kept)\n"},
		{name: "retry", objects: abortedWeb, run: func(cs *fake.Clientset, args []string) (string, error) { return retryRun(cs, args, nil) },
			want: "deployment.apps/web gray retry requested (revision 2 starts again at 30%)\ndeployment.apps/api gray retry requested (revision 2 starts again at 30%)\n"},
		{name: "undo", objects: undoWeb, run: func(cs *fake.Clientset, args []string) (string, error) {
			out, _, err := undoRun(cs, args, func(o *UndoOptions) { o.ToRevision = 1 })
			return out, err
		}, want: "deployment.apps/web rolled back to revision 1 (app: nginx:1.27 -> nginx:1.26)\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs := tt.objects(t)
			args := []string{"web", "nope", "db", "api"}
			if tt.name != "undo" {
				objs = append(objs, copyAs(objs, "api", nil))
			} else {
				// An undo reads the Deployment's own ReplicaSets, which a copy has none of.
				args = []string{"web", "nope", "db"}
			}
			cs := fake.NewClientset(append(objs, deployment("db"))...)
			out, err := tt.run(cs, args)
			if out != tt.want {
				t.Errorf("stdout:\n%s\nwant:\n%s", out, tt.want)
			}
			var errs objectErrors
			if !errors.As(err, &errs) || len(errs) != 2 || errs[0].Error() != nopeNotFound || !strings.HasPrefix(errs[1].Error(), "deployment default/db ") {
				t.Fatalf("err = %v, want the failures of nope and db", err)
			}
		})
	}
}

// TestEachTargetStops pins when a run over several Deployments stops early: after an
// interrupt or a failure to reach the server, but not after a failure of one Deployment.
func TestEachTargetStops(t *testing.T) {
	refused := &url.Error{Op: "Get", URL: "https://10.0.0.1:6443/apis",
		Err: &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}}
	tests := []struct {
		name       string
		fail       func(cancel context.CancelFunc) error
		wantCalled string
	}{
		{name: "one fails", fail: func(context.CancelFunc) error { return errors.New("deployment default/a: refused") }, wantCalled: "a b c"},
		{name: "interrupted", fail: func(cancel context.CancelFunc) error { cancel(); return context.Canceled }, wantCalled: "a"},
		{name: "unreachable", fail: func(context.CancelFunc) error { return refused }, wantCalled: "a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := TargetOptions{Namespace: ns, Args: []string{"a", "deploy/b", "c"}, Getter: testNames()}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var called []string
			err := o.eachTarget(ctx, func(name string) error {
				called = append(called, name)
				return tt.fail(cancel)
			})
			if err == nil || strings.Join(called, " ") != tt.wantCalled {
				t.Fatalf("called %q, err %v; want %q called and an error", called, err, tt.wantCalled)
			}
		})
	}
}
