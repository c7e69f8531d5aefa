#!/usr/bin/env bash
# Put the platform image into a Docker engine (DOCKER_HOST, else the default socket) for kfp.local's
# DockerRunner (`mlops run --runner docker`): built or taken from cache by build_image.sh, exported by buildah
# as a docker archive (the engine of Debian's docker.io cannot load OCI archives), loaded, and tagged
#   $1  (the name every component declares, mlops.images.PLATFORM_IMAGE)  and  localhost/mlops:<sources key>.
# An engine that already has this build is only re-tagged; older localhost/mlops builds are removed from it.
# The archive goes from buildah to the engine through a pipe (no file). Prints the build tag last.
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
  # Through a pipe, never a file: the engine unpacks the archive into a temporary folder before it imports the
  # layers, so a docker-archive file beside it would hold a third copy of the image on disk at that moment.
  FIFO=$(mktemp -u -p "$CACHE" docker-archive-XXXXXX.fifo); mkfifo "$FIFO"; trap 'rm -f "$FIFO"' EXIT
  # A push that fails before it opens the pipe would leave the reader waiting: its failure opens the pipe once.
  ( buildah --root "$CACHE/storage" --runroot "$CACHE/run" --storage-driver "${STORAGE_DRIVER:-overlay}" \
      push --quiet "$IMAGE" "docker-archive:$FIFO:$IMAGE" || { rc=$?; timeout 10 bash -c ': >"$1"' _ "$FIFO"; exit "$rc"; } ) &
  pusher=$!
  loaded=0; docker load -i "$FIFO" >/dev/null || { loaded=$?; kill "$pusher" 2>/dev/null; }  # a reader gone: no hang
  pushed=0; wait "$pusher" || pushed=$?
  [ "$loaded" = 0 ] && [ "$pushed" = 0 ] || { echo "loading $IMAGE failed (buildah push exit $pushed, docker load exit $loaded)" >&2; exit 1; }
  echo "loaded $IMAGE into the engine in $((SECONDS - started)) s" >&2
fi
docker tag "$IMAGE" "$NAME"
for old in $(docker images --format '{{.Repository}}:{{.Tag}}' | grep '^localhost/mlops:' | grep -v -x "$IMAGE" || true); do
  docker rmi "$old" >/dev/null 2>&1 || true
done
echo "$IMAGE"
