#!/usr/bin/env bash
# Stop the engine start_docker.sh started in D (by its pid file) and wait for it to exit.
set -u; D=${D:?set D to the state directory}
pid=$(cat "$D/docker.pid" 2>/dev/null) || exit 0
kill "$pid" 2>/dev/null || exit 0
for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || exit 0; sleep 0.1; done
kill -9 "$pid" 2>/dev/null; exit 0
