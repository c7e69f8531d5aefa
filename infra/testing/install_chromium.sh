#!/usr/bin/env bash
# Install Debian's headless-capable Chromium for the `browser` tests (tests/support/browser.py): each
# HTML report (model card, model-validation report, data-validation report) is opened in it, a
# screenshot taken and the DOM read back after load, so a report that breaks in a real browser fails.
# Idempotent and quick when it is there: apt runs only when /usr/bin/chromium is missing.
set -euo pipefail
missing=()
[ -x /usr/bin/chromium ] || missing+=(chromium)
# Fonts, so the screenshot shows text rather than boxes (chromium recommends them; --no-install-recommends skips them).
fc-list 2>/dev/null | grep -qi dejavu || missing+=(fonts-dejavu-core)
source "$(dirname "$0")/apt_install_missing.sh"
apt_install_missing "chromium" "${missing[@]}"
