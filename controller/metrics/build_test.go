package metrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/kubegray/kubectl-gray/pkg/version"
)

// TestRecordBuildInfo: the served registry has one build_info series, of the binary's version and
// the mode given last.
func TestRecordBuildInfo(t *testing.T) {
	RecordBuildInfo("alongside")
	RecordBuildInfo("instead")
	want := `
# HELP gray_controller_build_info 1 for the running gray-controller: its version and the mode it runs in.
# TYPE gray_controller_build_info gauge
gray_controller_build_info{mode="instead",version="` + version.Version + `"} 1
`
	if err := testutil.GatherAndCompare(global.registry, strings.NewReader(want), "gray_controller_build_info"); err != nil {
		t.Error(err)
	}
}
