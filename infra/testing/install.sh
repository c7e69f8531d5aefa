#!/usr/bin/env bash
# Install the Debian packages the remote-tracking tests start as real services:
# PostgreSQL 15 (MLflow's backend store, Optuna's RDB study), Ceph RADOS Gateway (S3) and
# Prometheus 2.42 (scrapes a live `mlops serve` for the Grafana dashboard's queries).
# Idempotent and quick when they are there: apt runs only for what is missing.
set -euo pipefail
missing=()
# PostgreSQL's server binaries live in /usr/lib/postgresql/<major>/bin, not on PATH.
compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null || missing+=(postgresql)
for pair in radosgw:radosgw radosgw-admin:radosgw ceph-mon:ceph-mon ceph-osd:ceph-osd \
            ceph:ceph-common monmaptool:ceph-common curl:curl prometheus:prometheus; do
  command -v "${pair%%:*}" >/dev/null 2>&1 || missing+=("${pair#*:}")
done
source "$(dirname "$0")/apt_install_missing.sh"
apt_install_missing "test services" "${missing[@]}"
