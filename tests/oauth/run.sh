#!/usr/bin/env bash
# OAuth 2.1 end to end: a real authorization server (oidc-provider, tests/oauth/as.mjs), the
# official TypeScript MCP client's OAuth support (@modelcontextprotocol/sdk 1.32.2), the edge and
# chumbo.   tests/oauth/run.sh   (make test calls it with PGHOST/PGPORT of the test cluster)
#
# 1. Node 22 from tools/node/ and the packages pinned in tests/oauth/package-lock.json.
# 2. Database chumbo_oauth (example app, login role chumbo_edge) on the cluster at PGPORT.
# 3. An edge (CHUMBO_EDGE_ID=oauth-edge) on $OAUTH_EDGE_PORT (a free port unless set) whose protected-resource
#    metadata names the authorization server http://localhost:$OAUTH_AS_PORT (likewise) and the
#    scope "mcp" (what the client then asks for; the authorization server grants it for any resource).
# 4. node --test oauth.test.mjs: starts the authorization server on that port, configures chumbo
#    (auth_mode oauth, the issuer, the JWKS from its jwks_uri), then runs the flow.
# 5. node --test doctor.test.mjs: the remote doctor (scripts/remote-doctor.ts) against this
#    stack, healthy and broken one way at a time, with a second edge (CHUMBO_EDGE_ID=doctor-edge) on
#    $DOCTOR_EDGE_PORT (a free port unless set) that the test restarts with broken settings.
# 6. node --test supabase.test.mjs: the Supabase-shaped flow. A local stand-in for Supabase Auth
#    (supabase-as.mjs, oidc-provider shaped like Supabase's OAuth 2.1 server; the test starts it) on
#    $SUPABASE_AS_PORT, database chumbo_supabase configured by the test with the Supabase preset only,
#    and an edge (CHUMBO_EDGE_ID=supabase-edge) on $SUPABASE_EDGE_PORT deployed the Supabase way:
#    SUPABASE_URL=http://localhost:$SUPABASE_AS_PORT, so it advertises <url>/auth/v1 and carries
#    <url>/auth/v1/.well-known/jwks.json to the database (grant_edge jwks_courier).
# 7. Stops the edges.
# OAUTH_DEBUG=1 prints the user agent's and the client's HTTP exchanges and the server's errors.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$HERE/../../scripts/lib.sh"     # ROOT, STATE, TEST_PORT, log/warn/die, tools/ on PATH

DB=chumbo_oauth
PGPORT="${PGPORT:-$TEST_PORT}"
SUPABASE_DB=chumbo_supabase
pick_port OAUTH_EDGE_PORT; pick_port OAUTH_AS_PORT; pick_port DOCTOR_EDGE_PORT   # free ones unless set
pick_port SUPABASE_EDGE_PORT; pick_port SUPABASE_AS_PORT
EDGE_PORT="$OAUTH_EDGE_PORT" AS_PORT="$OAUTH_AS_PORT"
log "oauth: edge on 127.0.0.1:$EDGE_PORT, authorization server on 127.0.0.1:$AS_PORT, doctor's edge on 127.0.0.1:$DOCTOR_EDGE_PORT"
log "oauth: Supabase-shaped edge on 127.0.0.1:$SUPABASE_EDGE_PORT, Supabase Auth stand-in on 127.0.0.1:$SUPABASE_AS_PORT"
MCP_URL="http://localhost:$EDGE_PORT/functions/v1/mcp"
SUPABASE_MCP_URL="http://localhost:$SUPABASE_EDGE_PORT/functions/v1/mcp"
export CHUMBO_EDGE_ID=oauth-edge

cleanup() {
  CHUMBO_EDGE_ID=oauth-edge "$ROOT/scripts/edge.sh" stop || true
  CHUMBO_EDGE_ID=doctor-edge "$ROOT/scripts/edge.sh" stop || true
  CHUMBO_EDGE_ID=supabase-edge "$ROOT/scripts/edge.sh" stop || true
}
trap cleanup EXIT

# 1. Node 22 (oidc-provider 9 needs >= 20.19) and the pinned packages.
need_node22   # Node 22 at $NODE (scripts/lib.sh)
if [[ "$(cat "$HERE/node_modules/.lock-sha1" 2>/dev/null)" != "$(sha1sum < "$HERE/package-lock.json")" ]]; then
  log "npm ci in tests/oauth"
  (cd "$HERE" && npm ci --no-audit --no-fund --loglevel=error && sha1sum < package-lock.json > node_modules/.lock-sha1)
fi

# 2. The database.
pg_isready -q -h 127.0.0.1 -p "$PGPORT" -t 5 \
  || die "no PostgreSQL on 127.0.0.1:$PGPORT (start one: CHUMBO_CLUSTER=test scripts/cluster.sh start, or set PGPORT)"
"$ROOT/scripts/load-db.sh" "$PGPORT" "$DB" app --edge
"$ROOT/scripts/load-db.sh" "$PGPORT" "$SUPABASE_DB" app --edge
psql_at "$PGPORT" "$SUPABASE_DB" -c "select chumbo.grant_edge('chumbo_edge', jwks_courier => true)" >/dev/null
EDGE_PW="$(cat "$STATE/edge-password")"

# 3. The edge.
CHUMBO_PORT="$EDGE_PORT" CHUMBO_PUBLIC_URL="$MCP_URL" CHUMBO_AUTHORIZATION_SERVERS="http://localhost:$AS_PORT" CHUMBO_SCOPES_SUPPORTED=mcp \
  EDGE_DATABASE_URL="postgres://chumbo_edge:$EDGE_PW@127.0.0.1:$PGPORT/$DB" "$ROOT/scripts/edge.sh" start >/dev/null

# The Supabase way: only SUPABASE_URL (authorization server and JWKS URL follow from it).
CHUMBO_EDGE_ID=supabase-edge CHUMBO_PORT="$SUPABASE_EDGE_PORT" CHUMBO_PUBLIC_URL="$SUPABASE_MCP_URL" \
  SUPABASE_URL="http://localhost:$SUPABASE_AS_PORT" \
  EDGE_DATABASE_URL="postgres://chumbo_edge:$EDGE_PW@127.0.0.1:$PGPORT/$SUPABASE_DB" "$ROOT/scripts/edge.sh" start >/dev/null

# 4., 5. and 6.
cd "$HERE"
status=0
MCP_URL="$MCP_URL" OAUTH_AS_PORT="$AS_PORT" OAUTH_DATABASE_URL="postgres://postgres@127.0.0.1:$PGPORT/$DB" \
  "$NODE" "${NODE_TEST_ARGS[@]}" oauth.test.mjs || status=$?
MCP_URL="$MCP_URL" OAUTH_AS_PORT="$AS_PORT" OAUTH_DATABASE_URL="postgres://postgres@127.0.0.1:$PGPORT/$DB" \
  DOCTOR_EDGE_PORT="$DOCTOR_EDGE_PORT" EDGE_DATABASE_URL="postgres://chumbo_edge:$EDGE_PW@127.0.0.1:$PGPORT/$DB" \
  "$NODE" "${NODE_TEST_ARGS[@]}" doctor.test.mjs || status=$?
SUPABASE_MCP_URL="$SUPABASE_MCP_URL" SUPABASE_AS_PORT="$SUPABASE_AS_PORT" \
  SUPABASE_DATABASE_URL="postgres://postgres@127.0.0.1:$PGPORT/$SUPABASE_DB" \
  "$NODE" "${NODE_TEST_ARGS[@]}" supabase.test.mjs || status=$?
if ((status)); then
  warn "oauth: FAILED"
  for id in oauth-edge doctor-edge supabase-edge; do
    [[ -s "$STATE/$id.log" ]] && { echo "--- $STATE/$id.log (last 30 lines)"; tail -n 30 "$STATE/$id.log"; } >&2
  done
  exit "$status"
fi
log "oauth: passed"
