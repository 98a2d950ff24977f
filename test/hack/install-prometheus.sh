#!/usr/bin/env bash
# Puts Prometheus (prometheus and promtool) from Debian's package into a cache folder outside
# the repository, once per machine, for the suites that scrape gray-controller and query it.
# The package is downloaded and unpacked, not installed: nothing is started or registered as a
# service, and no web UI assets are needed (the suites use the HTTP API only). About a second
# where building the same from the Go module took 8 min 21 s of both cores (docs/development.md).
#
# Prints the cache folder (holding bin/) on its last line.
set -euo pipefail

candidate() { apt-cache policy prometheus 2>/dev/null | sed -n 's/^ *Candidate: //p'; }
# apt runs one at a time among the project's install scripts (install-chromium.sh too), which
# make test starts at once: two apt-get updates at a time fail on apt's lock.
cachebase="${KUBEGRAY_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-gray}"
mkdir -p "$cachebase"
aptlock="$cachebase/.apt.lock"
version="$(candidate)"
if [[ -z "$version" || "$version" == "(none)" ]]; then
	# A machine whose package lists were never fetched.
	if [[ "$(id -u)" != 0 ]]; then
		echo "install-prometheus: apt knows no prometheus package; run apt-get update as root" >&2
		exit 1
	fi
	flock "$aptlock" apt-get update -qq >&2
	version="$(candidate)"
fi
cache="$cachebase/prometheus-deb-${version}"
bin="$cache/bin"
mkdir -p "$cache"
# One download at a time: `make test` starts it in the background and the suites that need it
# run this script too and wait here.
exec 9>"$cache/.install.lock"
flock 9

if [[ ! -x "$bin/prometheus" || ! -x "$bin/promtool" ]]; then
	echo "install-prometheus: prometheus $version from Debian's package" >&2
	tmp="$(mktemp -d "$cache/download.XXXXXX")"
	(cd "$tmp" && flock "$aptlock" apt-get download -q "prometheus=$version" 2>&1 | grep -v '^W: Download is performed unsandboxed' >&2 || true)
	deb="$(ls "$tmp"/prometheus_*.deb)"
	dpkg-deb -x "$deb" "$tmp/root"
	mkdir -p "$bin"
	mv "$tmp/root/usr/bin/prometheus" "$tmp/root/usr/bin/promtool" "$bin/"
	rm -rf "$tmp"
fi

echo "$cache"
