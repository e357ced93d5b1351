# Shared settings and helpers for scripts/*.sh. Source it; do not run it.
# Kept tiny on purpose: paths, ports and a psql wrapper, so every script agrees on them.

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
STATE="$ROOT/.chumbo"                       # git-ignored: pids, dev.env, passwords, venv
PG_BIN=/usr/lib/postgresql/15/bin
PG_CONFIG="$PG_BIN/pg_config"               # versioned on purpose: /usr/bin/pg_config is a wrapper
# Cluster data lives outside the repo (postgres must own it; a checkout may be unreadable to it).
# The short hash keeps two checkouts (e.g. a CI clone) from sharing one data dir.
BASE="/var/tmp/chumbo-$(printf %s "$ROOT" | sha1sum | cut -c1-8)"
DEV_PORT="${CHUMBO_PG_PORT:-54329}"
TEST_PORT="${CHUMBO_TEST_PG_PORT:-54339}"
# Project-local tools (Node 22, Deno) first on PATH; cargo's bin for cargo-pgrx.
export PATH="$ROOT/tools/node_modules/.bin:${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
export DEBIAN_FRONTEND=noninteractive
mkdir -p "$STATE"

# Colour only on a terminal; CI logs stay plain.
if [[ -t 2 ]]; then _b=$'\e[1m' _y=$'\e[33m' _r=$'\e[31m' _n=$'\e[0m'; else _b= _y= _r= _n=; fi
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
