#!/usr/bin/env bash
# The alert rules' tests run Prometheus' promtool (test/monitoring/alerts.test.ts). Installs Debian's
# prometheus package, which ships it, when it is missing; PROMTOOL points the test at another one.
# The package would start a Prometheus server: a policy-rc.d that refuses every start keeps it off
# for the install (on machines without one of their own), as nothing here needs the server.
# Where it cannot be installed (not root, or no apt-get, as on a laptop): in CI (.ci/run sets CI)
# that fails the run, as the rules would go untested; elsewhere it says which tests skip and how
# to have them, and exits 3, on which scripts/test.sh sets SKIP_PROMTOOL_TESTS=1 for jest.
set -euo pipefail
command -v "${PROMTOOL:-promtool}" >/dev/null && exit 0
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
  how="install Debian's prometheus package (apt-get install prometheus, as root) or set PROMTOOL to a promtool"
  if [ -n "${CI:-}" ] && [ "$CI" != false ] && [ "$CI" != 0 ]; then
    echo "promtool: ${PROMTOOL:-promtool} is missing, and CI never skips the alert rules' tests: $how" >&2
    exit 1
  fi
  echo "promtool: ${PROMTOOL:-promtool} is missing, so test/monitoring/alerts.test.ts skips its promtool tests (check rules, test rules, the naive rules); to run them, $how" >&2
  exit 3
fi
echo "promtool: installing Debian's prometheus package (for promtool; the server is not started)" >&2
policy=/usr/sbin/policy-rc.d
own_policy=
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy" && own_policy=1
fi
trap '[ -n "$own_policy" ] && rm -f "$policy"' EXIT
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends prometheus >/dev/null
