#!/usr/bin/env bash
# Install the Debian packages the remote-tracking tests start as real services:
# PostgreSQL 15 (MLflow's backend store, Optuna's RDB study) and Ceph RADOS Gateway (S3).
# Idempotent and quick when they are there: apt runs only for what is missing.
set -euo pipefail
missing=()
for pair in initdb:postgresql pg_ctl:postgresql radosgw:radosgw ceph-mon:ceph-mon ceph-osd:ceph-osd \
            radosgw-admin:radosgw ceph:ceph-common monmaptool:ceph-common curl:curl; do
  tool=${pair%%:*}; pkg=${pair#*:}
  if ! command -v "$tool" >/dev/null 2>&1 && ! [ -x "/usr/lib/postgresql/15/bin/$tool" ]; then
    missing+=("$pkg")
  fi
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
