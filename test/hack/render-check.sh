#!/usr/bin/env bash
# render.sh sets the image in every overlay, by tag and by digest, and leaves
# no default image behind.
set -euo pipefail
render="$(dirname "${BASH_SOURCE[0]}")/render.sh"

for mode in alongside alongside-eager instead; do
	for img in registry.example/me/gray:dev "registry.example/me/gray@sha256:$(printf '%064d' 0)"; do
		out="$("$render" "$mode" "$img")"
		grep -qF "image: $img" <<<"$out" || { echo "render $mode $img: image not set" >&2; exit 1; }
		! grep -q 'ghcr.io/kubegray' <<<"$out" || { echo "render $mode $img: default image left" >&2; exit 1; }
	done
done
echo "render-check: the image is set in every overlay"
