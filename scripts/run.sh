#!/usr/bin/env bash
# `make run`: install what is missing, build+install the extension, (re)start the dev cluster and
# the edge, load the example app (or, with CHUMBO_PROFILE=conformance, the conformance fixtures),
# and write .chumbo/dev.env. Safe to run again: it stops what the last run started first.
#
# Hooks written by other parts of the project (each optional, skipped when absent):
#   scripts/edge.sh start|stop       starts the edge in the background (pid in .chumbo/edge.pid) and
#                                    prints MCP_URL=...; gets CHUMBO_EDGE_DATABASE_URL, CHUMBO_PORT, ...
#   scripts/dev-auth.sh DATABASE_URL  makes the database trust the dev token key (app profile)
#   scripts/mint-token.ts USER        prints a dev access token for USER (alice, bob), only that
#
# CHUMBO_HA=1: instead of one cluster, a pg_auto_failover monitor, a primary and a hot standby
# (scripts/ha.sh, ports CHUMBO_HA_PORT..+2, default 54350-54352), the app loaded on the primary,
# synchronous_commit = remote_apply on the database (read-your-writes on the standby), and the edge
# routing reads to the standby (CHUMBO_MONITOR_URL); dev.env also has STANDBY_DATABASE_URL and
# MONITOR_URL. docs/scaling.md.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"
PROFILE="${CHUMBO_PROFILE:-app}"
DB=chumbo_dev

"$ROOT/scripts/setup.sh" run    # only what building and running needs (make test installs the rest)
"$ROOT/scripts/stop.sh"          # before install: never overwrite a .so a running server has loaded
"$ROOT/scripts/install.sh"
export CHUMBO_PROFILE="$PROFILE"
HA_ENV=''
if [[ "${CHUMBO_HA:-}" == 1 ]]; then
  CHUMBO_CLUSTER=dev "$ROOT/scripts/ha.sh" start
  primary="$(CHUMBO_CLUSTER=dev "$ROOT/scripts/ha.sh" primary-port)"
  "$ROOT/scripts/load-db.sh" "$primary" "$DB" "$PROFILE" --edge
  # Read-your-writes on the standby: a commit returns once the standby has applied it (docs/scaling.md).
  psql_at "$primary" postgres -c "alter database \"$DB\" set synchronous_commit = 'remote_apply'"
  hosts="$(CHUMBO_CLUSTER=dev "$ROOT/scripts/ha.sh" hosts)"
  export DATABASE_URL="postgres://postgres@$hosts/$DB?target_session_attrs=primary"
  EDGE_DATABASE_URL="postgres://chumbo_edge:$(cat "$STATE/edge-password")@$hosts/$DB?target_session_attrs=primary"
  STANDBY_DATABASE_URL="postgres://postgres@$hosts/$DB?target_session_attrs=standby"
  MONITOR_URL="$(CHUMBO_CLUSTER=dev "$ROOT/scripts/ha.sh" monitor-url)"
  export CHUMBO_MONITOR_URL="$MONITOR_URL"
  HA_ENV="STANDBY_DATABASE_URL=$STANDBY_DATABASE_URL
MONITOR_URL=$MONITOR_URL"
else
  CHUMBO_CLUSTER=dev "$ROOT/scripts/cluster.sh" start
  "$ROOT/scripts/load-db.sh" "$DEV_PORT" "$DB" "$PROFILE" --edge
  export DATABASE_URL="postgres://postgres@127.0.0.1:$DEV_PORT/$DB"
  EDGE_DATABASE_URL="postgres://chumbo_edge:$(cat "$STATE/edge-password")@127.0.0.1:$DEV_PORT/$DB"
fi
export EDGE_DATABASE_URL
MCP_URL='' ALICE_TOKEN='' BOB_TOKEN=''

write_env() {
  cat > "$STATE/dev.env" <<ENV
# Written by \`make run\` ($(date -u +%FT%TZ)). Load with: set -a; . .chumbo/dev.env; set +a
# DATABASE_URL is an owner (superuser) connection to the dev database; try
#   psql "\$DATABASE_URL" -c "select chumbo.handle('{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}')"
CHUMBO_PROFILE=$PROFILE
DATABASE_URL=$DATABASE_URL
EDGE_DATABASE_URL=$EDGE_DATABASE_URL
MCP_URL=$MCP_URL
ALICE_TOKEN=$ALICE_TOKEN
BOB_TOKEN=$BOB_TOKEN
${HA_ENV}
ENV
}
write_env                        # the edge and the token script may read it

if [[ -x scripts/edge.sh ]]; then
  out="$(CHUMBO_EDGE_DATABASE_URL="$EDGE_DATABASE_URL" scripts/edge.sh start)"
  MCP_URL="$(sed -n 's/^MCP_URL=//p' <<<"$out" | tail -n 1)"
else
  warn "scripts/edge.sh not found: no HTTP endpoint; use DATABASE_URL and chumbo.handle() directly"
fi

# Dev tokens for the example app's two users (the conformance profile runs in public mode).
if [[ "$PROFILE" == app ]]; then
  if [[ -x scripts/dev-auth.sh ]]; then
    scripts/dev-auth.sh "$DATABASE_URL" || warn "scripts/dev-auth.sh failed: tokens will not be accepted"
  fi
  if [[ -f scripts/mint-token.ts ]]; then
    export MCP_URL               # the tokens' audience must be the URL the edge serves
    ALICE_TOKEN="$(deno run -A scripts/mint-token.ts alice)"
    BOB_TOKEN="$(deno run -A scripts/mint-token.ts bob)"
  else
    warn "no scripts/mint-token.ts: ALICE_TOKEN and BOB_TOKEN left empty"
  fi
fi
write_env

log "ready (.chumbo/dev.env):"
grep -v '^#' "$STATE/dev.env"
