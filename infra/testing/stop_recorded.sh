#!/usr/bin/env bash
# Stop every service a test run recorded in its ledger (tests/services/plugin.py writes one JSON line per
# service started: its stop script and the environment it was started with), newest first. Every stop script
# is safe to run twice, so a service the tests already stopped costs one quick no-op. ./test.sh runs this
# when it is interrupted or ends, so Ctrl-C leaves no etcd, API server, kubelet, containerd, Ceph or PostgreSQL.
#   stop_recorded.sh LEDGER
set -uo pipefail
LEDGER=${1:?usage: stop_recorded.sh LEDGER}
[ -s "$LEDGER" ] || exit 0
python3 - "$LEDGER" <<'PY'
import json, os, subprocess, sys

lines = [line for line in open(sys.argv[1], encoding="utf-8").read().splitlines() if line.strip()]
for line in reversed(lines):
    try:
        entry = json.loads(line)
    except ValueError:
        continue  # a line cut short by a kill mid-write: nothing to stop from it
    env = {**os.environ, **entry["env"]}
    try:
        subprocess.run(["bash", entry["stop"]], env=env, timeout=60, check=False,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        print(f"stopping with {entry['stop']} took over 60 s", file=sys.stderr)
print(f"stopped the {len(lines)} service(s) this run started (or found them stopped)")
PY
