package e2e

// How the plugin tests use kubectl gray: pluginUser runs the real kubectl as a user does and
// counts the writes each command sends; the grayEnv readers check the cluster afterwards.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegray/kubectl-gray/pkg/deployutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
	"github.com/kubegray/kubectl-gray/test/cluster"
)

// kubectlTimeout bounds one kubectl run; the longest wait a test asks of
// `kubectl gray status --until` is 150s (the randomized suite).
const kubectlTimeout = 180 * time.Second

// pluginUser runs the real kubectl the way a user of kubectl gray does: the
// built kubectl-gray and the repository's kubectl_complete-gray on PATH, and
// KUBECONFIG pointing at the cluster, with namespace as the current
// context's namespace.
type pluginUser struct {
	t   testing.TB
	env []string
	// auditLog and auditOffset follow kube-apiserver's audit log, so writes
	// can be counted per command.
	auditLog    string
	auditOffset int64
	// quiet leaves runs out of the test log (benchmarks, whose logs are
	// always printed).
	quiet bool
}

// ran is what one kubectl run printed and how it exited.
type ran struct {
	args   []string
	stdout string
	stderr string
	code   int
}

func (r ran) String() string {
	return fmt.Sprintf("kubectl %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(r.args, " "), r.code, r.stdout, r.stderr)
}

func newPluginUser(t testing.TB, c *cluster.Cluster, namespace string) *pluginUser {
	t.Helper()
	dir := t.TempDir()
	binDir := filepath.Join(dir, "bin")
	if err := os.Mkdir(binDir, 0o755); err != nil {
		t.Fatal(err)
	}
	plug, err := filepath.Abs(ourBinary(t, "kubectl-gray"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(plug, filepath.Join(binDir, "kubectl-gray")); err != nil {
		t.Fatal(err)
	}
	// Tests run in test/e2e; the script lives at the root of the repository.
	script, err := os.ReadFile("../../kubectl_complete-gray")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(binDir, "kubectl_complete-gray"), script, 0o755); err != nil {
		t.Fatal(err)
	}
	kubeconfig, err := os.ReadFile(c.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	kubeconfigPath := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfigPath, kubeconfig, 0o600); err != nil {
		t.Fatal(err)
	}

	env := []string{
		"PATH=" + binDir + string(os.PathListSeparator) + os.Getenv("PATH"),
		"KUBECONFIG=" + kubeconfigPath,
		// A private discovery and HTTP cache, so runs do not share state.
		"KUBECACHEDIR=" + filepath.Join(dir, "cache"),
	}
	for _, kv := range os.Environ() {
		key, _, _ := strings.Cut(kv, "=")
		switch key {
		case "PATH", "KUBECONFIG", "KUBECACHEDIR", "NO_COLOR":
		default:
			env = append(env, kv)
		}
	}
	u := &pluginUser{t: t, env: env, auditLog: c.AuditLog()}
	// The namespace is set the way a person sets it, so every plugin command
	// below also proves that the plugin reads it from the kubeconfig.
	u.must("config", "set-context", "--current", "--namespace="+namespace)
	return u
}

// kubectl runs /usr/bin/kubectl (whichever kubectl is on PATH) with args.
func (u *pluginUser) kubectl(args ...string) ran {
	u.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), kubectlTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "kubectl", args...)
	cmd.Env = u.env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := ran{args: args, stdout: stdout.String(), stderr: stderr.String()}
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit) && ctx.Err() == nil:
		r.code = exit.ExitCode()
	default:
		u.t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, r)
	}
	// A transcript of the session, shown with -v or when the test fails.
	if !u.quiet {
		u.t.Logf("$ kubectl %s  # exit %d\n%s%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	return r
}

// must runs kubectl, fails the test unless it exits 0, and returns stdout.
func (u *pluginUser) must(args ...string) string {
	u.t.Helper()
	r := u.kubectl(args...)
	if r.code != 0 {
		u.t.Fatalf("want exit 0, got %s", r)
	}
	return r.stdout
}

// fails runs kubectl and fails the test unless it exits with code and
// prints each of the messages on stderr.
func (u *pluginUser) fails(code int, messages []string, args ...string) ran {
	u.t.Helper()
	r := u.kubectl(args...)
	if r.code != code {
		u.t.Fatalf("want exit %d, got %s", code, r)
	}
	for _, m := range messages {
		if !strings.Contains(r.stderr, m) {
			u.t.Errorf("stderr of kubectl %s lacks %q:\n%s", strings.Join(args, " "), m, r.stderr)
		}
	}
	return r
}

// writes returns the writes kubectl-gray sent (user agent kubectl-gray/...)
// since the last call, read from the audit log, as "VERB RESOURCE/NAME
// QUERY" (the query says dry run and field manager). The API server logs in
// blocking mode, so a command's writes are there when it has exited. A write
// refused with 409 Conflict changed nothing: the plugin reads again and
// retries it (the controller wrote the Deployment in between, which a loaded
// machine makes likelier), so it is logged, not returned.
func (u *pluginUser) writes() []string {
	u.t.Helper()
	data, err := os.ReadFile(u.auditLog)
	if err != nil {
		u.t.Fatal(err)
	}
	data = data[u.auditOffset:]
	// Only whole lines: the server may be writing the next one.
	data = data[:bytes.LastIndexByte(data, '\n')+1]
	u.auditOffset += int64(len(data))
	var writes []string
	for _, line := range bytes.Split(data, []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var ev struct {
			Stage      string `json:"stage"`
			Verb       string `json:"verb"`
			RequestURI string `json:"requestURI"`
			UserAgent  string `json:"userAgent"`
			ObjectRef  struct {
				Resource string `json:"resource"`
				Name     string `json:"name"`
			} `json:"objectRef"`
			ResponseStatus struct {
				Code int `json:"code"`
			} `json:"responseStatus"`
		}
		if err := json.Unmarshal(line, &ev); err != nil {
			u.t.Fatalf("audit log %s: %v", u.auditLog, err)
		}
		if ev.Stage != "ResponseComplete" || !strings.HasPrefix(ev.UserAgent, "kubectl-gray/") {
			continue
		}
		_, query, _ := strings.Cut(ev.RequestURI, "?")
		write := fmt.Sprintf("%s %s/%s %s", ev.Verb, ev.ObjectRef.Resource, ev.ObjectRef.Name, query)
		if ev.ResponseStatus.Code == http.StatusConflict {
			u.t.Logf("%s: 409 Conflict, retried", write)
			continue
		}
		writes = append(writes, write)
	}
	return writes
}

// wantWrites fails unless kubectl-gray sent exactly want since the last
// check.
func (u *pluginUser) wantWrites(t *testing.T, what string, want ...string) {
	t.Helper()
	if got := u.writes(); !slices.Equal(got, want) {
		t.Errorf("%s sent %q, want %q", what, got, want)
	}
}

// lastLine is the last non-empty line of s.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}

func wantOutput(t *testing.T, what, got, want string) {
	t.Helper()
	if got != want {
		t.Errorf("%s printed %q, want %q", what, got, want)
	}
}

// settledNow fails unless the Deployment is at want right now: a command
// that waited for a state must not return before the cluster is in it.
func (e *grayEnv) settledNow(name string, want grayState) {
	e.t.Helper()
	if got, _, msg := e.observed(name); got != want {
		e.t.Fatalf("deployment %s/%s is %+v, want %+v: %s", e.ns, name, got, want, msg)
	}
}

func (e *grayEnv) get(name string) *appsv1.Deployment {
	e.t.Helper()
	d, err := e.client.AppsV1().Deployments(e.ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return d
}

// sizesByRevision maps revision → spec.replicas of the Deployment's
// ReplicaSets, and revision → image.
func (e *grayEnv) sizesByRevision(name string) (map[string]int32, map[string]string) {
	e.t.Helper()
	sizes, images := map[string]int32{}, map[string]string{}
	for _, rs := range ownedReplicaSets(e.t, e.client, e.get(name)) {
		rev := rs.Annotations[deployutil.RevisionAnnotation]
		sizes[rev] = replicasOf(rs.Spec.Replicas)
		images[rev] = rs.Spec.Template.Spec.Containers[0].Image
	}
	return sizes, images
}

func (e *grayEnv) wantSizes(name string, sizes map[string]int32, images map[string]string) {
	e.t.Helper()
	gotSizes, gotImages := e.sizesByRevision(name)
	if fmt.Sprint(gotSizes) != fmt.Sprint(sizes) || fmt.Sprint(gotImages) != fmt.Sprint(images) {
		e.t.Errorf("deployment %s/%s ReplicaSets by revision: sizes %v images %v, want sizes %v images %v",
			e.ns, name, gotSizes, gotImages, sizes, images)
	}
}

// grayStatus reads kubegray.io/status as the controller wrote it.
func (e *grayEnv) grayStatus(d *appsv1.Deployment) grayapi.Status {
	e.t.Helper()
	st, err := grayapi.ParseStatus(d.Annotations[grayapi.StatusAnnotation])
	if err != nil {
		e.t.Fatalf("deployment %s/%s: %v", d.Namespace, d.Name, err)
	}
	return st
}

// decodeStrict decodes JSON that must match the documented type exactly: an
// unknown field means the output drifted from its documentation.
func decodeStrict(t *testing.T, data string, v any) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("decode %T: %v\n%s", v, err, data)
	}
}

// tableRows splits a kubectl-style table into its header and rows of
// whitespace-separated cells.
func tableRows(t *testing.T, out string) ([]string, [][]string) {
	t.Helper()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) == 0 || lines[0] == "" {
		t.Fatalf("empty table")
	}
	var rows [][]string
	for _, l := range lines[1:] {
		rows = append(rows, strings.Fields(l))
	}
	return strings.Fields(lines[0]), rows
}

// completions runs `kubectl __complete args...` and returns the candidates
// (descriptions dropped) and the cobra directive line.
func (u *pluginUser) completions(args ...string) ([]string, string) {
	u.t.Helper()
	out := u.must(append([]string{"__complete"}, args...)...)
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	directive := lines[len(lines)-1]
	var names []string
	for _, l := range lines[:len(lines)-1] {
		name, _, _ := strings.Cut(l, "\t")
		names = append(names, name)
	}
	return names, directive
}
