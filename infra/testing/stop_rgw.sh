#!/usr/bin/env bash
# Stop the daemons start_rgw.sh started (same DIR), waiting up to 10 s; a no-op when none runs.
set -uo pipefail
D=${DIR:-${TMPDIR:-/tmp}/mlops-test-rgw}
pids=()
for n in client.rgw.a osd.0 mon.a; do
  [ -f "$D/run/$n.pid" ] && pids+=("$(cat "$D/run/$n.pid")")
done
[ ${#pids[@]} -eq 0 ] && exit 0
kill "${pids[@]}" 2>/dev/null
for _ in $(seq 1 50); do
  alive=0; for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
  [ $alive = 0 ] && exit 0; sleep 0.2
done
kill -9 "${pids[@]}" 2>/dev/null; true
