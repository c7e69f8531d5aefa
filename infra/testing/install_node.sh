#!/usr/bin/env bash
# Install the Debian packages a real node needs (the `pods` tests, tests/services/node.py):
# containerd + runc (the container runtime), buildah (builds the platform image without a Docker
# engine; brings the CNI plugins in /usr/lib/cni), debootstrap (the Debian base image, no registry),
# iproute2 (removes the pod bridge on stop), kubectl (Debian's kubernetes-client; most machine images have
# one already) and openssl (the API server's and the webhooks' certificates).
# Idempotent and quick when they are there: apt runs only for what is missing.
set -euo pipefail
missing=()
for pair in containerd:containerd ctr:containerd runc:runc buildah:buildah debootstrap:debootstrap \
            ip:iproute2 curl:curl kubectl:kubernetes-client openssl:openssl; do
  command -v "${pair%%:*}" >/dev/null 2>&1 || missing+=("${pair#*:}")
done
[ -x /usr/lib/cni/bridge ] || missing+=(containernetworking-plugins)
source "$(dirname "$0")/apt_install_missing.sh"
apt_install_missing "node" "${missing[@]}"
