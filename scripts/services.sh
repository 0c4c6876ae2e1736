#!/usr/bin/env bash
# Makes sure the backing services this machine provides are up: PostgreSQL, RabbitMQ and Redis,
# each on loopback. Starts whichever is down with the machine's own commands, then waits for it.
set -uo pipefail

log() { echo "services: $*" >&2; }

wait_for() { # name, check command
  for _ in $(seq 1 60); do
    if eval "$2" >/dev/null 2>&1; then return 0; fi
    sleep 1
  done
  log "$1 did not come up"
  return 1
}

if ! pg_isready -h 127.0.0.1 -p 5432 -q 2>/dev/null; then
  log "starting PostgreSQL"
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n 1)" main start || true
  wait_for PostgreSQL "pg_isready -h 127.0.0.1 -p 5432 -q" || exit 1
fi

if ! rabbitmqctl -q status >/dev/null 2>&1; then
  log "starting RabbitMQ"
  rabbitmq-server -detached || true
  rabbitmqctl await_startup >/dev/null 2>&1 || wait_for RabbitMQ "rabbitmqctl -q status" || exit 1
fi
# A test that stops the broker's app must start it again; if one did not, do it here.
if ! rabbitmq-diagnostics -q check_running >/dev/null 2>&1; then
  rabbitmqctl start_app >/dev/null 2>&1 || true
fi

if ! redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1; then
  log "starting Redis"
  redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no || true
  wait_for Redis "redis-cli -h 127.0.0.1 -p 6379 ping" || exit 1
fi
log "PostgreSQL, RabbitMQ and Redis are up"
