#!/usr/bin/env bash
# What one set of build flags saves on a fresh machine (the Makefile's GOFLAGS and CGO_ENABLED):
# go vet, go build of the binaries and the unit tests' compile, each with an empty build cache
# of its own, once with go's default flags (A) and once with -trimpath and CGO_ENABLED=0 for
# every command (B). Prints wall and CPU seconds per command. Modules come from GOMODCACHE as it
# is (download them first for a pure compile figure). About 15 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
for kind in A B; do
	export GOCACHE="$work/cache-$kind"
	if [[ $kind == B ]]; then export GOFLAGS=-trimpath CGO_ENABLED=0; else unset GOFLAGS CGO_ENABLED; fi
	/usr/bin/time -f "$kind vet          %e s wall %U s user %S s sys" go vet ./...
	/usr/bin/time -f "$kind build        %e s wall %U s user %S s sys" env CGO_ENABLED=0 go build -trimpath -o "$work/bin/" ./cmd/kubectl-gray ./cmd/gray-controller
	/usr/bin/time -f "$kind unit compile %e s wall %U s user %S s sys" go test -count=1 -run '^$' ./... >/dev/null
done
