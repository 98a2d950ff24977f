#!/usr/bin/env bash
# Installs Debian's Chromium, the browser the dashboard e2e (test/e2e/dashboard_test.go) drives
# headless, once per machine. Unlike Prometheus it is installed, not unpacked: it needs its
# shared libraries. `make test` starts this in the background at the start; the e2e runs it
# too and waits here for that install.
#
# Prints the path of the chromium binary on its last line.
set -euo pipefail

lockdir="${KUBEGRAY_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-gray}"
mkdir -p "$lockdir"
exec 9>"$lockdir/.chromium.lock"
flock 9

if ! command -v chromium >/dev/null; then
	if [[ "$(id -u)" != 0 ]]; then
		echo "install-chromium: chromium is not installed; run as root: apt-get install -y chromium" >&2
		exit 1
	fi
	echo "install-chromium: chromium from Debian's package" >&2
	candidate="$(apt-cache policy chromium 2>/dev/null | sed -n 's/^ *Candidate: //p')"
	if [[ -z "$candidate" || "$candidate" == "(none)" ]]; then
		flock "$lockdir/.apt.lock" apt-get update -qq >&2
	fi
	# Another apt run of the machine may hold dpkg's lock for a while; wait for it. The project's
	# install scripts, which make test starts at once, take turns on .apt.lock
	# (install-prometheus.sh too): two apt-get updates at a time fail on apt's lock.
	flock "$lockdir/.apt.lock" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends -o DPkg::Lock::Timeout=600 chromium >&2
fi
command -v chromium
