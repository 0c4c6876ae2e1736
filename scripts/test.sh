#!/usr/bin/env bash
# Installs everything from nothing and runs every test against the real services of this machine.
# Usage: bash scripts/test.sh [jest arguments, e.g. a path]
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/toolchain.sh
bash scripts/services.sh
pnpm install --frozen-lockfile --reporter=silent
# Tests clone per-file databases from this server; it must allow CREATE DATABASE.
export DATABASE_URL="${TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres}"
export AMQP_URL="${TEST_AMQP_URL:-amqp://guest:guest@127.0.0.1:5672}"
export REDIS_URL="${TEST_REDIS_URL:-redis://127.0.0.1:6379}"
exec pnpm test "$@"
