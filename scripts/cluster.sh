#!/usr/bin/env bash
# Throwaway PostgreSQL ($PG_MAJOR, lib.sh) cluster: scripts/cluster.sh start|stop|status|fresh
#   CHUMBO_CLUSTER=dev  (default) port $CHUMBO_PG_PORT (54329): the `make run` cluster, data kept
#   CHUMBO_CLUSTER=test           port $CHUMBO_TEST_PG_PORT (default 54339; `make test` picks a free
#                                 one and exports it), `fresh` each run
# Postgres refuses to run as root, so everything runs as user postgres, with the data dir outside
# the repo, listening on 127.0.0.1 only, trust auth (dev only). RUST_BACKTRACE is unset for the
# server, otherwise every Rust-raised ERROR carries a backtrace in its DETAIL.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

NAME="${CHUMBO_CLUSTER:-dev}"
case "$NAME" in
  dev)  PORT="$DEV_PORT" ;;
  test) PORT="$TEST_PORT" ;;
  *)    die "CHUMBO_CLUSTER must be dev or test" ;;
esac
DIR="$BASE/$NAME"            # holds data/, server.log and the unix socket
DATA="$DIR/data"
PIDFILE="$STATE/pg-$NAME$PG_SUFFIX.pid"   # PG_SUFFIX: another major (lib.sh) has clusters of its own

# Run a postgres binary as postgres from a directory it can read (the checkout may be 0700).
as_pg() { (cd "$DIR" && env -u RUST_BACKTRACE runuser -u postgres -- "$@"); }
running() { [[ -f "$DATA/PG_VERSION" ]] && as_pg "$PG_BIN/pg_ctl" -D "$DATA" status >/dev/null 2>&1; }

start() {
  mkdir -p "$DIR" && chown postgres: "$BASE" "$DIR" && chmod 700 "$DIR"
  if running; then log "$NAME cluster already running on port $PORT"; record_pid; return; fi
  # Something else on our port (another checkout's cluster, say) would make tests talk to it.
  if pg_isready -q -h 127.0.0.1 -p "$PORT" -t 2; then
    die "port $PORT is already served by another server; stop it or set CHUMBO_PG_PORT/CHUMBO_TEST_PG_PORT"
  fi
  if [[ ! -f "$DATA/PG_VERSION" ]]; then
    log "initdb $DATA"
    as_pg "$PG_BIN/initdb" -D "$DATA" -U postgres --auth=trust --locale=C.UTF-8 >/dev/null
  fi
  log "start $NAME cluster on 127.0.0.1:$PORT (log: $DIR/server.log)"
  if ! as_pg "$PG_BIN/pg_ctl" -D "$DATA" -l "$DIR/server.log" -w -t 60 \
       -o "-c listen_addresses=127.0.0.1 -c port=$PORT -c unix_socket_directories=$DIR" start >/dev/null; then
    tail -n 30 "$DIR/server.log" >&2 || true
    die "could not start the $NAME cluster"
  fi
  record_pid
}

record_pid() { head -n 1 "$DATA/postmaster.pid" > "$PIDFILE"; }

stop() {
  if running; then
    log "stop $NAME cluster (port $PORT)"
    as_pg "$PG_BIN/pg_ctl" -D "$DATA" -m fast -w stop >/dev/null
  elif [[ -f "$PIDFILE" ]]; then
    # Data dir gone or unreadable but we recorded a postmaster: stop it if it still is one.
    pid="$(cat "$PIDFILE")"
    if [[ "$(ps -o comm= -p "$pid" 2>/dev/null)" == postgres ]]; then
      log "stop $NAME postmaster pid $pid"; kill -INT "$pid"
    fi
  fi
  rm -f "$PIDFILE"
}

status() {
  if running; then echo "$NAME cluster: running, pid $(head -n 1 "$DATA/postmaster.pid"), 127.0.0.1:$PORT, data $DATA"
  else echo "$NAME cluster: stopped (data $DATA)"; return 3; fi
}

case "${1:-}" in
  start)  start ;;
  stop)   stop ;;
  status) status ;;
  fresh)  stop; rm -rf "$DATA"; start ;;     # for tests: a new, empty cluster
  *)      echo "usage: $0 start|stop|status|fresh" >&2; exit 2 ;;
esac
