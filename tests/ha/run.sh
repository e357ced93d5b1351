#!/usr/bin/env bash
# The replicated stack (docs/scaling.md), for real: tests/ha/run.sh
#   1. scripts/ha.sh fresh (CHUMBO_CLUSTER=test): a pg_auto_failover monitor, a primary and a hot
#      standby, chumbo preloaded, on three free ports from $CHUMBO_HA_TEST_PORT (picked unless set)
#   2. database chumbo_ha on the primary (example app, login role chumbo_edge, dev bearer tokens,
#      pg_stat_statements to count what each server ran, synchronous_commit = remote_apply)
#   3. one edge (scripts/edge.sh, id ha-edge, $HA_EDGE_PORT) following the monitor
#   4. node --test ha.test.mjs: routing, typed answers and their negative tests, exact limits, audit
#      shipping, read-your-writes, the share served by the standby, the failover drill
#   5. stops the edge, the nodes and the monitor
# Honours CHUMBO_PG_ROOT like every other script (lib.sh).
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
source "$HERE/../../scripts/lib.sh"

DB=chumbo_ha
# Three consecutive free ports (monitor, node1, node2), unless set.
if [[ -z "${CHUMBO_HA_TEST_PORT:-}" ]]; then
  for _ in $(seq 30); do
    unset HA_BASE; pick_port HA_BASE
    if port_is_free $((HA_BASE + 1)) && port_is_free $((HA_BASE + 2)); then break; fi
  done
  export CHUMBO_HA_TEST_PORT="$HA_BASE"
fi
pick_port HA_EDGE_PORT
log "ha: monitor and nodes on $CHUMBO_HA_TEST_PORT-$((CHUMBO_HA_TEST_PORT + 2)), edge on $HA_EDGE_PORT"
ha() { env CHUMBO_CLUSTER=test "$ROOT/scripts/ha.sh" "$@"; }

cleanup() {
  CHUMBO_EDGE_ID=ha-edge "$ROOT/scripts/edge.sh" stop || true
  ha stop || true
}
trap cleanup EXIT

# 1.
t0=$SECONDS
ha fresh
# 2.
primary="$(ha primary-port)"
"$ROOT/scripts/load-db.sh" "$primary" "$DB" app --edge
psql_at "$primary" "$DB" -c 'create extension if not exists pg_stat_statements' \
  -c "alter database $DB set synchronous_commit = 'remote_apply'"
"$ROOT/scripts/dev-auth.sh" "postgres://postgres@127.0.0.1:$primary/$DB"
hosts="$(ha hosts)"
log "ha: ready in $((SECONDS - t0))s"

# 3.
export CHUMBO_MONITOR_URL; CHUMBO_MONITOR_URL="$(ha monitor-url)"
CHUMBO_EDGE_ID=ha-edge CHUMBO_PORT="$HA_EDGE_PORT" CHUMBO_PUBLIC_URL='' CHUMBO_DB_POOL=6 CHUMBO_DB_READ_POOL=6 \
  EDGE_DATABASE_URL="postgres://chumbo_edge:$(cat "$STATE/edge-password")@$hosts/$DB?target_session_attrs=primary" \
  "$ROOT/scripts/edge.sh" start >/dev/null
token() { CHUMBO_PUBLIC_URL="http://localhost:$HA_EDGE_PORT/functions/v1/mcp" deno run -A "$ROOT/scripts/mint-token.ts" "$1"; }
HA_ALICE_TOKEN="$(token alice)" HA_BOB_TOKEN="$(token bob)" HA_CAROL_TOKEN="$(token carol)"
export HA_ALICE_TOKEN HA_BOB_TOKEN HA_CAROL_TOKEN HA_EDGE_PORT

# 4.
cd "$HERE"
status=0
HA_DIR="$(ha dir)" HA_MONITOR_URL="$CHUMBO_MONITOR_URL" HA_DB="$DB" HA_EDGE_PID="$(cat "$STATE/ha-edge.pid")" \
  HA_PG_BIN="$PG_BIN" HA_EDGE_PASSWORD="$(cat "$STATE/edge-password")" \
  node "${NODE_TEST_ARGS[@]}" ha.test.mjs || status=$?
if ((status)); then
  warn "ha: FAILED"
  { echo "--- $STATE/ha-edge.log (last 40 lines)"; tail -n 40 "$STATE/ha-edge.log"; } >&2
  exit "$status"
fi
log "ha: passed ($((SECONDS - t0))s)"
