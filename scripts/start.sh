#!/usr/bin/env bash
# Starts the whole system on this machine with demo data: installs Node 24 and dependencies,
# migrates, seeds a demo agency with a webhook, then runs the API, the recorder, the dispatcher, a
# local HTTPS receiver that prints each verified delivery and a simulator that changes the demo
# agency's trips, payments and contacts every few seconds, until Ctrl-C stops them all.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/prepare.sh

. scripts/local-env.sh
# Those when they answer, else docker compose's (sets $infrastructure for the banner).
. scripts/infrastructure.sh
export PORT="${PORT:-3000}"
receiver_port="${DEMO_RECEIVER_PORT:-4000}"
# The services' JSON logs show warnings and errors only, so the demo's own lines stay readable
# between them; LOG_LEVEL=info shows every request and batch too.
service_log_level="${LOG_LEVEL:-warn}"

node scripts/ensure-database.ts
pnpm --silent tripctl migrate
seed=$(pnpm --silent tripctl demo seed --base-url "http://localhost:${PORT}" --json)
field() { node -e 'process.stdout.write(String(JSON.parse(process.argv[1])[process.argv[2]]))' "$1" "$2"; }
agency=$(field "$seed" agency_id)
receiver_url="https://localhost:${receiver_port}/webhooks"
node scripts/retire-demo-webhooks.ts "$receiver_url"
# The demo receiver is on this machine: allow its loopback address (demo only, D7).
webhook=$(WEBHOOK_ALLOW_PRIVATE_NETWORKS=true pnpm --silent tripctl webhook create --agency "$agency" --events all --json \
  --url "$receiver_url" --description "demo receiver")
# The demo owner signs in to the settings page with a password everyone knows: demo data only.
owner_email=$(field "$seed" owner_email)
owner_password="${DEMO_OWNER_PASSWORD:-demo-owner-password}"
printf '%s\n' "$owner_password" | pnpm --silent tripctl user set-password "$owner_email" >/dev/null

# Each background process in a process group of its own (job control), so that Ctrl-C reaches this
# script alone and stop() below asks each process once. In the terminal's group, the services also
# got Ctrl-C's SIGINT, and stop()'s SIGTERM was a second signal that cut their graceful stop short.
set -m
pids=()
stop() {
  trap - INT TERM
  echo "stopping…" >&2
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  wait "${pids[@]}" 2>/dev/null || true
  exit 0
}
trap stop INT TERM

# The demo receiver makes a throwaway CA; the dispatcher trusts it and may reach loopback (demo only).
mkdir -p .demo && rm -f .demo/ca.pem
DEMO_WEBHOOK_SECRET=$(field "$webhook" secret) DEMO_RECEIVER_PORT="$receiver_port" DEMO_CA_FILE=.demo/ca.pem \
  node scripts/demo-receiver.ts &
pids+=($!)
for _ in $(seq 1 100); do [ -s .demo/ca.pem ] && break; sleep 0.1; done

# Each service is its own process, as in production. The recorder turns every change into an event
# (GET /api/v1/events) and publishes it to RabbitMQ (health on :3001); the dispatcher delivers it
# to the webhooks (health on :3002). The dispatcher is ready first: it declares the queues, so the
# demo seed's events need not wait the recorder's second before it publishes again what no queue took.
# Started with node itself (not through pnpm, which does not pass SIGTERM on), so Ctrl-C reaches each.
run_service() { (cd "services/$1" && LOG_LEVEL="$service_log_level" exec node src/main.ts) & pids+=($!); }
WEBHOOK_CA_FILE="$PWD/.demo/ca.pem" WEBHOOK_ALLOW_PRIVATE_NETWORKS=true run_service dispatcher
for _ in $(seq 1 150); do
  curl -sf "http://127.0.0.1:${DISPATCHER_HEALTH_PORT:-3002}/readyz" >/dev/null && break
  sleep 0.2
done
run_service recorder
# The settings page may register webhooks on this machine too, like the demo receiver (demo only).
WEBHOOK_ALLOW_PRIVATE_NETWORKS=true run_service api
# The banner's curl lines work as soon as they are shown.
for _ in $(seq 1 150); do
  curl -sf "http://127.0.0.1:${PORT}/readyz" >/dev/null && break
  sleep 0.2
done

key=$(field "$seed" key)
simulator="${SIMULATOR:-on}"
if [ "$simulator" = off ]; then
  watch="Change a trip and watch the event arrive at the receiver, e.g.:"
else
  watch="Every ${SIMULATOR_INTERVAL:-3s} the simulator changes a trip, payment or contact of this agency: each
'simulator ✎' line becomes a 'webhook ✓' line and an entry in GET /events (SIMULATOR=off leaves it out,
SIMULATOR_INTERVAL sets the pace). Make a change yourself too, e.g.:"
fi
cat >&2 <<INFO

Demo agency $agency, webhook $(field "$webhook" id) → https://localhost:${receiver_port}/webhooks
Demo API key (shown once): $key
  $(field "$seed" curl)
  curl -H "Authorization: Bearer $key" "http://localhost:${PORT}/api/v1/events"
$watch
  psql "$DATABASE_URL" -c "UPDATE trips SET status = 'confirmed' WHERE agency_id = '$agency' AND status = 'planning'"
API settings page (keys, webhooks, delivery log): http://localhost:${PORT}/settings
  sign in as $owner_email with the password $owner_password
API reference: http://localhost:${PORT}/docs. Ctrl-C stops everything.
Infrastructure: $infrastructure.
The services log at level $service_log_level here (LOG_LEVEL=info bash scripts/start.sh shows every request).

INFO
# The simulator starts after the banner so its lines follow it (scripts/simulator.ts).
if [ "$simulator" != off ]; then
  SIMULATOR_AGENCY="$agency" node scripts/simulator.ts &
  pids+=($!)
fi
wait -n "${pids[@]}" || true
stop
