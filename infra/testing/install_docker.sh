#!/usr/bin/env bash
# Install Debian's docker.io (dockerd, containerd, runc) for `mlops run --runner docker` and its test
# (a private engine started by start_docker.sh; no systemd needed). Idempotent: apt runs only when missing.
set -euo pipefail
missing=()
command -v dockerd >/dev/null 2>&1 || missing+=(docker.io)
source "$(dirname "$0")/apt_install_missing.sh"
apt_install_missing "docker engine" "${missing[@]}"
