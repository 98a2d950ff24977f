package plugin

import (
	"testing"

	"github.com/spf13/cobra"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
)

// TestParseDryRun pins --dry-run's values as kubectl reads them: the three strategies, the
// boolean forms kubectl still takes (true is client, false is none), and a bad value refused
// with the value named.
func TestParseDryRun(t *testing.T) {
	tests := []struct {
		value   string
		want    cmdutil.DryRunStrategy
		wantErr string
	}{
		{value: "none", want: cmdutil.DryRunNone},
		{value: "client", want: cmdutil.DryRunClient},
		{value: "server", want: cmdutil.DryRunServer},
		{value: "true", want: cmdutil.DryRunClient},
		{value: "false", want: cmdutil.DryRunNone},
		{value: "maybe", wantErr: `invalid --dry-run "maybe": must be "none", "client" or "server"`},
	}
	for _, tt := range tests {
		t.Run(tt.value, func(t *testing.T) {
			got, err := parseDryRun(tt.value)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("parseDryRun(%q) = %v, %v; want %v", tt.value, got, err, tt.want)
			}
		})
	}
}

// TestBareDryRunIsClient pins that every verb with --dry-run takes it without a value, as
// kubectl does, as the client strategy, and that the word after it stays an argument.
func TestBareDryRunIsClient(t *testing.T) {
	streams, _, _ := testStreams()
	f := cmdutil.NewFactory(testNames())
	for _, cmd := range []*cobra.Command{
		NewCmdSet(f, streams), NewCmdResume(f, streams), NewCmdUndo(f, streams), NewCmdAbort(f, streams),
		NewCmdRetry(f, streams), NewCmdRelease(f, streams), NewCmdRestart(f, streams),
	} {
		t.Run(cmd.Name(), func(t *testing.T) {
			if err := cmd.ParseFlags([]string{"--dry-run", "web"}); err != nil {
				t.Fatal(err)
			}
			if args := cmd.Flags().Args(); len(args) != 1 || args[0] != "web" {
				t.Errorf("args %q, want [web]", args)
			}
			got, err := parseDryRun(cmd.Flag("dry-run").Value.String())
			if err != nil || got != cmdutil.DryRunClient {
				t.Errorf("bare --dry-run reads as %v, %v; want the client strategy", got, err)
			}
		})
	}
}
