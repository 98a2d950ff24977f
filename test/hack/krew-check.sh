#!/usr/bin/env bash
# krew's validator accepts the manifest rendered from the build in DIST; krew
# installs every archive for its platform, linking kubectl-gray and its
# completion; `kubectl gray version` of the host's install reports the version.
# Usage: krew-check.sh DIST VERSION  (GOTOOLS: how to run the pinned tools)
set -euo pipefail
dist=$1 version=$2
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
read -ra gotools <<<"${GOTOOLS:?GOTOOLS names the pinned tools, e.g. go tool -modfile=test/tools/go.mod}"

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/manifest"
"$root/krew/render.sh" "$dist" "$version" >"$tmp/manifest/gray.yaml"
"${gotools[@]}" validate-krew-manifest -manifest "$tmp/manifest/gray.yaml" -skip-install

for platform in linux-amd64 linux-arm64 darwin-amd64 darwin-arm64 windows-amd64; do
	os="${platform%-*}" arch="${platform#*-}" ext=tar.gz bin=kubectl-gray
	if [[ $os == windows ]]; then ext=zip bin=kubectl-gray.exe; fi
	echo "krew install gray for $os/$arch"
	KREW_ROOT="$tmp/$platform" KREW_OS="$os" KREW_ARCH="$arch" "${gotools[@]}" krew install \
		--manifest="$tmp/manifest/gray.yaml" \
		--archive="$dist/kubectl-gray_${version}_${os}_${arch}.$ext" </dev/null >"$tmp/$platform.log" 2>&1 ||
		{ cat "$tmp/$platform.log" >&2; exit 1; }
	test -x "$tmp/$platform/bin/$bin" || { echo "krew did not link $bin for $os/$arch" >&2; exit 1; }
	test -f "$tmp/$platform/store/gray/v$version/kubectl_complete-gray" ||
		{ echo "kubectl_complete-gray missing for $os/$arch" >&2; exit 1; }
done

host="$(go env GOOS)-$(go env GOARCH)"
out="$(PATH="$tmp/$host/bin:$PATH" kubectl gray version)"
echo "kubectl gray version:"
echo "$out"
grep -qF -- "$version" <<<"$out" || { echo "kubectl gray version does not report $version" >&2; exit 1; }
