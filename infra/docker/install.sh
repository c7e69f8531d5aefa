#!/usr/bin/env bash
# The platform image's install steps, run by infra/docker/Dockerfile (docker build or buildah bud).
#   install.sh dependencies   Debian's Python 3.11, a venv, torch and the pinned dependencies, the user
#   install.sh project        the project itself (sources copied to /tmp/mlops-build/src), then clean-up
# Build arguments read here: TORCH_VARIANT (cpu|cuda), TORCH_CPU_INDEX_URL, PIP_FIND_LINKS, PIP_CACHE_DIR, PIP_CERT.
set -euo pipefail
for v in PIP_FIND_LINKS PIP_CACHE_DIR PIP_CERT; do [ -n "${!v:-}" ] || unset "$v"; done  # empty = pip's default
B=/tmp/mlops-build
VENV=/opt/mlops/venv
TORCH_VERSION=2.13.0  # the release pyproject.toml pins; keep the two equal
pip=("$VENV/bin/pip" install --quiet --disable-pip-version-check)
if [ -z "${PIP_CACHE_DIR:-}" ]; then pip+=(--no-cache-dir); fi

dependencies() {
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # Debian 12's Python 3.11; ca-certificates for HTTPS to S3 and the tracking server.
  apt-get install -y -qq --no-install-recommends python3 python3-venv ca-certificates >/dev/null
  rm -rf /var/lib/apt/lists/*
  python3 -m venv "$VENV"
  local torch_index=()
  case "${TORCH_VARIANT:-cpu}" in
    cpu) [ -z "${TORCH_CPU_INDEX_URL:-}" ] || torch_index=(--extra-index-url "$TORCH_CPU_INDEX_URL") ;;
    cuda) ;;  # PyPI's Linux wheel is the CUDA build
    *) echo "TORCH_VARIANT must be cpu or cuda, got '${TORCH_VARIANT}'" >&2; exit 2 ;;
  esac
  "${pip[@]}" -c "$B/constraints.txt" "setuptools>=68" wheel  # the project's build backend; wheel also builds sdists such as kfp-server-api
  "${pip[@]}" "${torch_index[@]}" "torch==$TORCH_VERSION"
  # The project's dependencies (pyproject.toml's, written to requirements.txt) at the tested versions.
  "${pip[@]}" -c "$B/constraints.txt" -r "$B/requirements.txt"
  if [ "${TORCH_VARIANT:-cpu}" = cpu ]; then
    # A CPU source: an index given by the builder, or a torch wheel of this release in the find-links folder
    # (PIP_FIND_LINKS may name a folder that is not there: a machine's pip settings can reach the build).
    if [ -n "${TORCH_CPU_INDEX_URL:-}" ] || compgen -G "${PIP_FIND_LINKS:-/nonexistent}/torch-${TORCH_VERSION}*.whl" >/dev/null; then
      # A CPU source was given: getting the CUDA build anyway means that source was not used.
      "$VENV/bin/python" -c "import sys, torch; sys.exit('expected the CPU build of torch, got CUDA ' + torch.version.cuda if torch.version.cuda else 0)"
    else
      # No CPU wheel source: PyPI's Linux wheel is the CUDA build (~2.7 GB of nvidia-* wheels beside it),
      # which runs on the CPU all the same. Said, so a builder that expected the small image knows why.
      "$VENV/bin/python" -c "import torch; print(f'torch {torch.__version__}: ' + (f'the CUDA {torch.version.cuda} build from PyPI (no CPU wheel source given; it runs on the CPU)' if torch.version.cuda else 'CPU build'))"
    fi
  fi
  useradd --create-home --uid 1000 --user-group --shell /bin/bash mlops
}

project() {
  "${pip[@]}" --no-deps --no-build-isolation "$B/src"
  "$VENV/bin/pip" check
  "$VENV/bin/python" -c "import mlops, components, pipelines, training, serving, delivery, cli, kfp, mlflow, torch, onnxruntime"
  rm -rf "$B" /root/.cache
}

case "${1:-}" in
  dependencies | project) "$1" ;;
  *) echo "usage: install.sh dependencies|project" >&2; exit 2 ;;
esac
