#!/usr/bin/env bash
# A three-node RabbitMQ cluster on this machine, beside (never instead of) the machine's own broker,
# for the failover test and for trying the services against a cluster by hand; with --nodes 1, the
# one node of its own that a test stops and starts (stop_app, start_app) instead of the machine's.
#
#   bash scripts/rabbitmq-cluster.sh up          [--dir DIR] [--name NAME] [--nodes N]  start, cluster, print AMQP_URL
#   bash scripts/rabbitmq-cluster.sh down        [--dir DIR]                            stop every node, remove DIR
#   bash scripts/rabbitmq-cluster.sh kill N      [--dir DIR]                            kill -9 node N (1-3): a crash
#   bash scripts/rabbitmq-cluster.sh start N     [--dir DIR]                            start node N again (same data)
#   bash scripts/rabbitmq-cluster.sh stop N      [--dir DIR]                            stop node N gracefully
#   bash scripts/rabbitmq-cluster.sh ctl N ARGS… [--dir DIR]                            rabbitmqctl against node N
#   bash scripts/rabbitmq-cluster.sh env         [--dir DIR]                            print the cluster's settings
#
# DIR (default $TMPDIR/trips-rabbitmq-cluster, or RABBITMQ_CLUSTER_DIR) holds everything: each node's
# data, logs and config, a HOME with the cluster's own Erlang cookie, and cluster.env. NAME (default
# rabbit-c, or RABBITMQ_CLUSTER_NAME) makes the node names NAME1@localhost … NAME3@localhost; two
# clusters at once need two DIRs and two NAMEs. N (1 to 3, default 3) is how many nodes. AMQP and
# distribution ports are free ones, taken at `up` and kept for the nodes' restarts.
#
# What keeps the machine's own node (rabbit@localhost on 5672) out of reach: the nodes read their own
# rabbitmq-env.conf and rabbitmq.conf (not /etc/rabbitmq's), their own data directories, their own
# cookie (so even a mistyped node name cannot reach the machine's node), and every rabbitmqctl call
# names its node with -n.
set -Eeuo pipefail

usage() { sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }

command=${1:-}
[ -n "$command" ] || usage
shift
node_arg=
case "$command" in
  kill | start | stop | ctl) node_arg=${1:-}; [[ "$node_arg" =~ ^[123]$ ]] || usage; shift ;;
esac
dir=${RABBITMQ_CLUSTER_DIR:-${TMPDIR:-/tmp}/trips-rabbitmq-cluster}
name=${RABBITMQ_CLUSTER_NAME:-rabbit-c}
nodes=3
ctl_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --dir) dir=$2; shift 2 ;;
    --name) name=$2; shift 2 ;;
    --nodes) nodes=$2; shift 2 ;;
    *) [ "$command" = ctl ] || usage; ctl_args+=("$1"); shift ;;
  esac
done
[[ "$name" =~ ^[A-Za-z][A-Za-z0-9_-]*$ ]] || { echo "bad --name '$name': letters, digits, - and _" >&2; exit 2; }
[[ "$nodes" =~ ^[123]$ ]] || { echo "bad --nodes '$nodes': 1, 2 or 3" >&2; exit 2; }
# After `up`, the cluster's name and size are the ones it was set up with.
[ "$command" = up ] || [ ! -f "$dir/name" ] || name=$(cat "$dir/name")
[ "$command" = up ] || [ ! -f "$dir/nodes" ] || nodes=$(cat "$dir/nodes")
[ -z "$node_arg" ] || [ "$node_arg" -le "$nodes" ] || { echo "no node $node_arg: the cluster has $nodes" >&2; exit 2; }

# The installed RabbitMQ's own scripts. Debian's /usr/sbin wrappers switch to the rabbitmq user and
# its cookie, which would reach the machine's node; the scripts underneath take our environment.
bin=${RABBITMQ_BIN:-}
if [ -z "$bin" ]; then
  if [ -x /usr/lib/rabbitmq/bin/rabbitmq-server ]; then bin=/usr/lib/rabbitmq/bin
  else bin=$(dirname "$(readlink -f "$(command -v rabbitmq-server)")"); fi
fi

node_name() { echo "$name$1@localhost"; }

# The environment of node N's server and of rabbitmqctl against it.
node_env() {
  local n=$1 home="$dir/home" base="$dir/node$1"
  export HOME="$home"
  export RABBITMQ_CONF_ENV_FILE="$dir/rabbitmq-env.conf"
  export RABBITMQ_NODENAME
  RABBITMQ_NODENAME=$(node_name "$n")
  export RABBITMQ_CONFIG_FILE="$base/rabbitmq.conf"
  export RABBITMQ_ADVANCED_CONFIG_FILE="$base/advanced.config"
  export RABBITMQ_ENABLED_PLUGINS_FILE="$dir/enabled_plugins"
  export RABBITMQ_MNESIA_BASE="$base/data"
  export RABBITMQ_LOG_BASE="$base/log"
  export RABBITMQ_LOGS="$base/log/node.log"
  export RABBITMQ_PID_FILE="$base/pid"
  export RABBITMQ_PLUGINS_EXPAND_DIR="$base/plugins-expand"
  export RABBITMQ_DIST_PORT
  RABBITMQ_DIST_PORT=$(cat "$base/dist_port")
  export ERL_EPMD_ADDRESS=127.0.0.1
  export RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1}"
  export RABBITMQ_CTL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1}"
}

ctl() { (node_env "$1" && shift && "$bin/rabbitmqctl" -q -n "$RABBITMQ_NODENAME" "$@"); }

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

# Starts node N detached, with no descriptor of ours open: a node left running must not hold, say,
# the flock of whoever ran this script.
start_node() {
  local n=$1
  (
    node_env "$n"
    rm -f "$RABBITMQ_PID_FILE"
    for fd in $(ls /proc/$BASHPID/fd); do [ "$fd" -gt 2 ] && eval "exec $fd>&-"; done
    setsid "$bin/rabbitmq-server" -detached </dev/null >>"$dir/node$n/log/server.out" 2>&1
  )
}

await_node() {
  local n=$1 pid_file="$dir/node$1/pid"
  for _ in $(seq 1 600); do [ -s "$pid_file" ] && break; sleep 0.1; done
  [ -s "$pid_file" ] || { echo "node $n wrote no pid file; see $dir/node$n/log" >&2; return 1; }
  ctl "$n" wait --timeout 120 "$pid_file" >/dev/null || {
    echo "node $n did not start; see $dir/node$n/log" >&2
    return 1
  }
}

amqp_urls() {
  local urls=() n
  for n in $(seq 1 "$nodes"); do urls+=("amqp://guest:guest@127.0.0.1:$(cat "$dir/node$n/amqp_port")"); done
  (IFS=,; echo "${urls[*]}")
}

write_env() {
  {
    echo "AMQP_URL=$(amqp_urls)"
    echo "RABBITMQ_CLUSTER_NODES=$(for n in $(seq 1 "$nodes"); do node_name "$n"; done | paste -sd,)"
    echo "RABBITMQ_CLUSTER_DIR=$dir"
  } >"$dir/cluster.env"
}

up() {
  if [ -f "$dir/cluster.env" ]; then
    echo "a cluster is already set up in $dir; run 'down' first" >&2
    exit 1
  fi
  mkdir -p "$dir/home"
  echo "$name" >"$dir/name"
  echo "$nodes" >"$dir/nodes"
  # The cluster's own cookie: nodes of one cluster must share one, and only they know it.
  head -c 30 /dev/urandom | base64 | tr -dc 'A-Za-z0-9' | head -c 20 >"$dir/home/.erlang.cookie"
  chmod 400 "$dir/home/.erlang.cookie"
  : >"$dir/rabbitmq-env.conf"
  echo '[].' >"$dir/enabled_plugins"
  for n in $(seq 1 "$nodes"); do
    local base="$dir/node$n"
    mkdir -p "$base/data" "$base/log"
    free_port >"$base/amqp_port"
    free_port >"$base/dist_port"
    echo '[].' >"$base/advanced.config"
    cat >"$base/rabbitmq.conf" <<CONF
listeners.tcp.1 = 127.0.0.1:$(cat "$base/amqp_port")
cluster_name = $name
# Each quorum queue's leader on the node with the fewest leaders (3.10's default is the node the
# declaring client is connected to): the queues' work is spread across the three nodes.
queue_leader_locator = balanced
log.console = false
# Debug for RabbitMQ's own messages and Ra (the quorum queues' Raft: elections, catching up, each
# channel's 'Detected QQ leader change'), info for connections and channels: a failed failover test
# keeps these logs, to read which node missed what (docs/design/rabbitmq.md, "The evidence").
log.file.level = debug
log.default.level = info
log.connection.level = info
log.channel.level = info
log.queue.level = info
log.mirroring.level = info
log.federation.level = info
log.upgrade.level = info
log.ra.level = debug
CONF
    [ "$n" = 1 ] || cat >>"$base/rabbitmq.conf" <<CONF
cluster_formation.peer_discovery_backend = classic_config
cluster_formation.classic_config.nodes.1 = $(node_name 1)
CONF
  done
  write_env
  # A cluster half up is no use to anyone, and its nodes would run on unseen.
  trap '[ "$BASHPID" = $$ ] || exit; trap - ERR; echo "up failed; nodes stopped, logs kept in $dir/node*/log ('"'"'down'"'"' removes them)" >&2; stop_all' ERR
  # Node 1 first; 2 and 3 then find it through their peer list and join it as they boot (a fresh
  # node joins the first listed peer that answers). Booting all three at once could leave each on
  # its own, as none would find another up yet.
  start_node 1
  await_node 1
  for n in $(seq 2 "$nodes"); do start_node "$n"; done
  for n in $(seq 2 "$nodes"); do await_node "$n"; done
  ctl 1 await_online_nodes "$nodes" --timeout 60 >/dev/null
  trap - ERR
  cat "$dir/cluster.env"
}

require_cluster() {
  [ -f "$dir/cluster.env" ] || { echo "no cluster set up in $dir" >&2; exit 1; }
}

node_pid() { cat "$dir/node$1/pid" 2>/dev/null || true; }
alive() { local pid; pid=$(node_pid "$1"); [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; }

stop_node() {
  local n=$1 pid
  alive "$n" || return 0
  pid=$(node_pid "$n")
  ctl "$n" stop "$dir/node$n/pid" >/dev/null 2>&1 || kill -9 "$pid" 2>/dev/null || true
  for _ in $(seq 1 300); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  kill -9 "$pid" 2>/dev/null || true
}

down() {
  [ -d "$dir" ] || return 0
  [ -f "$dir/cluster.env" ] || { echo "$dir holds no cluster; not removing it" >&2; exit 1; }
  stop_all
  rm -rf "$dir"
}

stop_all() {
  for n in $(seq 1 "$nodes"); do stop_node "$n" & done
  wait
}

case "$command" in
  up) up ;;
  down) down ;;
  env) require_cluster; cat "$dir/cluster.env" ;;
  kill)
    require_cluster
    alive "$node_arg" || { echo "node $node_arg is not running" >&2; exit 1; }
    pid=$(node_pid "$node_arg")
    kill -9 "$pid"
    while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
    ;;
  start) require_cluster; alive "$node_arg" || { start_node "$node_arg" && await_node "$node_arg"; } ;;
  stop) require_cluster; stop_node "$node_arg" ;;
  ctl) require_cluster; ctl "$node_arg" "${ctl_args[@]}" ;;
  *) usage ;;
esac
