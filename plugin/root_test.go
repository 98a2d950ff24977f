package plugin

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/util/homedir"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
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
	want := `error: invalid kubegray.io/percent "abc": hold points must be strictly increasing integers 0-99, each with an optional hold duration of 1s to 744h, e.g. "10,30,60" or "10@5m,50@30m"; "abc" is not an integer` + "\n"
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

// unreachableFactory is the Factory of a kubeconfig whose server listens nowhere (port 1 of
// 127.0.0.1 refuses every connection), with discovery cached in a fresh directory: any request
// a command makes fails to connect.
func unreachableFactory(t *testing.T) cmdutil.Factory {
	t.Helper()
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "config")
	config := clientcmdapi.NewConfig()
	config.Clusters["closed"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:1"}
	config.AuthInfos["user"] = &clientcmdapi.AuthInfo{Token: "token"}
	config.Contexts["closed"] = &clientcmdapi.Context{Cluster: "closed", AuthInfo: "user", Namespace: ns}
	config.CurrentContext = "closed"
	if err := clientcmd.WriteToFile(*config, kubeconfig); err != nil {
		t.Fatal(err)
	}
	flags := genericclioptions.NewConfigFlags(true)
	flags.KubeConfig, flags.CacheDir = &kubeconfig, &dir
	return cmdutil.NewFactory(flags)
}

// TestFlagsRefusedBeforeAnyRequest pins that a bad flag value is refused with the flag and the
// value named before the server is asked anything, as kubectl refuses one: against a server
// that cannot be reached, the error is the flag's.
func TestFlagsRefusedBeforeAnyRequest(t *testing.T) {
	tests := []struct {
		name    string
		cmd     func(cmdutil.Factory, genericiooptions.IOStreams) *cobra.Command
		args    []string
		wantErr string
	}{
		{name: "status -o", cmd: NewCmdStatus, args: []string{"web", "-o", "foo"}, wantErr: `invalid -o "foo": use one of `},
		{name: "status --until", cmd: NewCmdStatus, args: []string{"web", "--until", "ready"}, wantErr: `invalid --until "ready": use "held" or "complete"`},
		{name: "history -o", cmd: NewCmdHistory, args: []string{"web", "-o", "foo"}, wantErr: `invalid -o "foo": use one of `},
		{name: "resume -o", cmd: NewCmdResume, args: []string{"web", "-o", "foo"}, wantErr: `invalid -o "foo": use one of `},
		{name: "undo --to-revision", cmd: NewCmdUndo, args: []string{"web", "--to-revision", "-1"}, wantErr: `invalid --to-revision -1: revisions start at 1`},
		{name: "abort -o", cmd: NewCmdAbort, args: []string{"web", "-o", "foo"}, wantErr: `invalid -o "foo": use one of `},
		{name: "retry -o", cmd: NewCmdRetry, args: []string{"web", "-o", "foo"}, wantErr: `invalid -o "foo": use one of `},
		{name: "release -o", cmd: NewCmdRelease, args: []string{"web", "-o", "foo"}, wantErr: `invalid -o "foo": use one of `},
		{name: "set -o", cmd: NewCmdSet, args: []string{"web", "20", "-o", "foo"}, wantErr: `invalid -o "foo": use one of `},
		{name: "restart --timeout", cmd: NewCmdRestart, args: []string{"web", "--timeout", "-1s"}, wantErr: `invalid --timeout -1s: must not be negative`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			streams, out, _ := testStreams()
			cmd := tt.cmd(unreachableFactory(t), streams)
			cmd.SetArgs(tt.args)
			cmd.SilenceErrors, cmd.SilenceUsage = true, true
			err := cmd.Execute()
			if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want one starting %q", err, tt.wantErr)
			}
			if out.Len() > 0 {
				t.Errorf("printed %q", out)
			}
		})
	}
}

// TestUnreachableServer pins how a server that cannot be reached reads: the address and the
// cause, whichever request failed first (discovery for a name, a list for a table), instead of
// a claim about the Deployment.
func TestUnreachableServer(t *testing.T) {
	const want = "cannot reach the API server at https://127.0.0.1:1: connect: connection refused"
	tests := []struct {
		name string
		cmd  func(cmdutil.Factory, genericiooptions.IOStreams) *cobra.Command
		args []string
	}{
		{name: "status of a name", cmd: NewCmdStatus, args: []string{"web"}},
		{name: "status table", cmd: NewCmdStatus},
		{name: "resume", cmd: NewCmdResume, args: []string{"deploy/web"}},
		{name: "set with a selector", cmd: NewCmdSet, args: []string{"-l", "tier=web", "20"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			streams, _, _ := testStreams()
			cmd := tt.cmd(unreachableFactory(t), streams)
			cmd.SetArgs(tt.args)
			cmd.SilenceErrors, cmd.SilenceUsage = true, true
			err := cmd.Execute()
			if err == nil || !strings.HasPrefix(err.Error(), want) {
				t.Fatalf("err = %v, want one starting %q", err, want)
			}
		})
	}
}

// TestReachError pins which errors read as an unreachable server: a failed connection or name
// lookup on the way to it, not an answer of the server nor an interrupted wait.
func TestReachError(t *testing.T) {
	refused := &url.Error{Op: "Get", URL: "https://10.0.0.1:6443/api?timeout=32s",
		Err: &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}}
	noHost := &url.Error{Op: "Get", URL: "https://api.example.invalid/apis/apps/v1",
		Err: &net.DNSError{Err: "no such host", Name: "api.example.invalid", IsNotFound: true}}
	tests := []struct {
		name string
		err  error
		want string
	}{
		{name: "refused, wrapped", err: fmt.Errorf(`"web" is not a Deployment: %w`, refused),
			want: "cannot reach the API server at https://10.0.0.1:6443: connect: connection refused; check that the cluster is up and that --context, --server or the kubeconfig point to it"},
		{name: "no such host", err: noHost,
			want: "cannot reach the API server at https://api.example.invalid: lookup api.example.invalid: no such host; check that the cluster is up and that --context, --server or the kubeconfig point to it"},
		{name: "not found", err: apierrors.NewNotFound(appsv1.Resource("deployments"), "web"), want: `deployments.apps "web" not found`},
		{name: "interrupted", err: &url.Error{Op: "Get", URL: "https://10.0.0.1:6443/apis", Err: context.Canceled}, want: `Get "https://10.0.0.1:6443/apis": context canceled`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := reachError(tt.err).Error(); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}
