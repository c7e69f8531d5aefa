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
deadline=$((SECONDS + 60))
until curl -sf -o /dev/null "http://127.0.0.1:$PROM_PORT/-/ready"; do
  if ! kill -0 "$(cat "$D/prometheus.pid")" 2>/dev/null || [ $SECONDS -ge $deadline ]; then
    echo "prometheus did not become ready; last log lines ($D/prometheus.log):" >&2
    tail -n 15 "$D/prometheus.log" >&2; exit 1
  fi
  sleep 0.2
done
echo "http://127.0.0.1:$PROM_PORT"
