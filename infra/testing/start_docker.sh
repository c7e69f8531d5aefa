#!/usr/bin/env bash
# Start a private Docker engine (Debian's docker.io; install_docker.sh) for kfp.local's DockerRunner:
# root, no systemd, no iptables, no bridge (containers use the host's network), overlay2 storage (vfs copies
# the whole 2.7 GB platform image per container: over a minute per step). Adapted from
# ../shared/recipes/start_docker.sh (facts in ../shared/README.md).
#   D  state directory (default: a new temp dir)      prints: the DOCKER_HOST value on its last line
set -euo pipefail
command -v dockerd >/dev/null || { echo "no dockerd: run infra/testing/install_docker.sh" >&2; exit 1; }
D=${D:-$(mktemp -d)}; mkdir -p "$D"
setsid dockerd --data-root "$D/root" --exec-root "$D/exec" --host "unix://$D/docker.sock" --pidfile "$D/docker.pid" \
  --storage-driver "${STORAGE_DRIVER:-overlay2}" --iptables=false --bridge=none >"$D/dockerd.log" 2>&1 &
for _ in $(seq 1 150); do DOCKER_HOST="unix://$D/docker.sock" docker version >/dev/null 2>&1 && break; sleep 0.2; done
DOCKER_HOST="unix://$D/docker.sock" docker version >/dev/null 2>&1 || { tail -n 5 "$D/dockerd.log" >&2; exit 1; }
echo "unix://$D/docker.sock"
