package plugin

import (
	"context"
	"testing"

	"github.com/kubegray/kubectl-gray/pkg/version"
)

func TestVersion(t *testing.T) {
	info := version.Info{Version: "v1.2.3", Commit: "abc1234", Date: "2026-02-01T00:00:00Z", GoVersion: "go1.26.8", Platform: "linux/amd64"}
	tests := []struct {
		name    string
		short   bool
		output  string
		args    []string
		wantErr string
	}{
		{name: "default"},
		{name: "short", short: true},
		{name: "json", output: "json"},
		{name: "yaml", output: "yaml"},
		{name: "short and output", short: true, output: "json", wantErr: "--short and --output cannot be combined"},
		{name: "bad output", output: "wide", wantErr: `invalid --output "wide": use json or yaml`},
		{name: "arguments", args: []string{"x"}, wantErr: "version takes no arguments"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			streams, out, _ := testStreams()
			o := NewVersionOptions(streams)
			o.Short, o.Output, o.BuildInfo = tt.short, tt.output, func() version.Info { return info }
			err := o.Complete(tt.args)
			if err == nil {
				err = o.Validate()
			}
			if err == nil {
				err = o.Run(context.Background())
			}
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, "version", tt.name, out.String())
		})
	}
}
