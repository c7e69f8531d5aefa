#!/usr/bin/env bash
# Builds each serving peer's own virtual environment once per machine, so their pins never touch ours.
#
#   bash benchmarks/peers/setup_venvs.sh [kserve] [mlserver] [bentoml]   # default: all three
#
# Idempotent: a venv whose stamp file matches its pins is left as it is; a changed pin rebuilds it.
# Venvs live under ${MLOPS_BENCH_CACHE:-~/.cache/mlops-bench}/<peer>-venv (what bench_serving_peers.py
# looks for). `mlflow models serve` needs no venv of its own: it runs from the project's .venv, as in
# bench_serving.py. Also installs wrk (the HTTP load generator) with apt-get when it is missing and we
# are root; without it the benchmark falls back to a slower Python generator.
set -euo pipefail

CACHE="${MLOPS_BENCH_CACHE:-$HOME/.cache/mlops-bench}"
PYTHON="${PEER_PYTHON:-python3.11}"  # every peer supports 3.11; the project's .venv is 3.11 too

# Pins, one reason each.
ORT="onnxruntime==1.31.1"  # the project's ONNX Runtime: every peer scores with the same kernels
KSERVE_PINS=(
  "kserve==0.21.0"  # the release issue 23 names; pins pandas 2.x, hence its own venv
  "$ORT"
)
MLSERVER_PINS=(
  "mlserver==1.7.1"  # the current 1.7.x release (issue 23: MLServer 1.7); REST + gRPC V2, binary tensors
  "$ORT"
)
BENTOML_PINS=(
  "bentoml==1.4.40"  # the current release; the @bentoml.service API the peer module is written against
  "$ORT"
)

build() {
  local peer="$1"; shift
  local venv="$CACHE/$peer-venv" stamp
  stamp="$(printf '%s\n' "$@")"
  if [[ -x "$venv/bin/python" && -f "$venv/.pins" && "$(cat "$venv/.pins")" == "$stamp" ]]; then
    echo "$peer: $venv is up to date"
    return
  fi
  echo "$peer: building $venv ($*)"
  rm -rf "$venv"
  "$PYTHON" -m venv "$venv"
  "$venv/bin/pip" install --quiet --upgrade pip
  "$venv/bin/pip" install --quiet "$@"
  printf '%s' "$stamp" > "$venv/.pins"
}

peers=("$@")
[[ ${#peers[@]} -eq 0 ]] && peers=(kserve mlserver bentoml)
mkdir -p "$CACHE"
for peer in "${peers[@]}"; do
  case "$peer" in
    kserve) build kserve "${KSERVE_PINS[@]}" ;;
    mlserver) build mlserver "${MLSERVER_PINS[@]}" ;;
    bentoml) build bentoml "${BENTOML_PINS[@]}" ;;
    *) echo "unknown peer '$peer': choose from kserve, mlserver, bentoml" >&2; exit 2 ;;
  esac
done

if ! command -v wrk >/dev/null; then
  if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
    apt-get install -y -qq wrk >/dev/null || echo "wrk not installed (apt-get failed): the Python load generator will be used"
  else
    echo "wrk not found: install it (Debian package wrk) for accurate HTTP load"
  fi
fi
