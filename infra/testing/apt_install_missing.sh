#!/usr/bin/env bash
# Sourced by install.sh and install_node.sh: `apt_install_missing LABEL PACKAGE...` installs the
# Debian packages given (sorted, each once) with the machine's own apt sources, or says they are
# present when none is given. Idempotent: the callers pass only what is missing.
apt_install_missing() {
  local label=$1; shift
  if [ $# -eq 0 ]; then
    echo "$label: packages present"
    return 0
  fi
  local packages
  mapfile -t packages < <(printf '%s\n' "$@" | sort -u)
  echo "$label: installing ${packages[*]}"
  local sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null
}
