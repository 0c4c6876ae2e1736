#!/usr/bin/env bash
# The alert rules' tests run Prometheus' promtool (test/monitoring/alerts.test.ts). Installs Debian's
# prometheus package, which ships it, when it is missing; PROMTOOL points the test at another one.
# The package would start a Prometheus server: a policy-rc.d that refuses every start keeps it off
# for the install (on machines without one of their own), as nothing here needs the server.
set -euo pipefail
command -v "${PROMTOOL:-promtool}" >/dev/null && exit 0
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
  echo "promtool: missing; install Debian's prometheus package (apt-get install prometheus) or set PROMTOOL" >&2
  exit 1
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
