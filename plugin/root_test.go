package plugin

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/homedir"
)

func TestHelp(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
	}{
		{name: "root", args: []string{"--help"}},
		{name: "set", args: []string{"set", "--help"}},
		{name: "status", args: []string{"status", "--help"}},
		{name: "abort", args: []string{"abort", "--help"}},
		{name: "retry", args: []string{"retry", "--help"}},
		{name: "dashboard", args: []string{"dashboard", "--help"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, _, err := runRoot(tt.args...)
			if err != nil {
				t.Fatal(err)
			}
			// The --cache-dir default depends on the home directory.
			out = strings.ReplaceAll(out, homedir.HomeDir(), "$HOME")
			checkGolden(t, "help", tt.name, out)
		})
	}
}

func TestErrorsArePrintedOnceWithoutUsage(t *testing.T) {
	out, errOut, err := runRoot("set", "web", "abc")
	if ExitCode(err) != ExitFailure {
		t.Fatalf("exit code %d, want 1", ExitCode(err))
	}
	want := `error: invalid kubegray.io/percent "abc": hold points must be strictly increasing integers 0-99, e.g. "10,30,60"; "abc" is not an integer` + "\n"
	if out != "" || errOut != want {
		t.Fatalf("stdout %q, stderr %q; want only stderr %q", out, errOut, want)
	}
}

func TestExitCode(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want int
	}{
		{name: "success", err: nil, want: 0},
		{name: "error", err: errors.New("boom"), want: 1},
		{name: "timeout", err: &exitError{code: ExitTimeout, err: errors.New("timed out")}, want: 2},
		{name: "wrapped timeout", err: fmt.Errorf("status: %w", &exitError{code: ExitTimeout, err: errors.New("timed out")}), want: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ExitCode(tt.err); got != tt.want {
				t.Fatalf("ExitCode(%v) = %d, want %d", tt.err, got, tt.want)
			}
		})
	}
}

func TestAPIError(t *testing.T) {
	gr := appsv1.Resource("deployments")
	tests := []struct {
		name string
		err  error
		verb string
		want string
	}{
		{name: "not found", err: apierrors.NewNotFound(gr, "web"), verb: "get",
			want: "deployment default/web not found: check the name and the namespace (-n), or list them with 'kubectl get deployments -n default'"},
		{name: "forbidden", err: apierrors.NewForbidden(gr, "web", errors.New("no")), verb: "get",
			want: `deployment default/web: you may not get deployments.apps in namespace default; ask for RBAC permission (check with 'kubectl auth can-i get deployments.apps -n default'): deployments.apps "web" is forbidden: no`},
		{name: "unauthorized", err: apierrors.NewUnauthorized("expired"), verb: "get",
			want: "deployment default/web: the API server did not accept your credentials; log in again or check --kubeconfig and --context: expired"},
		{name: "conflict", err: apierrors.NewConflict(gr, "web", errors.New("modified")), verb: "patch",
			want: `deployment default/web kept changing while kubectl gray wrote it; run the command again: Operation cannot be fulfilled on deployments.apps "web": modified`},
		{name: "other", err: errors.New("connection refused"), verb: "get", want: "deployment default/web: connection refused"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := apiError(tt.err, tt.verb, "default", "web")
			if got.Error() != tt.want {
				t.Fatalf("apiError()\n got %s\nwant %s", got, tt.want)
			}
			if !errors.Is(got, tt.err) && tt.name != "not found" {
				t.Errorf("apiError() does not wrap the API error")
			}
		})
	}
}
