#!/usr/bin/env bash
# Install the Debian packages the remote-tracking tests start as real services:
# PostgreSQL 15 (MLflow's backend store, Optuna's RDB study) and Ceph RADOS Gateway (S3).
# Idempotent and quick when they are there: apt runs only for what is missing.
set -euo pipefail
missing=()
# PostgreSQL's server binaries live in /usr/lib/postgresql/<major>/bin, not on PATH.
compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null || missing+=(postgresql)
for pair in radosgw:radosgw radosgw-admin:radosgw ceph-mon:ceph-mon ceph-osd:ceph-osd \
            ceph:ceph-common monmaptool:ceph-common curl:curl; do
  command -v "${pair%%:*}" >/dev/null 2>&1 || missing+=("${pair#*:}")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "test services: packages present"
  exit 0
fi
mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u)
echo "test services: installing ${missing[*]}"
SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
