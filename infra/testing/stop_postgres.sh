#!/usr/bin/env bash
# Stop the cluster started by start_postgres.sh (same DIR); a no-op when none runs.
set -uo pipefail
DIR=${DIR:-${TMPDIR:-/tmp}/mlops-test-postgres}
BIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -f "$DIR/data/postmaster.pid" ] || exit 0
AS=(); [ "$(id -u)" -eq 0 ] && AS=(runuser -u postgres --)
"${AS[@]}" "$BIN/pg_ctl" -D "$DIR/data" -m immediate -w stop >/dev/null
