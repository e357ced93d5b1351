# shellcheck shell=bash
# A fresh PostgreSQL cluster of a suite's own, started with shared_preload_libraries = 'chumbo'
# (what the audit queue and the tasks launcher need), sourced after scripts/lib.sh:
#   preloaded_cluster NAME PORT   initdb in $BASE/NAME/data, start on 127.0.0.1:PORT (log: $DIR/server.log)
# and then, for the suite: DIR, DATA, as_pg CMD..., ctl PG_CTL_ARGS..., start, stop_if_running.
# The suite stops it (stop_if_running in its EXIT trap).
DIR='' DATA='' PORT=''
preloaded_cluster() {
  PORT="$2" DIR="$BASE/$1" DATA="$BASE/$1/data"
  mkdir -p "$DIR" && chown postgres: "$BASE" "$DIR" && chmod 700 "$DIR"
  stop_if_running
  rm -rf "$DATA"
  as_pg "$PG_BIN/initdb" -D "$DATA" -U postgres --auth=trust --locale=C.UTF-8 >/dev/null
  log "$1 cluster on 127.0.0.1:$PORT, shared_preload_libraries = chumbo"
  start
}
as_pg() { (cd "$DIR" && env -u RUST_BACKTRACE runuser -u postgres -- "$@"); }
ctl() { as_pg "$PG_BIN/pg_ctl" -D "$DATA" -l "$DIR/server.log" -w -t 60 "$@" >/dev/null; }
start() { ctl -o "-c listen_addresses=127.0.0.1 -c port=$PORT -c unix_socket_directories=$DIR -c shared_preload_libraries=chumbo" start; }
stop_if_running() { if [[ -f "$DATA/postmaster.pid" ]]; then ctl -m immediate stop || true; fi; }
