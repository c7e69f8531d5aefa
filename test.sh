#!/usr/bin/env bash
# Set up (once) and run every check CI runs: lint, format, types, tests.
# Extra arguments go to pytest, e.g. ./test.sh -k register
set -euo pipefail
cd "$(dirname "$0")"
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
.venv/bin/pip install --disable-pip-version-check -q -e '.[dev]' 2>&1 | grep -v "^WARNING: Location" || true
export PATH="$PWD/.venv/bin:$PATH"
echo "== ruff"
ruff check .
ruff format --check .
echo "== import layers"
lint-imports
echo "== mypy"
mypy mlops components pipelines cli training serving delivery benchmarks
echo "== pytest"
pytest "$@"
