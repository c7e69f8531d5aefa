#!/usr/bin/env bash
# A throwaway PostgreSQL cluster on 127.0.0.1:$PG_PORT (default 55432), trust auth, fsync off.
# State lives in $DIR (default ${TMPDIR:-/tmp}/mlops-test-postgres); started in under a second.
# Prints the SQLAlchemy URL of database $PG_DB (default mlflow) on the last line.
set -euo pipefail
PG_PORT=${PG_PORT:-55432}; PG_DB=${PG_DB:-mlflow}
DIR=${DIR:-${TMPDIR:-/tmp}/mlops-test-postgres}
BIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
trap 'rc=$?; echo "start_postgres.sh: \"$BASH_COMMAND\" failed (exit $rc)" >&2; tail -n 5 "$DIR"/*.log >&2 2>/dev/null; exit $rc' ERR
[ -x "$BIN/initdb" ] || { echo "PostgreSQL is not installed; run infra/testing/install.sh" >&2; exit 1; }
AS=()
if [ "$(id -u)" -eq 0 ]; then AS=(runuser -u postgres --); fi  # initdb refuses to run as root
"$(dirname "$0")/stop_postgres.sh" >/dev/null 2>&1 || true
rm -rf "$DIR"; mkdir -p "$DIR"
[ ${#AS[@]} -eq 0 ] || chown postgres "$DIR"
"${AS[@]}" "$BIN/initdb" -D "$DIR/data" -U postgres --auth=trust >"$DIR/initdb.log" 2>&1
"${AS[@]}" "$BIN/pg_ctl" -D "$DIR/data" -l "$DIR/server.log" -w \
  -o "-p $PG_PORT -k $DIR -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off" start >/dev/null
"${AS[@]}" "$BIN/createdb" -h 127.0.0.1 -p "$PG_PORT" -U postgres "$PG_DB"
echo "postgresql+psycopg2://postgres@127.0.0.1:$PG_PORT/$PG_DB"
