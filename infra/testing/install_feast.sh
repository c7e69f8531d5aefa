#!/usr/bin/env bash
# Create Feast's own virtual environment, outside the platform's: feast 0.67 requires prometheus_client<0.25
# and pandas<3, the platform pins prometheus_client>=0.26, so the two cannot share one venv. The platform
# reaches Feast only through mlops/features (Feast's CLI and a small script run by this venv's python).
# Idempotent and cached per machine: ~/.cache/mlops-feast/venv-<pin>, marked complete only after `feast version`
# runs; a half-built venv (interrupted install) is removed and rebuilt. Prints the venv's path on success.
# Env: MLOPS_FEAST_HOME (default ~/.cache/mlops-feast), MLOPS_FEAST_PYTHON (default python3, >= 3.10).
set -euo pipefail
# Pinned: the CLI flags, the feature server's /get-online-features body and the repo layout this platform
# writes are those of 0.67; a Feast upgrade is a deliberate change here and a run of tests/mlops/features.
FEAST_PIN="0.67.0"
# The postgres extra (psycopg 3 and its pool) for the PostgreSQL online store; the marker holds this line, so a
# venv built for another requirement is rebuilt.
REQUIREMENT="feast[postgres]==$FEAST_PIN"
home="${MLOPS_FEAST_HOME:-$HOME/.cache/mlops-feast}"
venv="$home/venv-$FEAST_PIN"
python="${MLOPS_FEAST_PYTHON:-python3}"
mkdir -p "$home"
exec 9>"$home/.install-$FEAST_PIN.lock"
flock 9   # two test workers (or two shells) never build the same venv at once
if [[ -f "$venv/.complete" && "$(cat "$venv/.complete")" == "$REQUIREMENT" ]]; then
  echo "$venv"
  exit 0
fi
rm -rf "$venv"
echo "install_feast.sh: creating $venv ($REQUIREMENT, about a minute)" >&2
"$python" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --upgrade pip >&2
# feast's core install carries its local provider: the file offline store (pandas, pyarrow, dask), the SQLite
# online store (the standard library's sqlite3) and `feast serve` (fastapi, uvicorn, gunicorn).
"$venv/bin/python" -m pip install --quiet "$REQUIREMENT" >&2
"$venv/bin/feast" version >&2
echo "$REQUIREMENT" >"$venv/.complete"
echo "$venv"
