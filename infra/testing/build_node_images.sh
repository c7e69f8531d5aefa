#!/usr/bin/env bash
# The node's two base images, made with no registry: a Debian 12 rootfs from the Debian mirror (debootstrap)
# committed by buildah as OCI archives:
#   $OUT/base.oci.tar   localhost/debian-base:v1  (the platform image builds FROM it: build_image.sh)
#   $OUT/pause.oci.tar  localhost/pause:v1        (the pod sandbox image of start_node.sh)
# Cached: nothing is rebuilt while both archives exist and this script is unchanged (about 1 min otherwise).
# Needs install_node.sh (debootstrap, buildah). Prints $OUT on the last line.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-${HOME}/.cache/mlops-node-images}
KEY=$(sha256sum "$0" | cut -c1-16)
if [ -f "$OUT/base.oci.tar" ] && [ -f "$OUT/pause.oci.tar" ] && [ "$(cat "$OUT/key" 2>/dev/null)" = "$KEY" ]; then
  echo "$OUT"; exit 0
fi
mkdir -p "$OUT"; W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
debootstrap --variant=minbase bookworm "$W/rootfs" "$(bash "$HERE/debian_mirror.sh")" >"$W/debootstrap.log" \
  || { tail -n 20 "$W/debootstrap.log" >&2; exit 1; }
tar -C "$W/rootfs" -cf "$W/rootfs.tar" .
B=(buildah --root "$W/storage" --runroot "$W/run" --storage-driver vfs)
ENV='PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'  # an image from scratch has no PATH
c=$("${B[@]}" from scratch); "${B[@]}" add "$c" "$W/rootfs.tar" / >/dev/null
"${B[@]}" config --env "$ENV" --cmd /bin/bash "$c"
"${B[@]}" commit --quiet --format oci "$c" "oci-archive:$OUT/base.oci.tar.part:localhost/debian-base:v1" >/dev/null
p=$("${B[@]}" from scratch); "${B[@]}" add "$p" "$W/rootfs.tar" / >/dev/null
"${B[@]}" config --env "$ENV" --entrypoint '["/bin/sleep","infinity"]' "$p"
"${B[@]}" commit --quiet --format oci "$p" "oci-archive:$OUT/pause.oci.tar.part:localhost/pause:v1" >/dev/null
mv "$OUT/base.oci.tar.part" "$OUT/base.oci.tar"; mv "$OUT/pause.oci.tar.part" "$OUT/pause.oci.tar"
echo "$KEY" >"$OUT/key"
echo "$OUT"
