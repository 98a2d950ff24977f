#!/usr/bin/env bash
# Builds the real control plane (etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler, kwok) from Go modules into a per-version cache folder outside
# the repository, and writes the kwok configuration next to them. Binaries that
# are already there are reused, so a warm run takes seconds.
#
# Prints the cache folder on its last line.
set -euo pipefail

# KUBEGRAY_K8S picks the Kubernetes version: 1.37.2 (the default, from the
# test module itself) or 1.35.4 (from test/k8s-1.35, its own module graph).
test_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)" # the test module
case "${KUBEGRAY_K8S:-1.37.2}" in
1.37.2) here="$test_dir" ;;
1.35.4) here="$test_dir/k8s-1.35" ;;
*)
	echo "build-controlplane: KUBEGRAY_K8S=$KUBEGRAY_K8S is not a version this repository builds (1.37.2 or 1.35.4)" >&2
	exit 2
	;;
esac
k8s_version="v${KUBEGRAY_K8S:-1.37.2}"
k8s_minor="$(cut -d. -f2 <<<"$k8s_version")"
kwok_version="v0.8.0"
cache="${KUBEGRAY_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-gray}/${k8s_version}-kwok-${kwok_version}"
bin="$cache/bin"
mkdir -p "$bin"
# One build per cache folder at a time: `make test` starts the builds in the background while
# the targets that need a control plane run this script too, and wait here for them.
exec 9>"$cache/.build.lock"
flock 9

log() { echo "build-controlplane: $*" >&2; }

missing=()
for b in etcd kube-apiserver kube-controller-manager kube-scheduler; do
	[[ -x "$bin/$b" ]] || missing+=("$b")
done

if ((${#missing[@]} > 0)); then
	log "building ${missing[*]} (about 10-13 minutes cold on 2 cores, seconds when the Go build cache is warm)"
	ldflags="-s -w"
	for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
		ldflags+=" -X $p.gitVersion=$k8s_version -X $p.gitMajor=1 -X $p.gitMinor=$k8s_minor -X $p.gitTreeState=clean"
	done
	tmp="$(mktemp -d "$cache/build.XXXXXX")"
	# One go build for all four shares the compile of their common dependencies.
	(cd "$here" && go build -trimpath -ldflags "$ldflags" -o "$tmp/" \
		k8s.io/kubernetes/cmd/kube-apiserver \
		k8s.io/kubernetes/cmd/kube-controller-manager \
		k8s.io/kubernetes/cmd/kube-scheduler \
		go.etcd.io/etcd/server/v3)
	mv "$tmp/server" "$tmp/etcd"
	for b in etcd kube-apiserver kube-controller-manager kube-scheduler; do
		mv "$tmp/$b" "$bin/$b"
	done
	rmdir "$tmp"
fi

if [[ ! -x "$bin/kwok" ]]; then
	# kwok pins k8s.io/* v0.36 and must not share the control plane's module graph, so it
	# is installed from its own go.mod at a fixed version (checked by sumdb).
	log "building kwok $kwok_version"
	GOBIN="$bin" GOFLAGS=-mod=mod go install -trimpath -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@$kwok_version"
fi

# kwok v0.8 ships no built-in stages; its module carries the "fast" stage set.
if [[ ! -s "$cache/kwok-stages.yaml" ]]; then
	dir="$(cd "$test_dir" && GOFLAGS=-mod=mod go mod download -json "sigs.k8s.io/kwok@$kwok_version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
	stages="$dir/kustomize/stage"
	{
		for f in node/fast/node-initialize node/heartbeat-with-lease/node-heartbeat-with-lease \
			pod/fast/pod-ready pod/fast/pod-complete pod/fast/pod-delete; do
			echo ---
			cat "$stages/$f.yaml"
		done
	} >"$cache/kwok-stages.yaml.tmp"
	mv "$cache/kwok-stages.yaml.tmp" "$cache/kwok-stages.yaml"
fi

echo "$cache"
