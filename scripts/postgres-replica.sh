#!/usr/bin/env bash
# A PostgreSQL primary and a streaming replica on this machine, beside (never instead of) the
# machine's own cluster, with a TCP proxy in front that follows the primary: the stand-in for
# CloudNativePG's `-rw` Service, for the Postgres failover test and for trying the services by hand;
# with --single, one server alone and no proxy, which a test stops and starts instead of the machine's.
#
#   bash scripts/postgres-replica.sh up [--async|--single] [--dir DIR]   start, print DATABASE_URL
#   bash scripts/postgres-replica.sh down         [--dir DIR]   stop everything, remove DIR
#   bash scripts/postgres-replica.sh stop N       [--dir DIR]   stop node N (1, 2; fast: sessions cut off)
#   bash scripts/postgres-replica.sh start N      [--dir DIR]   start node N again, answer once it accepts
#   bash scripts/postgres-replica.sh kill-primary [--dir DIR]   kill -9 the primary's postmaster: a crash
#   bash scripts/postgres-replica.sh promote      [--dir DIR]   promote the replica (the old primary is down)
#   bash scripts/postgres-replica.sh rejoin       [--dir DIR]   the old primary rewound, back as the replica
#   bash scripts/postgres-replica.sh switchover   [--dir DIR]   planned: stop the primary, promote, rejoin
#   bash scripts/postgres-replica.sh primary      [--dir DIR]   print the primary's node number (1 or 2)
#   bash scripts/postgres-replica.sh env          [--dir DIR]   print the replica set's settings
#
# DIR (default $TMPDIR/trips-postgres-replica, or POSTGRES_REPLICA_DIR) holds everything: each node's
# data, log and socket, the proxy's configuration and log, and replica.env. Ports are free ones,
# taken at `up` and kept for restarts. Replication is synchronous, as CloudNativePG's `synchronous:
# {method: any, number: 1, dataDurability: preferred}` in k8s/components/engines: a commit waits for
# the replica while there is one, and a primary without a replica goes on alone. `--async` never
# waits (docs/design/postgres-failover.md measures what that loses).
#
# What keeps the machine's own cluster (5432, /etc/postgresql) out of reach: the nodes are initdb'd
# here with Debian's binaries (not pg_ctlcluster), read only their own configuration, listen on
# 127.0.0.1 at their own ports with their sockets in DIR, and every command names its data directory.
# As root the nodes run as the postgres user (Postgres refuses root), and DIR is given to it.
set -Eeuo pipefail

usage() { sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }

command=${1:-}
[ -n "$command" ] || usage
shift
node_arg=
case "$command" in
  stop | start) node_arg=${1:-}; [[ "$node_arg" =~ ^[12]$ ]] || usage; shift ;;
esac
dir=${POSTGRES_REPLICA_DIR:-${TMPDIR:-/tmp}/trips-postgres-replica}
async=
single=
while [ $# -gt 0 ]; do
  case "$1" in
    --dir) dir=$2; shift 2 ;;
    --async) async=1; shift ;;
    --single) single=1; shift ;;
    *) usage ;;
  esac
done

bin=${PG_BIN:-/usr/lib/postgresql/15/bin}
[ -x "$bin/pg_ctl" ] || bin=$(pg_config --bindir 2>/dev/null || true)
haproxy=${HAPROXY:-haproxy}
# The proxy in front that follows the primary: its configuration, start and checks.
. "$(dirname "$0")/postgres-proxy.sh"

# Postgres refuses to run as root: then every server-side command runs as the postgres user.
as_owner() {
  if [ "$(id -u)" = 0 ]; then (cd / && runuser -u postgres -- "$@"); else "$@"; fi
}
pg() { as_owner "$bin/$1" "${@:2}"; }

# A port nothing listens on, in a range the kernel does not hand out to outgoing connections.
taken=" "
free_port() {
  local port
  while :; do
    port=$((20000 + RANDOM % 12000))
    [[ "$taken" == *" $port "* ]] && continue
    ss -Htln "sport = :$port" | grep -q . && continue
    taken+="$port "
    echo "$port"
    return
  done
}

port_of() { cat "$dir/node$1/port"; }
data_of() { echo "$dir/node$1/data"; }
other() { echo $((3 - $1)); }
sql() { as_owner "$bin/psql" -X -q -A -t -h "$dir/node$1" -p "$(port_of "$1")" -U postgres -d postgres -c "$2"; }

postmaster_pid() { head -1 "$(data_of "$1")/postmaster.pid" 2>/dev/null || true; }
alive() { local pid; pid=$(postmaster_pid "$1"); [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; }
in_recovery() { [ "$(sql "$1" 'SELECT pg_is_in_recovery()' 2>/dev/null)" = t ]; }

# Starts node N detached, with no descriptor of ours open: a server left running must not hold, say,
# the flock of whoever ran this script.
start_node() {
  local n=$1
  (
    for fd in $(ls /proc/$BASHPID/fd); do [ "$fd" -gt 2 ] && eval "exec $fd>&-"; done
    pg pg_ctl start -w -t 60 -D "$(data_of "$n")" -l "$dir/node$n/postgres.log" </dev/null >/dev/null
  )
}

# Which replica the primary on node N waits for (none with --async, or while it has no replica):
# the operator's dataDurability: preferred, which lists only the replicas that are there.
wait_for_replica() {
  local n=$1 names=
  [ -z "$async" ] && [ "${2:-}" = yes ] && names="ANY 1 (node$(other "$n"))"
  echo "synchronous_standby_names = '$names'" >"$dir/node$n/synchronous.conf"
  alive "$n" && pg pg_ctl reload -D "$(data_of "$n")" >/dev/null
  return 0
}

# Node N follows the other node: streaming replication under its own name (the name the primary's
# synchronous_standby_names lists).
follow() {
  local n=$1 primary
  primary=$(other "$n")
  touch "$(data_of "$n")/standby.signal"
  echo "primary_conninfo = 'host=127.0.0.1 port=$(port_of "$primary") user=postgres application_name=node$n'" \
    >"$dir/node$n/follow.conf"
}

configure() {
  local n=$1
  cat >"$dir/node$n/postgresql.conf" <<CONF
listen_addresses = '127.0.0.1'
port = $(port_of "$n")
unix_socket_directories = '$dir/node$n'
hba_file = '$dir/pg_hba.conf'
ident_file = '$dir/pg_ident.conf'
max_connections = 100
shared_buffers = 64MB
wal_level = replica
max_wal_senders = 5
hot_standby = on
# pg_rewind brings a failed primary back as the replica without a new base backup.
wal_log_hints = on
wal_keep_size = 256MB
# A primary that lost its replica hears of it within seconds, not at the kernel's TCP timeout.
wal_sender_timeout = 5s
wal_receiver_timeout = 5s
# What a failed run's evidence keeps: each statement that failed, with its session.
log_line_prefix = '%m [%p] %a '
include '$dir/node$n/synchronous.conf'
include_if_exists '$dir/node$n/follow.conf'
CONF
}

write_env() {
  if [ -n "$single" ]; then
    echo "DATABASE_URL=postgres://postgres@127.0.0.1:$(port_of 1)/postgres" >"$dir/replica.env"
    echo "POSTGRES_NODE_URLS=postgres://postgres@127.0.0.1:$(port_of 1)/postgres" >>"$dir/replica.env"
    echo "POSTGRES_REPLICA_DIR=$dir" >>"$dir/replica.env"
    return
  fi
  {
    echo "DATABASE_URL=$(database_url)"
    echo "POSTGRES_NODE_URLS=postgres://postgres@127.0.0.1:$(port_of 1)/postgres,postgres://postgres@127.0.0.1:$(port_of 2)/postgres"
    echo "POSTGRES_REPLICATION=$([ -n "$async" ] && echo asynchronous || echo synchronous)"
    echo "POSTGRES_REPLICA_DIR=$dir"
  } >"$dir/replica.env"
}

await_replica_streaming() {
  local primary=$1
  for _ in $(seq 1 300); do
    [ "$(sql "$primary" "SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'" 2>/dev/null)" = 1 ] &&
      return 0
    sleep 0.1
  done
  echo "node $(other "$primary") is not streaming from node $primary; see $dir/node*/postgres.log" >&2
  return 1
}

up() {
  if [ -f "$dir/replica.env" ]; then
    echo "a replica set is already set up in $dir; run 'down' first" >&2
    exit 1
  fi
  [ -x "$bin/pg_ctl" ] || { echo "no PostgreSQL binaries in $bin (set PG_BIN)" >&2; exit 1; }
  [ -n "$single" ] || command -v "$haproxy" >/dev/null || {
    echo "no haproxy (bash scripts/haproxy.sh installs it)" >&2
    exit 1
  }
  mkdir -p "$dir/node1" "$dir/node2"
  [ -n "$async" ] && echo 1 >"$dir/async"
  for n in 1 2; do free_port >"$dir/node$n/port"; done
  free_port >"$dir/proxy_port"
  free_port >"$dir/stats_port"
  printf 'local all all trust\nhost all all 127.0.0.1/32 trust\nhost replication all 127.0.0.1/32 trust\n' \
    >"$dir/pg_hba.conf"
  : >"$dir/pg_ident.conf"
  [ "$(id -u)" = 0 ] && chown -R postgres: "$dir"
  trap '[ "$BASHPID" = $$ ] || exit; trap - ERR; echo "up failed; servers stopped, logs kept in $dir ('"'"'down'"'"' removes them)" >&2; stop_all' ERR
  pg initdb -D "$(data_of 1)" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 >"$dir/node1/initdb.log"
  # The nodes read the configuration written here, never a copy in their data directory.
  for n in 1 2; do configure "$n"; done
  echo "include '$dir/node1/postgresql.conf'" >"$(data_of 1)/postgresql.conf"
  if [ -n "$single" ]; then
    wait_for_replica 1 no
    start_node 1
    write_env
    trap - ERR
    cat "$dir/replica.env"
    return
  fi
  wait_for_replica 1 yes
  start_node 1
  pg pg_basebackup -h 127.0.0.1 -p "$(port_of 1)" -U postgres -D "$(data_of 2)" -X stream -c fast
  echo "include '$dir/node2/postgresql.conf'" >"$(data_of 2)/postgresql.conf"
  follow 2
  wait_for_replica 2 yes
  start_node 2
  await_replica_streaming 1
  proxy_config
  start_proxy
  await_proxy 1
  write_env
  trap - ERR
  cat "$dir/replica.env"
}

require_set() {
  [ -f "$dir/replica.env" ] || { echo "no replica set in $dir" >&2; exit 1; }
  [ -f "$dir/async" ] && async=1
  return 0
}

# The running node that is not in recovery, or nothing.
primary() {
  local n
  for n in 1 2; do alive "$n" && ! in_recovery "$n" && echo "$n" && return; done
  return 0
}

stop_node() {
  local n=$1
  alive "$n" || return 0
  pg pg_ctl stop -w -t 60 -m "${2:-fast}" -D "$(data_of "$n")" >/dev/null || {
    kill -9 "$(postmaster_pid "$n")" 2>/dev/null || true
  }
}

kill_primary() {
  local n pid
  n=$(primary)
  [ -n "$n" ] || { echo "no primary is running" >&2; exit 1; }
  pid=$(postmaster_pid "$n")
  kill -9 "$pid"
  while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
  echo "$n"
}

# The running replica becomes the primary, alone until the other node rejoins.
promote() {
  local n
  for n in 1 2; do
    if alive "$n" && in_recovery "$n"; then
      alive "$(other "$n")" && ! in_recovery "$(other "$n")" && {
        echo "node $(other "$n") is still the primary; 'switchover' hands over from a running one" >&2
        exit 1
      }
      wait_for_replica "$n" no
      pg pg_ctl promote -w -t 60 -D "$(data_of "$n")" >/dev/null
      # When the new primary took writes, for whoever measures the failover (the test).
      date +%s%3N >"$dir/promoted_at"
      echo "$n"
      return
    fi
  done
  echo "no running replica to promote" >&2
  exit 1
}

# The node that is down is rewound to where the primary's history forked from its own (what a
# crashed primary wrote past it is discarded) and started as the primary's replica.
rejoin() {
  local n p
  p=$(primary)
  [ -n "$p" ] || { echo "no primary to rejoin" >&2; exit 1; }
  n=$(other "$p")
  alive "$n" && { echo "node $n is running; stop it first" >&2; exit 1; }
  rm -f "$dir/node$n/follow.conf"
  # pg_rewind reads the source's timeline from its control file, which a promotion updates only at
  # its next checkpoint.
  sql "$p" CHECKPOINT
  pg pg_rewind -D "$(data_of "$n")" --source-server="host=127.0.0.1 port=$(port_of "$p") user=postgres dbname=postgres" \
    >>"$dir/node$n/rewind.log" 2>&1 || { echo "pg_rewind of node $n failed; see $dir/node$n/rewind.log" >&2; exit 1; }
  # pg_rewind copied the primary's configuration files over this node's.
  echo "include '$dir/node$n/postgresql.conf'" >"$(data_of "$n")/postgresql.conf"
  follow "$n"
  wait_for_replica "$n" no
  start_node "$n"
  await_replica_streaming "$p"
  wait_for_replica "$p" yes
  echo "$n"
}

# Planned, as the operator's switchover: the primary stops cleanly (its last WAL reaches the
# replica first), the replica is promoted, the old primary comes back as its replica.
switchover() {
  local n r lsn
  n=$(primary)
  [ -n "$n" ] || { echo "no primary is running" >&2; exit 1; }
  r=$(other "$n")
  await_replica_streaming "$n"
  stop_node "$n" fast
  # Every WAL record up to the old primary's shutdown checkpoint replayed before the promotion.
  lsn=$(pg pg_controldata -D "$(data_of "$n")" | awk -F': *' '/^Latest checkpoint location/ { print $2 }')
  for _ in $(seq 1 300); do
    [ "$(sql "$r" "SELECT pg_last_wal_replay_lsn() >= '$lsn'::pg_lsn")" = t ] && break
    sleep 0.1
  done
  [ "$(sql "$r" "SELECT pg_last_wal_replay_lsn() >= '$lsn'::pg_lsn")" = t ] || {
    echo "node $r did not replay node $n's WAL up to its shutdown ($lsn); node $n is left stopped" >&2
    exit 1
  }
  promote >/dev/null
  rejoin >/dev/null
  other "$n"
}

stop_all() {
  [ -f "$dir/haproxy.pid" ] && kill "$(cat "$dir/haproxy.pid")" 2>/dev/null || true
  for n in 1 2; do stop_node "$n" immediate & done
  wait
}

down() {
  [ -d "$dir" ] || return 0
  [ -f "$dir/replica.env" ] || [ -f "$dir/node1/port" ] || { echo "$dir holds no replica set; not removing it" >&2; exit 1; }
  stop_all
  rm -rf "$dir"
}

case "$command" in
  up) up ;;
  down) down ;;
  env) require_set; cat "$dir/replica.env" ;;
  primary) require_set; primary ;;
  kill-primary) require_set; kill_primary ;;
  promote) require_set; promote ;;
  rejoin) require_set; rejoin ;;
  switchover) require_set; switchover ;;
  stop) require_set; stop_node "$node_arg" fast ;;
  start) require_set; alive "$node_arg" || start_node "$node_arg" ;;
  *) usage ;;
esac
