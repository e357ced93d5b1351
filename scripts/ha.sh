#!/usr/bin/env bash
# A replicated PostgreSQL ($PG_MAJOR, lib.sh) under pg_auto_failover: a monitor, a primary and one
# hot standby, both with chumbo preloaded. `CHUMBO_HA=1 make run` and tests/ha use it.
#   scripts/ha.sh start|stop|status|fresh|primary-port|standby-port
#   CHUMBO_CLUSTER=dev   (default) ports CHUMBO_HA_PORT (monitor, default 54350), +1 and +2 (nodes)
#   CHUMBO_CLUSTER=test  ports CHUMBO_HA_TEST_PORT (default 54360), +1, +2; `fresh` each run
# Everything runs as user postgres (pg_autoctl refuses root), bound to 127.0.0.1, trust auth (dev
# only), with RUST_BACKTRACE unset for the servers. pg_autoctl's config and state files live under
# the cluster's own directory (XDG_*), so two checkouts or a dev and a test set never share them.
# Quirks handled here (docs/scaling.md): pg_autoctl writes `shared_preload_libraries =
# 'pg_stat_statements'` (nodes) in an include at line 1 of postgresql.conf, so chumbo is appended
# after it, before the first `pg_autoctl run`; it sizes shared_buffers at 25% of RAM on every node
# (128MB here); pg_hba.conf is per node, so each node gets the line the edge's login needs.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

NAME="${CHUMBO_CLUSTER:-dev}"
case "$NAME" in
  dev)  P0="${CHUMBO_HA_PORT:-54350}" ;;
  test) P0="${CHUMBO_HA_TEST_PORT:-54360}" ;;
  *)    die "CHUMBO_CLUSTER must be dev or test" ;;
esac
DIR="$BASE/ha-$NAME"
MON_PORT="$P0" N1_PORT="$((P0 + 1))" N2_PORT="$((P0 + 2))"
PIDS="$STATE/ha-$NAME.pids"           # pg_autoctl service pids, one per line
export XDG_CONFIG_HOME="$DIR/xdg/config" XDG_DATA_HOME="$DIR/xdg/data" XDG_RUNTIME_DIR="$DIR/xdg/run"
MONITOR_URL="postgres://autoctl_node@127.0.0.1:$MON_PORT/pg_auto_failover?sslmode=disable"

# Run as postgres from a directory it can read, without RUST_BACKTRACE (every Rust ERROR's DETAIL
# would carry a backtrace), with the private PostgreSQL's binaries first on PATH, and in a UTF-8
# locale: pg_autoctl's initdb takes the environment's, and in the C locale it would make SQL_ASCII
# databases, where chumbo is not installed (sql/bootstrap.sql).
as_pg() {
  (cd "$DIR" && env -u RUST_BACKTRACE runuser -u postgres -- env LC_ALL=C.UTF-8 PATH="$PG_BIN:$PATH" \
     XDG_CONFIG_HOME="$XDG_CONFIG_HOME" XDG_DATA_HOME="$XDG_DATA_HOME" XDG_RUNTIME_DIR="$XDG_RUNTIME_DIR" "$@")
}
actl() { as_pg pg_autoctl "$@"; }

# run_node NAME: `pg_autoctl run` for one data dir in the background, its pid recorded.
run_node() {
  local node="$1" pid=""
  as_pg setsid nohup pg_autoctl run --pgdata "$DIR/$node" >>"$DIR/$node.log" 2>&1 </dev/null &
  # The service's own pid (not the runuser wrapper's): the one a drill kills to lose the node.
  for _ in $(seq 50); do
    pid="$(pgrep -n -f -x "pg_autoctl run --pgdata $DIR/$node" || true)"
    [[ -n "$pid" ]] && break
    sleep 0.1
  done
  echo "${pid:-$!} $node" >>"$PIDS"
}

# configure NODE PORT: chumbo preloaded, small shared_buffers, the edge's pg_hba line, 127.0.0.1.
configure() {
  local data="$DIR/$1"
  # After pg_autoctl's include (line 1), so these win.
  cat >>"$data/postgresql.conf" <<CONF
# chumbo (scripts/ha.sh): after pg_auto_failover's include on line 1, so these win
shared_preload_libraries = 'pg_stat_statements,chumbo'
shared_buffers = '128MB'
effective_cache_size = '1GB'
maintenance_work_mem = '64MB'
listen_addresses = '127.0.0.1'
CONF
  grep -q '^# chumbo edge' "$data/pg_hba.conf" \
    || printf '# chumbo edge (scripts/ha.sh): dev only\nhost all all 127.0.0.1/32 trust\n' >>"$data/pg_hba.conf"
}

wait_state() {  # wait_state SECONDS: until the monitor shows one primary and one secondary
  local n="$1" out=""
  for _ in $(seq $((n * 5))); do
    out="$(psql -X -At -h 127.0.0.1 -p "$MON_PORT" -U autoctl_node -d pg_auto_failover \
      -c "select string_agg(reportedstate::text || '/' || goalstate::text, ' ' order by nodeid) from pgautofailover.node" 2>/dev/null || true)"
    if [[ "$out" == *"primary/primary"* && "$out" == *"secondary/secondary"* ]] \
       && pg_isready -q -h 127.0.0.1 -p "$N1_PORT" -t 1 && pg_isready -q -h 127.0.0.1 -p "$N2_PORT" -t 1; then
      return 0
    fi
    sleep 0.2
  done
  die "ha: no primary + secondary after ${n}s (monitor says: ${out:-nothing}); logs in $DIR/*.log"
}

# The monitor's extension must be in the PostgreSQL the clusters run: a private copy
# (CHUMBO_PG_ROOT) made before postgresql-$PG_MAJOR-auto-failover was installed lacks it.
need_autofailover() {
  command -v pg_autoctl >/dev/null || die "ha: pg_autoctl not found (scripts/setup.sh installs postgresql-$PG_MAJOR-auto-failover)"
  [[ -f "$PG_PKGLIBDIR/pgautofailover.so" ]] && return 0
  local sys_lib="/usr/lib/postgresql/$PG_MAJOR/lib" sys_ext="/usr/share/postgresql/$PG_MAJOR/extension"
  [[ -f "$sys_lib/pgautofailover.so" ]] || die "ha: pgautofailover.so not found (install postgresql-$PG_MAJOR-auto-failover)"
  log "ha: copying pg_auto_failover's extension into $PG_PKGLIBDIR"
  cp "$sys_lib/pgautofailover.so" "$PG_PKGLIBDIR/"
  cp "$sys_ext"/pgautofailover* "$PG_SHAREDIR/extension/"
}

start() {
  need_autofailover
  mkdir -p "$DIR" && chown postgres: "$BASE" "$DIR" && chmod 700 "$DIR"
  if [[ -f "$PIDS" ]] && status >/dev/null 2>&1; then log "ha $NAME already running"; return 0; fi
  stop_services
  for p in "$MON_PORT" "$N1_PORT" "$N2_PORT"; do
    pg_isready -q -h 127.0.0.1 -p "$p" -t 1 && die "port $p is already served; stop it or set CHUMBO_HA_PORT/CHUMBO_HA_TEST_PORT"
  done
  : >"$PIDS"
  local t0=$SECONDS
  if [[ ! -f "$DIR/monitor/PG_VERSION" ]]; then
    log "ha: create monitor on 127.0.0.1:$MON_PORT"
    actl create monitor --pgdata "$DIR/monitor" --pgport "$MON_PORT" --hostname 127.0.0.1 \
      --auth trust --no-ssl --pgctl "$PG_BIN/pg_ctl" >>"$DIR/monitor.log" 2>&1
    actl config set --pgdata "$DIR/monitor" postgresql.listen_addresses 127.0.0.1 >/dev/null
    printf "shared_buffers = '64MB'\neffective_cache_size = '512MB'\nmaintenance_work_mem = '64MB'\nlisten_addresses = '127.0.0.1'\n" \
      >>"$DIR/monitor/postgresql.conf"
  fi
  run_node monitor
  for _ in $(seq 150); do pg_isready -q -h 127.0.0.1 -p "$MON_PORT" -t 1 && break; sleep 0.2; done
  local node port
  for node in node1 node2; do
    port="$N1_PORT"; [[ "$node" == node2 ]] && port="$N2_PORT"
    if [[ ! -f "$DIR/$node/PG_VERSION" ]]; then
      log "ha: create $node on 127.0.0.1:$port"
      actl create postgres --pgdata "$DIR/$node" --pgport "$port" --listen 127.0.0.1 \
        --hostname 127.0.0.1 --name "$node" --monitor "$MONITOR_URL" --auth trust --no-ssl \
        --pgctl "$PG_BIN/pg_ctl" --username postgres --dbname postgres >>"$DIR/$node.log" 2>&1
      configure "$node"
    fi
    run_node "$node"
    # the second node clones the first: let the first be primary ("single") before it registers
    [[ "$node" == node1 ]] && for _ in $(seq 150); do
      pg_isready -q -h 127.0.0.1 -p "$N1_PORT" -t 1 && break; sleep 0.2; done
  done
  wait_state 90
  log "ha $NAME up in $((SECONDS - t0))s: monitor $MON_PORT, nodes $N1_PORT $N2_PORT (primary $(primary_port))"
}

# The node ports by role, from the monitor.
node_port() {
  psql -X -At -h 127.0.0.1 -p "$MON_PORT" -U autoctl_node -d pg_auto_failover \
    -c "select nodeport from pgautofailover.node where reportedstate = '$1' order by nodeid limit 1"
}
primary_port() { node_port primary; }
standby_port() { node_port secondary; }

stop_services() {
  [[ -f "$PIDS" ]] || return 0
  local pid node
  # The monitor first: stopping the primary's keeper while the monitor runs is a failover.
  actl stop --pgdata "$DIR/monitor" --fast >/dev/null 2>&1 || true
  while read -r pid node; do
    [[ "$node" == monitor ]] && continue
    if [[ -d "$DIR/$node" ]]; then actl stop --pgdata "$DIR/$node" --fast >/dev/null 2>&1 || true; fi
  done <"$PIDS"
  while read -r pid node; do
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then warn "ha: $node service pid $pid did not stop; SIGKILL to its group"; kill -9 -- "-$pid" || true; fi
  done <"$PIDS"
  # a postmaster the service left behind (it was SIGKILLed, say)
  for node in node1 node2 monitor; do
    if [[ -f "$DIR/$node/postmaster.pid" ]]; then
      pid="$(head -n 1 "$DIR/$node/postmaster.pid")"
      if [[ "$(ps -o comm= -p "$pid" 2>/dev/null)" == postgres ]]; then
        # immediate when a fast stop hangs (a backend that ignores SIGTERM must not hang make test)
        as_pg "$PG_BIN/pg_ctl" -D "$DIR/$node" -m fast -w -t 15 stop >/dev/null 2>&1 \
          || as_pg "$PG_BIN/pg_ctl" -D "$DIR/$node" -m immediate -w stop >/dev/null 2>&1 || true
      fi
    fi
  done
  rm -f "$PIDS"
}

status() {
  [[ -f "$PIDS" ]] || { echo "ha $NAME: stopped"; return 3; }
  local pid node ok=0
  while read -r pid node; do kill -0 "$pid" 2>/dev/null || { echo "ha $NAME: $node service down"; ok=3; }; done <"$PIDS"
  ((ok == 0)) || return "$ok"
  echo "ha $NAME: running; monitor 127.0.0.1:$MON_PORT, primary $(primary_port), standby $(standby_port)"
}

case "${1:-}" in
  start)  start ;;
  stop)   stop_services ;;
  status) status ;;
  fresh)  stop_services; rm -rf "$DIR"; start ;;
  primary-port) primary_port ;;
  standby-port) standby_port ;;
  monitor-url)  echo "$MONITOR_URL" ;;
  hosts)  echo "127.0.0.1:$N1_PORT,127.0.0.1:$N2_PORT" ;;
  dir)    echo "$DIR" ;;
  *)      echo "usage: $0 start|stop|status|fresh|primary-port|standby-port|monitor-url|dir" >&2; exit 2 ;;
esac
