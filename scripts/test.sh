#!/usr/bin/env bash
# Installs everything from nothing and runs every test against the real services of this machine.
# Usage: bash scripts/test.sh [jest arguments; a path runs just those files]
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/prepare.sh
bash scripts/browser.sh
# Tests clone per-file databases from this server; it must allow CREATE DATABASE.
export DATABASE_URL="${TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres}"
export AMQP_URL="${TEST_AMQP_URL:-amqp://guest:guest@127.0.0.1:5672}"
export REDIS_URL="${TEST_REDIS_URL:-redis://127.0.0.1:6379}"

paths=()
for arg in "$@"; do [[ "$arg" == -* ]] || paths+=("$arg"); done
if [ ${#paths[@]} -gt 0 ]; then exec pnpm test "$@"; fi

# Files named *.serial.test.ts restart a shared service (RabbitMQ, Postgres), which would disturb
# files running beside them, so they run after the rest, one at a time.
results=$(mktemp -d)
status=0
pnpm test "$@" --testPathIgnorePatterns='\.serial\.test\.ts$' --json --outputFile="$results/parallel.json" || status=$?
pnpm test "$@" --runInBand --passWithNoTests --testPathPatterns='\.serial\.test\.ts$' --json --outputFile="$results/serial.json" || status=$?
node -e '
  const files = process.argv.slice(1).map((f) => { try { return require(f); } catch { return {}; } });
  const sum = (k) => files.reduce((n, r) => n + (r[k] ?? 0), 0);
  console.log(`tests: ${sum("numPassedTests")} passed, ${sum("numFailedTests")} failed, ${sum("numPendingTests")} skipped`);
' "$results/parallel.json" "$results/serial.json"
rm -rf "$results"
exit $status
