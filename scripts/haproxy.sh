#!/usr/bin/env bash
# The Postgres failover tests put haproxy in front of a primary and its replica
# (scripts/postgres-replica.sh), standing in for CloudNativePG's -rw Service. Installs Debian's
# haproxy package when it is missing; HAPROXY points the script at another one. The package would
# start a haproxy of its own: a policy-rc.d that refuses every start keeps it off for the install
# (on machines without one of their own), as nothing here needs it.
# Where it cannot be installed (not root, or no apt-get, as on a laptop): in CI (.ci/run sets CI)
# that fails the run, as the failover would go unmeasured; elsewhere it says which tests skip and
# how to have them, and exits 3, on which scripts/test.sh sets SKIP_HAPROXY_TESTS=1 for jest.
set -euo pipefail
command -v "${HAPROXY:-haproxy}" >/dev/null && exit 0
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
  how="install Debian's haproxy package (apt-get install haproxy, as root) or set HAPROXY to a haproxy"
  if [ -n "${CI:-}" ] && [ "$CI" != false ] && [ "$CI" != 0 ]; then
    echo "haproxy: ${HAPROXY:-haproxy} is missing, and CI never skips the Postgres failover tests: $how" >&2
    exit 1
  fi
  echo "haproxy: ${HAPROXY:-haproxy} is missing, so test/system/pg-failover*.serial.test.ts skip; to run them, $how" >&2
  exit 3
fi
echo "haproxy: installing Debian's haproxy package (its own server is not started)" >&2
policy=/usr/sbin/policy-rc.d
own_policy=
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy" && own_policy=1
fi
trap '[ -n "$own_policy" ] && rm -f "$policy"' EXIT
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends haproxy >/dev/null
