#!/usr/bin/env bash
# Fails on any tracked file over 1 MB that is not text: a committed build, say.
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"

bad=0
while IFS= read -r f; do
	[[ -f $f && $(stat -c %s "$f") -gt 1048576 ]] || continue
	if ! grep -qI . "$f"; then
		echo "tracked binary over 1 MB: $f" >&2
		bad=1
	fi
done < <(git ls-files)
exit "$bad"
