#!/usr/bin/env bash
# The package suite: install chumbo from the `make package` tarball alone, start a fresh cluster
# on that install, run the README quickstart against it, then the upgrade test (every kept release
# -> current).
#
# Where it installs: by default into a private copy of the system PostgreSQL $PG_MAJOR
# ($CHUMBO_PKG_ROOT, default /var/tmp/chumbo-<hash>/pkgroot/usr/{lib,share}/postgresql/$PG_MAJOR) from
# which every chumbo file has been removed first, so only the tarball can provide the extension,
# and the shared system install is never touched. PostgreSQL finds its share and lib directories
# relative to its binaries, so a server started from the copy loads only the copy's files.
# CHUMBO_PKG_ROOT=/ extracts over / instead (what a user does; it replaces the installed build).
# Env: CHUMBO_PKG_TARBALL (default: the newest target/release/chumbo-*-pg$PG_MAJOR-*.tar.gz),
#      CHUMBO_PKG_PG_PORT (default: a free port).
# Needs `make package` first (make test runs this after its install stage, so the build is warm).
set -euo pipefail
source "$(dirname "$0")/../../scripts/lib.sh"
cd "$ROOT"

# shellcheck disable=SC2012  # the newest by mtime; the names are make package's own (no odd characters)
TARBALL="${CHUMBO_PKG_TARBALL:-$(ls -t target/release/chumbo-*-pg"$PG_MAJOR"-*.tar.gz 2>/dev/null | head -n 1)}"
[[ -n "$TARBALL" && -s "$TARBALL" ]] || die "package: no tarball (run make package first)"
PKG_ROOT="${CHUMBO_PKG_ROOT:-$BASE/pkgroot}"
pick_port CHUMBO_PKG_PG_PORT
PORT="$CHUMBO_PKG_PG_PORT"

if [[ "$PKG_ROOT" == / ]]; then
  log "install $TARBALL over /"
  tar -xzf "$TARBALL" -C /
else
  log "install $TARBALL into a private PostgreSQL $PG_MAJOR at $PKG_ROOT (the system install is not touched)"
  rm -rf "$PKG_ROOT" && mkdir -p "$PKG_ROOT/usr/lib/postgresql" "$PKG_ROOT/usr/share/postgresql"
  cp -a /usr/lib/postgresql/"$PG_MAJOR" "$PKG_ROOT/usr/lib/postgresql/"
  cp -a /usr/share/postgresql/"$PG_MAJOR" "$PKG_ROOT/usr/share/postgresql/"
  rm -f "$PKG_ROOT"/usr/lib/postgresql/"$PG_MAJOR"/lib/chumbo.so "$PKG_ROOT"/usr/share/postgresql/"$PG_MAJOR"/extension/chumbo[.-]*
  tar -xzf "$TARBALL" -C "$PKG_ROOT"
fi
BIN="$PKG_ROOT/usr/lib/postgresql/$PG_MAJOR/bin"
[[ "$("$BIN/pg_config" --sharedir)" == "${PKG_ROOT%/}/usr/share/postgresql/$PG_MAJOR" ]] \
  || die "package: $BIN/pg_config does not resolve its share dir under $PKG_ROOT"
log "installed $(tar -tzf "$TARBALL" | grep -c '[^/]$') files: $(tar -tzf "$TARBALL" | grep -o 'chumbo[^/]*$' | tr '\n' ' ')"

# A fresh cluster served by that install, laid out like scripts/cluster.sh (DIR/data,
# DIR/server.log: the regression suite reads the server log next to the data directory).
DIR="$BASE/pkg-cluster"
as_pg() { (cd "$DIR" && env -u RUST_BACKTRACE runuser -u postgres -- "$@"); }
stop_cluster() {
  if [[ -f "$DIR/data/postmaster.pid" ]]; then as_pg "$BIN/pg_ctl" -D "$DIR/data" -m fast -w stop >/dev/null || true; fi
}
stop_cluster
trap stop_cluster EXIT
pg_isready -q -h 127.0.0.1 -p "$PORT" -t 2 && die "port $PORT is already served; set CHUMBO_PKG_PG_PORT"
rm -rf "$DIR" && mkdir -p "$DIR" && chown postgres: "$BASE" "$DIR" && chmod 700 "$DIR"
as_pg "$BIN/initdb" -D "$DIR/data" -U postgres --auth=trust --locale=C.UTF-8 >/dev/null
as_pg "$BIN/pg_ctl" -D "$DIR/data" -l "$DIR/server.log" -w -t 60 \
  -o "-c listen_addresses=127.0.0.1 -c port=$PORT -c unix_socket_directories=$DIR" start >/dev/null \
  || { tail -n 30 "$DIR/server.log" >&2; die "package: the cluster did not start"; }
export PGHOST=127.0.0.1 PGPORT="$PORT" PGUSER=postgres
[[ "$(psql -X -At -d postgres -c "select setting from pg_config where name = 'SHAREDIR'")" == "${PKG_ROOT%/}/usr/share/postgresql/$PG_MAJOR" ]] \
  || die "package: the server does not read the packaged share dir"
log "available: $(psql -X -At -d postgres -c "select string_agg(version, ', ' order by version) from pg_available_extension_versions where name = 'chumbo'")"

log "README quickstart on the packaged install"
bash tests/readme/quickstart.sh

log "upgrade test on the packaged install"
PG_BIN="$BIN" CHUMBO_TEST_PG_PORT="$PORT" bash tests/package/upgrade.sh
log "package: ok"
