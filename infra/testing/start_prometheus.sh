#!/usr/bin/env bash
# A real Prometheus (Debian's 2.42) for the dashboard tests: scrapes every second whatever targets
# the test writes into $DIR/targets/*.json (file service discovery, picked up within a second).
#   PROM_PORT   default 9095
#   DIR         state, config and log (default ${TMPDIR:-/tmp}/mlops-test-prometheus)
# Runs in the background; pid in $DIR/prometheus.pid, log in $DIR/prometheus.log.
# Prints the base URL on the last line once /-/ready answers.
set -euo pipefail
PROM_PORT=${PROM_PORT:-9095}
D=${DIR:-${TMPDIR:-/tmp}/mlops-test-prometheus}
"$(dirname "$0")/stop_prometheus.sh" >/dev/null 2>&1 || true
mkdir -p "$D/targets" "$D/data"
cat >"$D/prometheus.yml" <<YAML
global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: mlops
    file_sd_configs:
      - files: ["$D/targets/*.json"]
        refresh_interval: 1s
YAML
setsid prometheus --config.file="$D/prometheus.yml" --storage.tsdb.path="$D/data" \
  --web.listen-address="127.0.0.1:$PROM_PORT" --log.level=warn >"$D/prometheus.log" 2>&1 &
echo $! >"$D/prometheus.pid"
. "$(dirname "$0")/background.sh"
wait_ready "prometheus" "$D/prometheus.pid" "$D/prometheus.log" "http://127.0.0.1:$PROM_PORT/-/ready" 60 0.2
echo "http://127.0.0.1:$PROM_PORT"
