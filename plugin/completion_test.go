package plugin

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func TestDeploymentCompletions(t *testing.T) {
	cs := fake.NewClientset(deployment("web"), deployment("worker"), deployment("api"))
	tests := []struct {
		name       string
		toComplete string
		want       []string
	}{
		{name: "all", toComplete: "", want: []string{"api", "web", "worker"}},
		{name: "prefix", toComplete: "w", want: []string{"web", "worker"}},
		{name: "type prefix kept", toComplete: "deploy/wo", want: []string{"deploy/worker"}},
		{name: "qualified type", toComplete: "deployment.apps/", want: []string{"deployment.apps/api", "deployment.apps/web", "deployment.apps/worker"}},
		{name: "other type", toComplete: "sts/w", want: nil},
		{name: "no match", toComplete: "x", want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := deploymentCompletions(context.Background(), testNames(), cs, ns, tt.toComplete)
			if !slices.Equal(got, tt.want) {
				t.Fatalf("deploymentCompletions(%q) = %q, want %q", tt.toComplete, got, tt.want)
			}
		})
	}
}

func TestNamespaceCompletions(t *testing.T) {
	cs := fake.NewClientset(
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-b"}},
	)
	if got := namespaceCompletions(context.Background(), cs, "team"); !slices.Equal(got, []string{"team-a", "team-b"}) {
		t.Fatalf("namespaceCompletions = %q", got)
	}
}

// runRoot runs the real command tree, as kubectl would run the binary.
func runRoot(args ...string) (string, string, error) {
	streams, out, errOut := testStreams()
	cmd := NewCmdGray(streams)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(context.Background())
	return out.String(), errOut.String(), err
}

func TestCompleteVerbsAndFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
	}{
		{name: "verbs", args: []string{"__complete", ""}},
		{name: "until", args: []string{"__complete", "status", "web", "--until", ""}},
		{name: "dry-run-flag", args: []string{"__complete", "undo", "web", "--dry"}},
		// --dry-run alone is the client strategy, as in kubectl, so the word after a space is an
		// argument: its values complete after "--dry-run=".
		{name: "dry-run-values", args: []string{"__complete", "set", "web", "20", "--dry-run="}},
		{name: "output-values", args: []string{"__complete", "resume", "web", "-o", ""}},
		{name: "abort-dry-run-values", args: []string{"__complete", "abort", "web", "--dry-run="}},
		{name: "retry-output-values", args: []string{"__complete", "retry", "web", "-o", ""}},
		{name: "on-failure-values", args: []string{"__complete", "set", "web", "20", "--on-failure", ""}},
		{name: "hold-for-values", args: []string{"__complete", "set", "web", "20", "--hold-for", ""}},
		// Hold points are typed, not listed: nothing is offered, files neither.
		{name: "percent-values", args: []string{"__complete", "set", "web", "10@5m,"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, _, err := runRoot(tt.args...)
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, "completion", tt.name, out)
		})
	}
}

func TestCompletionScripts(t *testing.T) {
	for _, shell := range shells {
		t.Run(shell, func(t *testing.T) {
			streams, out, _ := testStreams()
			root := NewCmdGray(streams)
			root.SetArgs([]string{"completion", shell})
			if err := root.Execute(); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out.String(), "kubectl-gray") {
				t.Errorf("%s script does not name the kubectl-gray binary", shell)
			}
			if root.Use != "gray" {
				t.Errorf("root command renamed to %q after generating the script", root.Use)
			}
		})
	}
	_, _, err := runRoot("completion", "tcsh")
	if err == nil || err.Error() != "unsupported shell \"tcsh\": use one of bash, zsh, fish, powershell" {
		t.Fatalf("err = %v", err)
	}
}

// TestKubectlCompleteScript checks the script kubectl (1.26+) runs to
// complete `kubectl gray ...`.
func TestKubectlCompleteScript(t *testing.T) {
	const path = "../kubectl_complete-gray"
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm()&0o111 != 0o111 {
		t.Errorf("%s mode %v is not executable for everyone", path, info.Mode().Perm())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if lines[0] != "#!/usr/bin/env sh" || lines[len(lines)-1] != `kubectl gray __complete "$@"` {
		t.Errorf("script %q: want a #!/usr/bin/env sh line and a last line calling kubectl gray __complete \"$@\"", b)
	}
}
