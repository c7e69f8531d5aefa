#!/usr/bin/env bash
# Stop the engine start_docker.sh started in D (by its pid file) and wait for it to exit, then unmount what it
# left mounted under D (a killed engine leaves its data root and network namespace mounted, and a mounted
# directory cannot be deleted: the loaded images, several GB, would stay on disk).
set -u; D=${D:?set D to the state directory}
unmount_left() { mount | awk -v d="$D/" 'index($3, d) == 1 {print $3}' | sort -r | while read -r m; do umount -l "$m" 2>/dev/null; done; }
pid=$(cat "$D/docker.pid" 2>/dev/null) || { unmount_left; exit 0; }
if kill "$pid" 2>/dev/null; then
  for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$pid" 2>/dev/null
fi
unmount_left; exit 0
