package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/kubegray/kubectl-gray/pkg/version"
)

// buildInfo is served by every replica, the standbys too: joined with leader_election_master_status
// it says which version leads, during a self-upgrade for one.
var buildInfo = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Namespace: namespace,
	Name:      "build_info",
	Help:      "1 for the running gray-controller: its version and the mode it runs in.",
}, []string{"version", "mode"})

func init() {
	global.registry.MustRegister(buildInfo)
}

// RecordBuildInfo sets the build_info series of this binary's version running in mode; gray-controller
// calls it once, at start.
func RecordBuildInfo(mode string) {
	buildInfo.Reset()
	buildInfo.WithLabelValues(version.Version, mode).Set(1)
}
