#!/usr/bin/env bash
# Proves the -X injection took effect: both binaries in BIN_DIR report VERSION and COMMIT.
# Usage: version-check.sh BIN_DIR VERSION COMMIT
set -euo pipefail
bin_dir=$1 version=$2 commit=$3

for b in kubectl-gray gray-controller; do
	out="$("$bin_dir/$b" version)"
	echo "$b version: $out"
	grep -qF -- "$version" <<<"$out" || { echo "$b: version $version not injected" >&2; exit 1; }
	grep -qF -- "$commit" <<<"$out" || { echo "$b: commit $commit not injected" >&2; exit 1; }
done
