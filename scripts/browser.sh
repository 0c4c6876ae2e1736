#!/usr/bin/env bash
# The browser tests of the settings page and /docs drive Debian's Chromium (services/api/test/
# settings-browser, settings-narrow, settings-layout and docs-browser.test.ts). Installs it when
# missing; CHROMIUM_PATH points the tests at another build.
# Where it cannot be installed (not root, or no apt-get, as on a laptop): in CI (.ci/run sets CI)
# that fails the run, as the pages would go untested in a browser; elsewhere it says which tests skip
# and how to have them, and exits 3, on which scripts/test.sh sets SKIP_BROWSER_TESTS=1 for jest.
set -euo pipefail
chromium="${CHROMIUM_PATH:-/usr/bin/chromium}"
[ -x "$chromium" ] && exit 0
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
  how="install Debian's chromium (apt-get install chromium, as root) or set CHROMIUM_PATH to a Chromium"
  if [ -n "${CI:-}" ] && [ "$CI" != false ] && [ "$CI" != 0 ]; then
    echo "browser: $chromium is missing, and CI never skips the settings page's browser tests: $how" >&2
    exit 1
  fi
  echo "browser: $chromium is missing, so services/api/test/settings-browser, settings-narrow, settings-layout and docs-browser.test.ts skip their browser tests; to run them, $how" >&2
  exit 3
fi
echo "browser: installing Debian's chromium" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends chromium >/dev/null
