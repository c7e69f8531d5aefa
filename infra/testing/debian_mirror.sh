#!/usr/bin/env bash
# Print the Debian mirror this machine's apt uses (deb822 sources first, then the one-line format), so no
# script in the repository names a package registry's host: every download goes where apt already goes.
set -euo pipefail
mirror=$(awk '/^URIs:/{print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
[ -n "$mirror" ] || mirror=$(awk '/^deb /{print $2; exit}' /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null || true)
[ -n "$mirror" ] || { echo "no Debian mirror in /etc/apt/sources.list(.d): configure apt first" >&2; exit 1; }
echo "${mirror%/}"
