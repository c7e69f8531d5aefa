#!/usr/bin/env bash
# Put the platform image into a Docker engine (DOCKER_HOST, else the default socket) for kfp.local's
# DockerRunner (`mlops run --runner docker`): built or taken from cache by build_image.sh, exported by buildah
# as a docker archive (the engine of Debian's docker.io cannot load OCI archives), loaded, and tagged
#   $1  (the name every component declares, mlops.images.PLATFORM_IMAGE)  and  localhost/mlops:<sources key>.
# An engine that already has this build is only re-tagged; older localhost/mlops builds are removed from it.
# About 40 s for the 2.7 GB image (14 s export, 26 s load) on the 2-core machine. Prints the build tag last.
set -euo pipefail
NAME=${1:-${LOAD_IMAGE_NAME:?usage: load_image.sh NAME, or LOAD_IMAGE_NAME=NAME (the image name components declare)}}
HERE=$(cd "$(dirname "$0")" && pwd)
CACHE=${CACHE:-${HOME}/.cache/mlops-platform-image}
command -v docker >/dev/null || { echo "no docker client: run infra/testing/install_docker.sh" >&2; exit 1; }
docker version >/dev/null 2>&1 || { echo "no Docker engine answers at ${DOCKER_HOST:-the default socket}: start one (infra/testing/start_docker.sh) and set DOCKER_HOST" >&2; exit 1; }
read -r _ IMAGE < <(CACHE=$CACHE bash "$HERE/build_image.sh" | tail -n 1)
started=$SECONDS
if docker image inspect "$IMAGE" >/dev/null 2>&1; then
  echo "the engine already has $IMAGE" >&2
else
  TAR=$(mktemp -p "$CACHE" docker-archive-XXXXXX.tar); trap 'rm -f "$TAR"' EXIT
  buildah --root "$CACHE/storage" --runroot "$CACHE/run" --storage-driver "${STORAGE_DRIVER:-overlay}" \
    push --quiet "$IMAGE" "docker-archive:$TAR:$IMAGE"
  docker load -i "$TAR" >/dev/null
  echo "loaded $IMAGE into the engine in $((SECONDS - started)) s" >&2
fi
docker tag "$IMAGE" "$NAME"
for old in $(docker images --format '{{.Repository}}:{{.Tag}}' | grep '^localhost/mlops:' | grep -v -x "$IMAGE" || true); do
  docker rmi "$old" >/dev/null 2>&1 || true
done
echo "$IMAGE"
