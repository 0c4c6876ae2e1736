# Sourced by postgres-replica.sh: the TCP proxy (HAProxy) in front of its two nodes that follows the
# primary, as CloudNativePG's `-rw` Service does. Reads the caller's $dir and $haproxy.
proxy_config() {
  # The check speaks Postgres' wire protocol (trust, as postgres) and asks pg_is_in_recovery(): a
  # server passes only while it answers 'f', as the operator's -rw Service selects only the primary.
  # A replica ends the check's session itself, so that the check fails at once rather than at its
  # timeout (haproxy waits for more data while the expected bytes have not come).
  local startup query
  startup=$(wire_startup)
  query=$(wire_query 'SELECT CASE WHEN pg_is_in_recovery() THEN pg_terminate_backend(pg_backend_pid()) ELSE false END')
  cat >"$dir/haproxy.cfg" <<CONF
global
  stats socket ipv4@127.0.0.1:$(cat "$dir/stats_port") level admin
  log stdout format raw local0 info
defaults
  mode tcp
  log global
  option tcplog
  timeout connect 2s
  # The services' pools keep their connections open for hours.
  timeout client 12h
  timeout server 12h
  timeout check 1s
frontend rw
  bind 127.0.0.1:$(cat "$dir/proxy_port")
  default_backend primary
backend primary
  option tcp-check
  tcp-check connect
  tcp-check send-binary $startup
  tcp-check expect binary 5a0000000549
  tcp-check send-binary $query
  # A DataRow of one column, one byte: 'f' (false).
  tcp-check expect binary 440000000b00010000000166
  tcp-check send-binary 5800000004
  # A server that stops being the primary has its sessions cut at once, as its pod's would be.
  default-server inter 300ms fall 1 rise 1 on-marked-down shutdown-sessions
  server node1 127.0.0.1:$(port_of 1) check
  server node2 127.0.0.1:$(port_of 2) check
CONF
}

hex() { printf '%s' "$1" | od -An -tx1 | tr -d ' \n'; }
# StartupMessage, protocol 3.0: user, database, application_name and options, each a NUL-ended key
# and value. The options keep the checks, several a second, out of the servers' logs.
wire_startup() {
  local body
  body=00030000$(hex user)00$(hex postgres)00$(hex database)00$(hex postgres)00
  body+=$(hex application_name)00$(hex trips-proxy-check)00
  body+=$(hex options)00$(hex '-c log_min_messages=panic')0000
  printf '%08x%s' $((${#body} / 2 + 4)) "$body"
}
# Query ('Q'): the text, NUL-ended.
wire_query() {
  local body
  body=$(hex "$1")00
  printf '51%08x%s' $((${#body} / 2 + 4)) "$body"
}

start_proxy() {
  (
    for fd in $(ls /proc/$BASHPID/fd); do [ "$fd" -gt 2 ] && eval "exec $fd>&-"; done
    setsid "$haproxy" -db -f "$dir/haproxy.cfg" </dev/null >>"$dir/haproxy.log" 2>&1 &
    echo $! >"$dir/haproxy.pid"
  )
}

database_url() { echo "postgres://postgres@127.0.0.1:$(cat "$dir/proxy_port")/postgres"; }

# The node the proxy routes to, from its stats socket ('' while it routes nowhere).
proxy_target() {
  (
    exec 3<>"/dev/tcp/127.0.0.1/$(cat "$dir/stats_port")" || exit 0
    echo "show servers state primary" >&3
    awk '$4 ~ /^node[12]$/ && $6 == 2 { sub("node", "", $4); print $4 }' <&3
  ) 2>/dev/null
}

await_proxy() {
  for _ in $(seq 1 100); do
    [ "$(proxy_target)" = "$1" ] && return 0
    sleep 0.1
  done
  echo "the proxy does not route to node $1; see $dir/haproxy.log" >&2
  return 1
}
