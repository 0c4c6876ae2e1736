#!/usr/bin/env bash
# The prelude every entry point shares (start.sh, test.sh, .ci/run): Node 24 and pnpm on PATH,
# the machine's services up, dependencies installed from the lockfile. Source it from the repo root.
# It runs once per process tree: .ci/run prepares, then calls test.sh, which need not do it again.
if [ "${TRIPS_PREPARED:-}" != 1 ]; then
  . scripts/toolchain.sh || return 1
  bash scripts/services.sh || return 1
  pnpm install --frozen-lockfile --engine-strict --reporter=silent || return 1
  export TRIPS_PREPARED=1
fi
