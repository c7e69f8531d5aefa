#!/usr/bin/env bash
# Sourced by test.sh: `phase NAME COMMAND...` runs COMMAND under a heading, prints how long it took, and
# keeps it for the table of phases printed when the script exits (also after a failure: the failed phase is
# marked). Set-up phases that find everything cached take seconds; the table shows what dominates a run.
PHASE_NAMES=(); PHASE_SECONDS=(); PHASE_STATUS=()
PHASES_STARTED=$SECONDS
phase() {
  local name=$1; shift
  local started=$SECONDS rc=0
  echo "== $name"
  "$@" || rc=$?
  PHASE_NAMES+=("$name"); PHASE_SECONDS+=($((SECONDS - started)))
  if [ $rc -eq 0 ]; then PHASE_STATUS+=("ok"); else PHASE_STATUS+=("FAILED (exit $rc)"); fi
  echo "   $name: $((SECONDS - started)) s"
  return $rc
}
minutes() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }
phase_table() {
  [ ${#PHASE_NAMES[@]} -gt 0 ] || return 0
  echo
  printf '%-44s %9s  %s\n' "phase" "duration" "status"
  local i
  for i in "${!PHASE_NAMES[@]}"; do
    printf '%-44s %9s  %s\n' "${PHASE_NAMES[$i]}" "$(minutes "${PHASE_SECONDS[$i]}")" "${PHASE_STATUS[$i]}"
  done
  printf '%-44s %9s  (load average now: %s)\n' "total" "$(minutes $((SECONDS - PHASES_STARTED)))" \
    "$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)"
}
trap phase_table EXIT
