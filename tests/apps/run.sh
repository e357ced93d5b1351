#!/usr/bin/env bash
# MCP Apps from the database in a real host: the example app's view (ui://chumbo-example/notes)
# read from chumbo as a user over the edge and rendered in headless Chromium under the official
# host bridge (AppBridge of @modelcontextprotocol/ext-apps).
#   tests/apps/run.sh     (make test runs it; needs the test cluster: PGPORT, default $TEST_PORT)
#
# 1. Node 22 from tools/node/; @modelcontextprotocol/ext-apps, client/core, zod, puppeteer-core and
#    esbuild pinned in tests/apps/package-lock.json (npm ci when it changed); Debian's chromium.
# 2. Database chumbo_apps loaded with the example app (scripts/load-db.sh ... app --edge), one
#    edge on $APPS_EDGE_PORT (picked free unless set), dev tokens for Alice and Bob.
# 3. node --test apps.test.mjs: esbuild bundles host.mjs for the page; the screenshot goes to
#    $APPS_OUT (default .chumbo/apps-test) and its path is printed.
# 4. Stops the edge.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$HERE/../../scripts/lib.sh"     # ROOT, STATE, TEST_PORT, log/warn/die, pick_port, tools/ on PATH

CHROMIUM="${CHROMIUM:-/usr/bin/chromium}"
PGPORT="${PGPORT:-$TEST_PORT}"
DB=chumbo_apps
pick_port APPS_EDGE_PORT
export APPS_OUT="${APPS_OUT:-$STATE/apps-test}"
log "apps: edge on $APPS_EDGE_PORT, database $DB on $PGPORT"

cleanup() { CHUMBO_EDGE_ID=apps-edge "$ROOT/scripts/edge.sh" stop || true; }
trap cleanup EXIT

# 1.
[[ -x "$CHROMIUM" ]] || die "apps: no $CHROMIUM (scripts/setup.sh installs Debian's chromium)"
need_node22   # Node 22 at $NODE (scripts/lib.sh)
if [[ "$(cat "$HERE/node_modules/.lock-sha1" 2>/dev/null)" != "$(sha1sum < "$HERE/package-lock.json")" ]]; then
  log "npm ci in tests/apps"
  (cd "$HERE" && npm ci --no-audit --no-fund --loglevel=error && sha1sum < package-lock.json > node_modules/.lock-sha1)
fi

# 2.
pg_isready -q -h 127.0.0.1 -p "$PGPORT" -t 5 \
  || die "no PostgreSQL on 127.0.0.1:$PGPORT (start one: CHUMBO_CLUSTER=test scripts/cluster.sh start, or set PGPORT)"
"$ROOT/scripts/load-db.sh" "$PGPORT" "$DB" app --edge
"$ROOT/scripts/dev-auth.sh" "postgres://postgres@127.0.0.1:$PGPORT/$DB"
EDGE_URL="http://localhost:$APPS_EDGE_PORT/functions/v1/mcp"
CHUMBO_EDGE_ID=apps-edge CHUMBO_PORT="$APPS_EDGE_PORT" CHUMBO_PUBLIC_URL='' CHUMBO_DB_POOL=2 \
  EDGE_DATABASE_URL="postgres://chumbo_edge:$(cat "$STATE/edge-password")@127.0.0.1:$PGPORT/$DB" \
  "$ROOT/scripts/edge.sh" start >/dev/null
token() { CHUMBO_PUBLIC_URL="$EDGE_URL" deno run -A "$ROOT/scripts/mint-token.ts" "$1"; }

# 3.
cd "$HERE"
status=0
APPS_MCP_URL="$EDGE_URL" APPS_ALICE_TOKEN="$(token alice)" APPS_BOB_TOKEN="$(token bob)" \
  APPS_DATABASE_URL="postgres://postgres@127.0.0.1:$PGPORT/$DB" CHROMIUM="$CHROMIUM" \
  "$NODE" "${NODE_TEST_ARGS[@]}" apps.test.mjs || status=$?
if ((status)); then
  warn "apps: FAILED"
  [[ -s "$STATE/apps-edge.log" ]] && { echo "--- $STATE/apps-edge.log (last 30 lines)"; tail -n 30 "$STATE/apps-edge.log"; } >&2
  exit "$status"
fi
log "apps: passed (screenshot in $APPS_OUT)"
