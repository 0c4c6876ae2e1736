#!/usr/bin/env bash
# Starts the whole system on this machine with demo data: installs Node 24 and dependencies,
# migrates, seeds a demo agency, then runs the API and the recorder until Ctrl-C stops them all.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/prepare.sh

export DATABASE_URL="${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/trips}"
export AMQP_URL="${AMQP_URL:-amqp://guest:guest@127.0.0.1:5672}"
export REDIS_URL="${REDIS_URL:-redis://127.0.0.1:6379}"
export PORT="${PORT:-3000}"

node scripts/ensure-database.ts
pnpm --silent tripctl migrate
pnpm --silent tripctl demo seed --base-url "http://localhost:${PORT}"

pids=()
stop() {
  trap - INT TERM
  echo "stopping…" >&2
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  wait "${pids[@]}" 2>/dev/null || true
  exit 0
}
trap stop INT TERM

# Each service is its own process, as in production. The recorder turns every change into an
# event (GET /api/v1/events) and publishes it to RabbitMQ; its health is on :3001.
pnpm --silent --filter ./services/api start &
pids+=($!)
pnpm --silent --filter ./services/recorder start &
pids+=($!)
echo "API on http://localhost:${PORT} (reference at http://localhost:${PORT}/docs). Ctrl-C stops everything." >&2
wait -n "${pids[@]}" || true
stop
