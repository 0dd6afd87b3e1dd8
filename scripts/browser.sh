#!/usr/bin/env bash
# The headless browser the report page's test renders `vouch bench report`'s page in:
# Chromium from Debian's packages, installed when missing. Prints the browser's path.
set -euo pipefail

find_browser() {
  for name in chromium chromium-browser google-chrome; do
    if command -v "$name" >/dev/null; then command -v "$name"; return 0; fi
  done
  return 1
}

if ! find_browser >/dev/null; then
  echo "browser.sh: installing chromium with apt-get..." >&2
  sudo=$([[ $(id -u) == 0 ]] || echo sudo)
  packages=(chromium fonts-dejavu-core)
  $sudo apt-get install -y -qq --no-install-recommends "${packages[@]}" >&2 \
    || { $sudo apt-get update -qq >&2 && $sudo apt-get install -y -qq --no-install-recommends "${packages[@]}" >&2; }
fi
find_browser || { echo "browser.sh: chromium did not install" >&2; exit 1; }
