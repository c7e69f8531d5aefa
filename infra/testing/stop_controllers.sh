#!/usr/bin/env bash
# Stop what start_controllers.sh started (by pid). The CRDs and webhook configurations stay on the API
# server, which goes with its own stop script. Safe to run twice.
N=${N:?set N to the state directory of start_controllers.sh}
for f in "$N"/*.pid; do
  [ -f "$f" ] || continue
  kill "$(cat "$f")" 2>/dev/null; rm -f "$f"
done
true
