#!/usr/bin/env bash
# Prints the kustomize overlay manifests/MODE with gray-controller's image set
# to IMG, as `kustomize edit set image` would write it in an overlay of our own:
# NAME:TAG sets newTag, NAME@sha256:... sets digest, a bare NAME only the name.
# An empty IMG prints the overlay as it is.
# Usage: render.sh MODE [IMG]
set -euo pipefail
manifests="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../manifests" && pwd)"
mode=$1 img=${2:-}

if [[ -z $img ]]; then
	exec kubectl kustomize "$manifests/$mode"
fi
if [[ $img == *@* ]]; then
	name="${img%%@*}" pin="    digest: ${img#*@}"
elif [[ ${img##*/} == *:* ]]; then # a colon after the last slash is a tag, not a port
	name="${img%:*}" pin="    newTag: ${img##*:}"
else
	name="$img" pin=""
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
cp -r "$manifests/." "$tmp/"
mkdir "$tmp/overlay"
printf 'resources:\n  - ../%s\nimages:\n  - name: ghcr.io/kubegray/gray-controller\n    newName: %s\n%s\n' \
	"$mode" "$name" "$pin" >"$tmp/overlay/kustomization.yaml"
kubectl kustomize "$tmp/overlay"
