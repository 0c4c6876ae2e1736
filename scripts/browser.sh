#!/usr/bin/env bash
# The settings page's browser test drives Debian's Chromium (services/api/test/settings-browser.test.ts).
# Installs it when missing; CHROMIUM_PATH points the test at another build.
set -euo pipefail
chromium="${CHROMIUM_PATH:-/usr/bin/chromium}"
[ -x "$chromium" ] && exit 0
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
  echo "browser: $chromium is missing; install Debian's chromium (apt-get install chromium) or set CHROMIUM_PATH" >&2
  exit 1
fi
echo "browser: installing Debian's chromium" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends chromium >/dev/null
