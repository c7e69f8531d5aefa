#!/usr/bin/env bash
# Set up (once) and run the training pipeline on the built-in sample data.
# Extra arguments go to `mlops run training`, e.g. ./run.sh --data my.csv --schema my.schema.yaml --set train.epochs=5
# (every setting by its address, section.field; `mlops run training --help` lists them by section)
set -euo pipefail
cd "$(dirname "$0")"
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
# The install is editable, so a code change needs none: pip runs again only when pyproject.toml (the
# dependencies and their pins) differs from the one last installed, which the stamp records.
# torch==2.13.0 is pinned: pip takes a local CPU wheel (find-links) where one lies on disk.
stamp=.venv/.mlops-installed-pyproject
wanted=$(sha256sum pyproject.toml | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$wanted" ]; then
  .venv/bin/pip install --disable-pip-version-check -q -e . 2>&1 | grep -v "^WARNING: Location" || true
  .venv/bin/python -c "import cli.main" # fail here, not mid-run, if the install is broken
  echo "$wanted" >"$stamp"
fi
exec .venv/bin/mlops run training "$@"
