package controller

import (
	"bytes"
	"runtime"
	"strings"
	"testing"

	"github.com/kubegray/kubectl-gray/pkg/version"
)

func setVersion(t *testing.T, v, commit, date string) {
	t.Helper()
	oldV, oldC, oldD := version.Version, version.Commit, version.Date
	version.Version, version.Commit, version.Date = v, commit, date
	t.Cleanup(func() { version.Version, version.Commit, version.Date = oldV, oldC, oldD })
}

func execute(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	cmd := NewCommand()
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), errOut.String(), err
}

func TestVersionCommand(t *testing.T) {
	setVersion(t, "v1.2.3", "abc1234", "2026-11-29T10:00:00Z")
	platform := runtime.GOOS + "/" + runtime.GOARCH
	tests := []struct {
		name    string
		args    []string
		wantOut string
		wantErr string
	}{
		{
			name:    "one line",
			args:    []string{"version"},
			wantOut: "gray-controller v1.2.3 (commit abc1234, built 2026-11-29T10:00:00Z, " + runtime.Version() + ", " + platform + ")\n",
		},
		{name: "short", args: []string{"version", "--short"}, wantOut: "v1.2.3\n"},
		{
			name: "json",
			args: []string{"version", "-o", "json"},
			wantOut: `{
  "version": "v1.2.3",
  "commit": "abc1234",
  "date": "2026-11-29T10:00:00Z",
  "goVersion": "` + runtime.Version() + `",
  "platform": "` + platform + `"
}
`,
		},
		{name: "yaml is not offered", args: []string{"version", "-o", "yaml"}, wantErr: `invalid --output "yaml": the only format is "json"`},
		{name: "short and output together", args: []string{"version", "--short", "-o", "json"}, wantErr: "--short and --output cannot be used together"},
		{name: "no arguments", args: []string{"version", "extra"}, wantErr: `unknown command "extra"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, _, err := execute(t, tt.args...)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if out != tt.wantOut {
				t.Errorf("output:\n%s\nwant:\n%s", out, tt.wantOut)
			}
		})
	}
}

// TestRootCommandDefaultMode: alongside is the default mode and is accepted;
// a bad --takeover with it is reported like any other flag error (before any
// API call is made).
func TestRootCommandDefaultMode(t *testing.T) {
	_, errOut, err := execute(t, "--takeover=lazy")
	want := `invalid --takeover "lazy": must be "admission" or "eager"`
	if err == nil || err.Error() != want {
		t.Fatalf("error = %v, want %q", err, want)
	}
	if !strings.Contains(errOut, "Error: "+want) {
		t.Errorf("stderr = %q, want the error printed", errOut)
	}
	if strings.Contains(errOut, "Usage:") {
		t.Errorf("stderr shows the usage, which buries the error:\n%s", errOut)
	}
}

func TestRootCommandRejects(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{name: "positional arguments", args: []string{"web"}, wantErr: `unknown command "web" for "gray-controller"`},
		{name: "unknown flag", args: []string{"--mode=instead", "--worker=3"}, wantErr: "unknown flag: --worker"},
		{name: "bad flag value", args: []string{"--mode=instead", "--workers=0"}, wantErr: "invalid --workers 0: must be at least 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, _, err := execute(t, tt.args...); err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestRootHelp(t *testing.T) {
	out, _, err := execute(t, "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Modes (--mode):",
		"--controllers=*,-deployment-controller",
		"\nCommands:\n",
		"  version     Print the version of gray-controller\n",
		"\nController flags:\n",
		"\nLeader election flags:\n",
		"\nServing flags:\n",
		"\nLogging flags:\n",
		`--mode string`,
		`(default "alongside")`,
		"-v, --v Level",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("--help does not contain %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "completion") {
		t.Errorf("--help offers shell completion, which a controller does not need:\n%s", out)
	}

	versionHelp, _, err := execute(t, "version", "--help")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(versionHelp, "--short") || strings.Contains(versionHelp, "Leader election flags") {
		t.Errorf("version --help should show its own flags only:\n%s", versionHelp)
	}
}
