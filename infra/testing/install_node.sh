#!/usr/bin/env bash
# Install the Debian packages a real node needs (the `pods` tests, tests/services/node.py):
# containerd + runc (the container runtime), buildah (builds the platform image without a Docker
# engine; brings the CNI plugins in /usr/lib/cni), debootstrap (the Debian base image, no registry),
# iproute2 (removes the pod bridge on stop). The API server's own packages are in build_k8s.sh.
# Idempotent and quick when they are there: apt runs only for what is missing.
set -euo pipefail
missing=()
for pair in containerd:containerd ctr:containerd runc:runc buildah:buildah debootstrap:debootstrap \
            ip:iproute2 curl:curl; do
  command -v "${pair%%:*}" >/dev/null 2>&1 || missing+=("${pair#*:}")
done
[ -x /usr/lib/cni/bridge ] || missing+=(containernetworking-plugins)
if [ ${#missing[@]} -eq 0 ]; then
  echo "node: packages present"
  exit 0
fi
mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u)
echo "node: installing ${missing[*]}"
SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
