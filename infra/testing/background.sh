# Sourced by the start_/stop_ scripts of a server that runs in the background as its own process group,
# its pid in a file: one way to wait for it and one way to stop it, whichever server it is.

# wait_ready NAME PIDFILE LOG URL SECONDS POLL: poll URL until it answers; when the process dies or SECONDS
# pass first, print NAME's last log lines and exit 1.
wait_ready() {
  local name=$1 pidfile=$2 log=$3 url=$4 deadline=$((SECONDS + $5)) poll=$6
  until curl -sf -o /dev/null "$url"; do
    if ! kill -0 "$(cat "$pidfile")" 2>/dev/null || [ $SECONDS -ge $deadline ]; then
      echo "$name did not become ready; last log lines ($log):" >&2
      tail -n 15 "$log" >&2; exit 1
    fi
    sleep "$poll"
  done
}

# stop_group PIDFILE: TERM the process group PIDFILE names, KILL it after 10 s, remove PIDFILE; a no-op when
# there is no PIDFILE.
stop_group() {
  local pidfile=$1 pid
  [ -f "$pidfile" ] || return 0
  pid=$(cat "$pidfile")
  kill -- "-$pid" 2>/dev/null || kill "$pid" 2>/dev/null
  for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
  kill -9 -- "-$pid" 2>/dev/null; rm -f "$pidfile"; true
}
