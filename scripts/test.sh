#!/usr/bin/env bash
# Installs everything from nothing and runs every test against real PostgreSQL, RabbitMQ and Redis:
# this machine's, or containers of the run's own where the machine has none (docs/design/test-services.md).
# Usage: bash scripts/test.sh [jest arguments; a path runs just those files]
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/prepare.sh
# The browser's, promtool's, haproxy's and the recipes' interpreters' tests run, or skip where the
# tool cannot be had outside CI (exit 3, which says so; interpreters.sh names the missing ones on stdout).
export SKIP_BROWSER_TESTS=0 SKIP_PROMTOOL_TESTS=0 SKIP_HAPROXY_TESTS=0 SKIP_RECIPES=
bash scripts/browser.sh || { status=$?; [ "$status" = 3 ] || exit "$status"; SKIP_BROWSER_TESTS=1; }
bash scripts/promtool.sh || { status=$?; [ "$status" = 3 ] || exit "$status"; SKIP_PROMTOOL_TESTS=1; }
bash scripts/haproxy.sh || { status=$?; [ "$status" = 3 ] || exit "$status"; SKIP_HAPROXY_TESTS=1; }
missing=$(bash scripts/interpreters.sh) || { status=$?; [ "$status" = 3 ] || exit "$status"; SKIP_RECIPES=$missing; }
# Tests clone per-file databases from this server; it must allow CREATE DATABASE.
export DATABASE_URL="${TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres}"
export AMQP_URL="${TEST_AMQP_URL:-amqp://guest:guest@127.0.0.1:5672}"
export REDIS_URL="${TEST_REDIS_URL:-redis://127.0.0.1:6379}"

# The jest runs, with these services when they answer, else with PostgreSQL, RabbitMQ and Redis in
# containers started once for the whole run and stopped after it; with neither, one message says
# both ways out (packages/testkit/src/services/run.ts; TEST_SERVICES=local|containers forces one).
exec node packages/testkit/src/services/run.ts bash scripts/jest-runs.sh "$@"
