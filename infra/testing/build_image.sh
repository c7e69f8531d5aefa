#!/usr/bin/env bash
# Build the platform image (infra/docker/Dockerfile) with buildah, no Docker engine or registry:
# FROM the debootstrap base of build_node_images.sh, torch's CPU wheel, the tested dependencies.
# Writes an OCI archive containerd imports (start_node.sh IMAGES=...) and prints, on its last line,
#   <archive path> <image name>
# Cached by the hash of what the image is made of (Dockerfile, install.sh, constraints.txt, requirements.txt,
# pyproject.toml, README.md, the package sources): an unchanged tree prints the cached archive at once. buildah
# keeps its layers in $CACHE/storage, so a change to the code or to pyproject.toml's tool settings re-runs only
# the `install.sh project` step (the dependency step sees requirements.txt, not pyproject.toml).
# Needs install_node.sh. STORAGE_DRIVER=vfs where overlayfs is not available. About 4 min cold (pip from PyPI), under 1 min when only code changed.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CACHE=${CACHE:-${HOME}/.cache/mlops-platform-image}
NODE_IMAGES=$(bash "$ROOT/infra/testing/build_node_images.sh" | tail -n 1)
cd "$ROOT"
KEY=$({ cat "$NODE_IMAGES/key"; sha256sum infra/docker/Dockerfile infra/docker/install.sh infra/docker/constraints.txt infra/docker/requirements.txt pyproject.toml README.md;
        find mlops components pipelines training serving delivery cli -type f \( -name '*.py' -o -name '*.json' -o -name '*.yaml' -o -name '*.md' -o -name '*.j2' \) \
          -not -path '*/__pycache__/*' -print0 | sort -z | xargs -0 sha256sum; } | sha256sum | cut -c1-12)
IMAGE=localhost/mlops:$KEY
ARCHIVE=$CACHE/mlops-$KEY.oci.tar
if [ -f "$ARCHIVE" ]; then echo "$ARCHIVE $IMAGE"; exit 0; fi
mkdir -p "$CACHE/storage" "$CACHE/pip"
# One build at a time per cache (test workers and set-up may ask at once): a second caller waits, then finds it.
exec 9>"$CACHE/build.lock"; flock 9
if [ -f "$ARCHIVE" ]; then echo "$ARCHIVE $IMAGE"; exit 0; fi
# overlay: layers share files (vfs copies the whole tree per layer: ~3 GB each, and minutes to commit).
B=(buildah --root "$CACHE/storage" --runroot "$CACHE/run" --storage-driver "${STORAGE_DRIVER:-overlay}")
# An interrupted build leaves its working container, whose layer holds GBs of installed packages: drop it.
"${B[@]}" rm --all >/dev/null 2>&1 || true
"${B[@]}" pull --quiet "oci-archive:$NODE_IMAGES/base.oci.tar" >/dev/null
args=(--build-arg BASE_IMAGE=localhost/debian-base:v1 --build-arg PIP_CACHE_DIR=/pip-cache -v "$CACHE/pip:/pip-cache")
# This machine has torch's CPU wheel on disk (pip's find-links) and no route to PyTorch's own index.
if [ -d "${TORCH_WHEELS:-/opt/wheels}" ]; then
  args+=(--build-arg TORCH_CPU_INDEX_URL= --build-arg PIP_FIND_LINKS=/wheels -v "${TORCH_WHEELS:-/opt/wheels}:/wheels:ro")
fi
# pip's CA bundle here includes the proxy that signs HTTPS to PyPI: the build's pip needs it too.
PIP_CERT=${PIP_CERT:-$(pip config get global.cert 2>/dev/null || true)}
if [ -n "$PIP_CERT" ] && [ -f "$PIP_CERT" ]; then args+=(--build-arg PIP_CERT=/host-ca.crt -v "$PIP_CERT:/host-ca.crt:ro"); fi
started=$SECONDS
"${B[@]}" bud --layers --isolation chroot "${args[@]}" -f infra/docker/Dockerfile -t "$IMAGE" . >"$CACHE/build.log" 2>&1 \
  || { echo "buildah bud failed; last lines of $CACHE/build.log:" >&2; tail -n 25 "$CACHE/build.log" >&2; exit 1; }
# Uncompressed: gzip of ~2.5 GB on one core takes minutes; containerd imports it as is.
"${B[@]}" push --quiet --disable-compression "$IMAGE" "oci-archive:$ARCHIVE.part:$IMAGE"
mv "$ARCHIVE.part" "$ARCHIVE"
# Keep only the newest archive and the layers it uses.
find "$CACHE" -maxdepth 1 -name 'mlops-*.oci.tar' ! -name "mlops-$KEY.oci.tar" -delete
for old in $("${B[@]}" images --format '{{.Name}}:{{.Tag}}' | grep '^localhost/mlops:' | grep -v -x "$IMAGE"); do
  "${B[@]}" rmi "$old" >/dev/null 2>&1 || true
done
"${B[@]}" rmi --prune >/dev/null 2>&1 || true
echo "built $IMAGE in $((SECONDS - started)) s: $(du -m "$ARCHIVE" | cut -f1) MB archive" >&2
echo "$ARCHIVE $IMAGE"
