#!/usr/bin/env bash
# Builds Prometheus (prometheus and promtool) from its Go module into a cache folder outside
# the repository, once per machine, for the suites that scrape gray-controller and query it
# (and later the gates' and alerts' suites). The binaries are reused, so a warm run takes
# milliseconds; cold, the build is about 8 minutes on 2 cores.
#
# Prints the cache folder (holding bin/) on its last line.
set -euo pipefail

# Prometheus' Go module versions are v0.3MM.P for its release v3.MM.P.
prometheus_version="v0.316.0"
cache="${KUBEGRAY_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-gray}/prometheus-${prometheus_version}"
bin="$cache/bin"
mkdir -p "$bin"
# One build at a time: `make test` starts it in the background and the suites that need it
# run this script too and wait here.
exec 9>"$cache/.build.lock"
flock 9

if [[ ! -x "$bin/prometheus" || ! -x "$bin/promtool" ]]; then
	echo "build-prometheus: building prometheus and promtool $prometheus_version (about 8 minutes cold on 2 cores)" >&2
	tmp="$(mktemp -d "$cache/build.XXXXXX")"
	mmm="$(cut -d. -f2 <<<"$prometheus_version")"
	release="$((mmm / 100)).$((mmm % 100)).$(cut -d. -f3 <<<"$prometheus_version")"
	# Without the builtinassets tag the web UI is left out: the suites use the HTTP API only.
	GOBIN="$tmp" GOFLAGS=-mod=mod go install -trimpath \
		-ldflags "-s -w -X github.com/prometheus/common/version.Version=$release" \
		"github.com/prometheus/prometheus/cmd/prometheus@$prometheus_version" \
		"github.com/prometheus/prometheus/cmd/promtool@$prometheus_version"
	mv "$tmp/prometheus" "$tmp/promtool" "$bin/"
	rmdir "$tmp"
fi

echo "$cache"
