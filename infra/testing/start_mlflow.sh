#!/usr/bin/env bash
# A remote-style MLflow tracking server: PostgreSQL backend store, S3 artifact store proxied by the server.
#   BACKEND_URI            e.g. postgresql+psycopg2://postgres@127.0.0.1:55432/mlflow (required)
#   ARTIFACTS_DESTINATION  e.g. s3://mlflow/ (required; the bucket must exist)
#   MLFLOW_PORT            default 5005
#   BIND                   listen address, default 127.0.0.1 (0.0.0.0: pods reach it at their bridge's gateway)
#   MLFLOW_S3_ENDPOINT_URL, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY  from the environment
# One worker and no job runner: ~0.6 GB and 2 processes instead of ~15 (ready in about 10 s).
# Runs in the background; its pid goes to $DIR/mlflow.pid and its log to $DIR/mlflow.log.
# Prints the tracking URI on the last line once /health answers.
set -euo pipefail
: "${BACKEND_URI:?set BACKEND_URI}" "${ARTIFACTS_DESTINATION:?set ARTIFACTS_DESTINATION}"
MLFLOW_PORT=${MLFLOW_PORT:-5005}; BIND=${BIND:-127.0.0.1}
D=${DIR:-${TMPDIR:-/tmp}/mlops-test-mlflow}
MLFLOW=${MLFLOW:-mlflow}
"$(dirname "$0")/stop_mlflow.sh" >/dev/null 2>&1 || true
mkdir -p "$D"
MLFLOW_SERVER_ENABLE_JOB_EXECUTION=false setsid "$MLFLOW" server \
  --backend-store-uri "$BACKEND_URI" --artifacts-destination "$ARTIFACTS_DESTINATION" \
  --host "$BIND" --port "$MLFLOW_PORT" --workers 1 >"$D/mlflow.log" 2>&1 &
echo $! >"$D/mlflow.pid"
. "$(dirname "$0")/background.sh"
wait_ready "mlflow server" "$D/mlflow.pid" "$D/mlflow.log" "http://127.0.0.1:$MLFLOW_PORT/health" 90 0.3
echo "http://127.0.0.1:$MLFLOW_PORT"
