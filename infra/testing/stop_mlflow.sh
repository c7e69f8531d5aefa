#!/usr/bin/env bash
# Stop the server start_mlflow.sh started (its whole process group: the gunicorn/uvicorn workers too).
set -uo pipefail
D=${DIR:-${TMPDIR:-/tmp}/mlops-test-mlflow}
. "$(dirname "$0")/background.sh"
stop_group "$D/mlflow.pid"
