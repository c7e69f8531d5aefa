#!/usr/bin/env bash
# Stop the Prometheus start_prometheus.sh started.
set -uo pipefail
D=${DIR:-${TMPDIR:-/tmp}/mlops-test-prometheus}
. "$(dirname "$0")/background.sh"
stop_group "$D/prometheus.pid"
