#!/usr/bin/env bash
# Stop the Prometheus start_prometheus.sh started.
set -uo pipefail
D=${DIR:-${TMPDIR:-/tmp}/mlops-test-prometheus}
[ -f "$D/prometheus.pid" ] || exit 0
pid=$(cat "$D/prometheus.pid")
kill -- "-$pid" 2>/dev/null || kill "$pid" 2>/dev/null
for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
kill -9 -- "-$pid" 2>/dev/null; rm -f "$D/prometheus.pid"; true
