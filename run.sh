#!/usr/bin/env bash
# Set up (once) and run the training pipeline on the built-in sample data.
# Extra arguments go to `mlops run training`, e.g. ./run.sh --data my.csv --schema my.schema.yaml --set train.epochs=5
# (every setting by its address, section.field; `mlops run training --help` lists them by section)
set -euo pipefail
cd "$(dirname "$0")"
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
# torch==2.13.0 is pinned: pip takes the local CPU wheel (find-links) instead of a CUDA build.
.venv/bin/pip install --disable-pip-version-check -q -e . 2>&1 | grep -v "^WARNING: Location" || true
.venv/bin/python -c "import cli.main" # fail here, not mid-run, if the install is broken
exec .venv/bin/mlops run training "$@"
