#!/usr/bin/env bash
# Starts the whole system on this machine with demo data: installs Node 24 and dependencies,
# migrates, seeds a demo agency with a webhook (or keeps the one an earlier run made, with its key,
# webhook and owner's session), then runs the API, the recorder, the dispatcher, a local HTTPS
# receiver that prints each verified delivery and a simulator that changes the demo agency's trips,
# payments and contacts every few seconds, until Ctrl-C stops them all.
# It fails fast: a port in use stops it before anything starts, and a process that exits before
# the banner is named with the log line that says why and the variable to change; no banner then,
# and the exit status is 1.
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
# *.updated events wait seconds here, not production's minute, so that the simulator's changes reach
# the receiver while one watches; the recorder groups by them and the simulator says when each comes.
export EVENT_GROUP_QUIET="${EVENT_GROUP_QUIET:-5s}" EVENT_GROUP_MAX="${EVENT_GROUP_MAX:-20s}"
# Each process's output also goes to a file here, to say why it stopped if it does.
logs=.demo/logs

# What listens where, and the variable that moves it: "<what>=<VARIABLE>=<port>", separated by ';'.
declare -A listens=(
  [api]="the API=PORT=${PORT};its metrics=API_METRICS_PORT=${API_METRICS_PORT:-3003}"
  [recorder]="the recorder's health probes=RECORDER_HEALTH_PORT=${RECORDER_HEALTH_PORT:-3001}"
  [dispatcher]="the dispatcher's health probes=DISPATCHER_HEALTH_PORT=${DISPATCHER_HEALTH_PORT:-3002}"
  [receiver]="the demo webhook receiver=DEMO_RECEIVER_PORT=${receiver_port}"
)

# One "<what>=<VARIABLE>=<port>" a line, for one process.
split_listens() { printf '%s\n' "${listens[$1]}" | tr ';' '\n'; }

check_ports() {
  local specs=() name spec
  for name in "${!listens[@]}"; do
    while IFS= read -r spec; do specs+=("$spec"); done < <(split_listens "$name")
  done
  node scripts/check-ports.ts "${specs[@]}" || exit 1
}

field() { node -e 'process.stdout.write(String(JSON.parse(process.argv[1])[process.argv[2]]))' "$1" "$2"; }

# Migrates, then seeds the demo agency with a key, a webhook to the local receiver and the owner's
# password for the settings page, or keeps what an earlier run made (tripctl demo prepare): a
# restart revokes no key, signs the owner out of no session and adds no second webhook. The key
# and the webhook's secret are kept in .demo/demo.json, since the database holds only their hashes.
prepare_demo_data() {
  node scripts/ensure-database.ts
  pnpm --silent tripctl migrate
  # The demo owner signs in to the settings page with a password everyone knows: demo data only.
  owner_password="${DEMO_OWNER_PASSWORD:-demo-owner-password}"
  # The demo receiver is on this machine: allow its loopback address (demo only, D7).
  demo=$(printf '%s\n' "$owner_password" | WEBHOOK_ALLOW_PRIVATE_NETWORKS=true pnpm --silent tripctl demo prepare \
    --receiver-url "https://localhost:${receiver_port}/webhooks" --state .demo/demo.json \
    --base-url "http://localhost:${PORT}" --json)
  agency=$(field "$demo" agency_id)
  owner_email=$(field "$demo" owner_email)
}

# The dispatcher trusts the demo CA (scripts/demo-cert.sh: the demo receiver's certificate, and
# yours for a receiver of your own) and, when WEBHOOK_CA_FILE names one, that file's CAs as well.
trust_demo_ca() {
  bash scripts/demo-cert.sh .demo/receiver >/dev/null
  cat .demo/ca.pem >.demo/webhook-ca.pem
  if [ -n "${WEBHOOK_CA_FILE:-}" ]; then
    cat "$WEBHOOK_CA_FILE" >>.demo/webhook-ca.pem ||
      { echo "start.sh: cannot read WEBHOOK_CA_FILE=$WEBHOOK_CA_FILE, the CA you asked the dispatcher to trust besides the demo's" >&2; exit 1; }
  fi
}

# Each background process in a process group of its own (job control), so that Ctrl-C reaches this
# script alone and stop() below asks each process once. In the terminal's group, the services also
# got Ctrl-C's SIGINT, and stop()'s SIGTERM was a second signal that cut their graceful stop short.
set -m
pids=()
declare -A pid_of=()
stop() {
  trap - INT TERM
  echo "stopping…" >&2
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  wait "${pids[@]}" 2>/dev/null || true
  exit "${1:-0}"
}
trap stop INT TERM

# Runs "$@" in the background as process <name>, its output both on the terminal and in its log
# file. The tee ignores Ctrl-C, so that what the process says while it stops is still shown.
run_in_background() {
  local name=$1
  shift
  : >"$logs/$name.log"
  "$@" > >(trap '' INT && exec tee -a "$logs/$name.log") 2>&1 &
  pids+=($!)
  pid_of[$name]=$!
}

# Each service is its own process, as in production, started with node itself (not through pnpm,
# which does not pass SIGTERM on), so Ctrl-C reaches each.
run_service() {
  run_in_background "$1" bash -c 'cd "services/$1" && LOG_LEVEL="$2" exec node src/main.ts' _ "$1" "$service_log_level"
}

# Says which process stopped before it was ready, why (its log line) and what to change; stops the
# others; exits 1 without the banner.
fail_start() {
  local name=$1 problem=$2 what variable port
  {
    echo
    echo "start.sh: the ${name} ${problem}, so the demo did not start. Its log says:"
    echo "  $(node scripts/service-failure.ts "$logs/$name.log")"
    echo "It listens on:"
    split_listens "$name" | while IFS='=' read -r what variable port; do
      echo "  port ${port}, ${what} (${variable})"
    done
    echo "If a port is in use, stop what uses it or set its variable to a free port; a bad setting is named in the log line above. The whole log: $logs/$name.log"
  } >&2
  stop 1
}

# Waits until `check` succeeds, or fails the start when process <name> exits first or takes too long.
wait_until_ready() {
  local name=$1 check=$2 status
  for _ in $(seq 1 150); do
    if eval "$check" >/dev/null 2>&1; then return 0; fi
    if ! kill -0 "${pid_of[$name]}" 2>/dev/null; then
      wait "${pid_of[$name]}" && status=0 || status=$?
      fail_start "$name" "exited before it was ready (exit status $status)"
    fi
    sleep 0.2
  done
  fail_start "$name" "was not ready after 30 s"
}

print_banner() {
  local key watch
  key=$(field "$demo" key)
  if [ "$simulator" = off ]; then
    watch="Change a trip and watch the event arrive at the receiver, e.g.:"
  else
    watch="Every ${SIMULATOR_INTERVAL:-3s} the simulator changes a trip, payment or contact of this agency: each
'simulator ✎' line becomes a 'webhook ✓' line and an entry in GET /events (SIMULATOR=off leaves it out,
SIMULATOR_INTERVAL sets the pace). Make a change yourself too, e.g.:"
  fi
  cat >&2 <<INFO

Demo agency $agency, webhook $(field "$demo" webhook_id) → https://localhost:${receiver_port}/webhooks
Demo API key (the same on every run, kept in .demo/demo.json): $key
  $(field "$demo" curl)
  curl -H "Authorization: Bearer $key" "http://localhost:${PORT}/api/v1/events"
$watch
  psql "$DATABASE_URL" -c "UPDATE trips SET status = 'confirmed' WHERE agency_id = '$agency' AND status = 'planning'"
Created, status, paid and deleted events come at once. A *.updated event waits until its object has had no
change for $EVENT_GROUP_QUIET (at most $EVENT_GROUP_MAX after the first), so that a burst of edits makes one event:
EVENT_GROUP_QUIET and EVENT_GROUP_MAX, which production leaves at 1m and 5m (docs/events.md, "Grouping").
API settings page (keys, webhooks, delivery log): http://localhost:${PORT}/settings
  sign in as $owner_email with the password $owner_password
Your own receiver: bash scripts/demo-cert.sh gives it a certificate for localhost that this dispatcher trusts;
  add its https://localhost:<port>/… URL as a webhook on the settings page (docs/settings.md).
API reference: http://localhost:${PORT}/docs. Ctrl-C stops everything.
Infrastructure: $infrastructure.
The services log at level $service_log_level here (LOG_LEVEL=info bash scripts/start.sh shows every request).

INFO
}

check_ports
prepare_demo_data
mkdir -p "$logs"
trust_demo_ca

run_in_background receiver env DEMO_WEBHOOK_SECRET="$(field "$demo" webhook_secret)" DEMO_RECEIVER_PORT="$receiver_port" \
  DEMO_TLS_DIR=.demo/receiver node scripts/demo-receiver.ts
wait_until_ready receiver '(exec 3<>"/dev/tcp/127.0.0.1/${receiver_port}")'

# The recorder turns every change into an event (GET /api/v1/events) and publishes it to RabbitMQ;
# the dispatcher delivers it to the webhooks. The dispatcher is ready first: it declares the queues,
# so the demo seed's events need not wait the recorder's second before it publishes again what no
# queue took. It may reach loopback, where the demo receiver is (demo only).
WEBHOOK_CA_FILE="$PWD/.demo/webhook-ca.pem" WEBHOOK_ALLOW_PRIVATE_NETWORKS=true run_service dispatcher
wait_until_ready dispatcher "curl -sf http://127.0.0.1:${DISPATCHER_HEALTH_PORT:-3002}/readyz"
run_service recorder
wait_until_ready recorder "curl -sf http://127.0.0.1:${RECORDER_HEALTH_PORT:-3001}/readyz"
# The settings page may register webhooks on this machine too, like the demo receiver (demo only).
WEBHOOK_ALLOW_PRIVATE_NETWORKS=true run_service api
# The banner's curl lines work as soon as they are shown.
wait_until_ready api "curl -sf http://127.0.0.1:${PORT}/readyz"

simulator="${SIMULATOR:-on}"
print_banner
# The simulator starts after the banner so its lines follow it (scripts/simulator.ts).
if [ "$simulator" != off ]; then
  SIMULATOR_AGENCY="$agency" node scripts/simulator.ts &
  pids+=($!)
fi
wait -n "${pids[@]}" || true
stop
