#!/usr/bin/env bash
# Stop the server start_mlflow.sh started (its whole process group: the gunicorn/uvicorn workers too).
set -uo pipefail
D=${DIR:-${TMPDIR:-/tmp}/mlops-test-mlflow}
[ -f "$D/mlflow.pid" ] || exit 0
pid=$(cat "$D/mlflow.pid")
kill -- "-$pid" 2>/dev/null || kill "$pid" 2>/dev/null
for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
kill -9 -- "-$pid" 2>/dev/null; rm -f "$D/mlflow.pid"; true
