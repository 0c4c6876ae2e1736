#!/usr/bin/env bash
# Makes sure the backing services this machine provides are up: PostgreSQL, RabbitMQ and Redis,
# each on loopback. Starts whichever is down with the machine's own commands (Debian's), then waits
# for it. One without Debian's package is left to the caller: test.sh and start.sh use whatever
# answers on its port, else Docker (docs/design/test-services.md).
set -uo pipefail

log() { echo "services: $*" >&2; }
has() { command -v "$1" >/dev/null 2>&1; }

wait_for() { # name, check command
  for _ in $(seq 1 60); do
    if eval "$2" >/dev/null 2>&1; then return 0; fi
    sleep 1
  done
  log "$1 did not come up"
  return 1
}

missing=()

if ! has pg_ctlcluster; then
  missing+=(PostgreSQL)
elif ! pg_isready -h 127.0.0.1 -p 5432 -q 2>/dev/null; then
  log "starting PostgreSQL"
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n 1)" main start || true
  wait_for PostgreSQL "pg_isready -h 127.0.0.1 -p 5432 -q" || exit 1
fi

# Up is: AMQP answers on its port. Not `rabbitmqctl status`, which fails for any user but root and
# rabbitmq (the node's cookie is theirs), so that a developer's own user took a running broker for
# down and started a second one, which failed on the port and stopped the run.
amqp_up() { (exec 3<>/dev/tcp/127.0.0.1/5672) 2>/dev/null; }

if ! has rabbitmq-server; then
  missing+=(RabbitMQ)
elif ! amqp_up; then
  # A node whose application was stopped by hand (rabbitmqctl stop_app; no test stops this one).
  rabbitmqctl start_app >/dev/null 2>&1 || true
  if ! amqp_up; then
    log "starting RabbitMQ"
    rabbitmq-server -detached || true
    wait_for RabbitMQ amqp_up || exit 1
  fi
fi

if ! has redis-server; then
  missing+=(Redis)
elif ! redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1; then
  log "starting Redis"
  redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no || true
  wait_for Redis "redis-cli -h 127.0.0.1 -p 6379 ping" || exit 1
fi

if [ ${#missing[@]} -eq 0 ]; then
  log "PostgreSQL, RabbitMQ and Redis are up"
else
  log "no Debian ${missing[*]} to start here: one already on its usual port serves, else Docker's"
fi
