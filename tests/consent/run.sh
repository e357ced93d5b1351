#!/usr/bin/env bash
# The edge's OAuth consent page (CHUMBO_CONSENT_PAGE=on) in headless Chromium, against a local
# stand-in for Supabase Auth (supabase-auth-standin.mjs; Supabase Auth itself cannot run here).
#   tests/consent/run.sh     (make test runs it; needs no database: the page never touches it)
#
# 1. Node 22 from tools/node/, puppeteer-core pinned in tests/consent/package-lock.json, Debian's
#    chromium (scripts/setup.sh installs it).
# 2. Three edges (scripts/edge.sh): consent-edge on $CONSENT_EDGE_PORT with the page on, SUPABASE_URL
#    = the stand-in on $CONSENT_AUTH_PORT; consent-edge-off on $CONSENT_OFF_PORT without it;
#    consent-edge-bad on $CONSENT_BAD_PORT with it on but SUPABASE_ANON_KEY missing.
#    Ports are picked free unless set.
# 3. node --test consent.test.mjs: starts the stand-in on its port and Chromium, runs the flows,
#    saves screenshots into $CONSENT_OUT (default .chumbo/consent-test) and prints their paths.
# 4. Stops the edges.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$HERE/../../scripts/lib.sh"     # ROOT, STATE, log/warn/die, pick_port, tools/ on PATH

CHROMIUM="${CHROMIUM:-/usr/bin/chromium}"
pick_port CONSENT_EDGE_PORT; pick_port CONSENT_OFF_PORT; pick_port CONSENT_BAD_PORT; pick_port CONSENT_AUTH_PORT
log "consent: edges on $CONSENT_EDGE_PORT (page on), $CONSENT_OFF_PORT (off), $CONSENT_BAD_PORT (on, no anon key); Supabase Auth stand-in on $CONSENT_AUTH_PORT"
export CONSENT_OUT="${CONSENT_OUT:-$STATE/consent-test}"
ANON_KEY="consent-test-anon-key"
APP_NAME="Acme Projects"
# The edge connects to the database lazily, for MCP requests only; the consent page needs none.
NO_DB="postgres://chumbo_edge@127.0.0.1:9/unused"

cleanup() {
  CHUMBO_EDGE_ID=consent-edge "$ROOT/scripts/edge.sh" stop || true
  CHUMBO_EDGE_ID=consent-edge-off "$ROOT/scripts/edge.sh" stop || true
  CHUMBO_EDGE_ID=consent-edge-bad "$ROOT/scripts/edge.sh" stop || true
}
trap cleanup EXIT

# 1.
[[ -x "$CHROMIUM" ]] || die "consent: no $CHROMIUM (scripts/setup.sh installs Debian's chromium)"
need_node22   # Node 22 at $NODE (scripts/lib.sh)
if [[ "$(cat "$HERE/node_modules/.lock-sha1" 2>/dev/null)" != "$(sha1sum < "$HERE/package-lock.json")" ]]; then
  log "npm ci in tests/consent"
  (cd "$HERE" && npm ci --no-audit --no-fund --loglevel=error && sha1sum < package-lock.json > node_modules/.lock-sha1)
fi

# 2.
EDGE_URL="http://localhost:$CONSENT_EDGE_PORT/functions/v1/mcp"
CHUMBO_EDGE_ID=consent-edge CHUMBO_PORT="$CONSENT_EDGE_PORT" CHUMBO_PUBLIC_URL="$EDGE_URL" \
  CHUMBO_CONSENT_PAGE=on CHUMBO_CONSENT_APP_NAME="$APP_NAME" \
  SUPABASE_URL="http://127.0.0.1:$CONSENT_AUTH_PORT" SUPABASE_ANON_KEY="$ANON_KEY" \
  EDGE_DATABASE_URL="$NO_DB" "$ROOT/scripts/edge.sh" start >/dev/null
CHUMBO_EDGE_ID=consent-edge-off CHUMBO_PORT="$CONSENT_OFF_PORT" \
  CHUMBO_PUBLIC_URL="http://localhost:$CONSENT_OFF_PORT/functions/v1/mcp" \
  SUPABASE_URL="http://127.0.0.1:$CONSENT_AUTH_PORT" SUPABASE_ANON_KEY="$ANON_KEY" \
  EDGE_DATABASE_URL="$NO_DB" "$ROOT/scripts/edge.sh" start >/dev/null
CHUMBO_EDGE_ID=consent-edge-bad CHUMBO_PORT="$CONSENT_BAD_PORT" \
  CHUMBO_PUBLIC_URL="http://localhost:$CONSENT_BAD_PORT/functions/v1/mcp" CHUMBO_CONSENT_PAGE=on \
  SUPABASE_URL="http://127.0.0.1:$CONSENT_AUTH_PORT" SUPABASE_ANON_KEY='' \
  EDGE_DATABASE_URL="$NO_DB" "$ROOT/scripts/edge.sh" start >/dev/null

# 3.
cd "$HERE"
status=0
CONSENT_EDGE_URL="$EDGE_URL" CONSENT_OFF_URL="http://localhost:$CONSENT_OFF_PORT/functions/v1/mcp" \
  CONSENT_BAD_URL="http://localhost:$CONSENT_BAD_PORT/functions/v1/mcp" \
  CONSENT_AUTH_PORT="$CONSENT_AUTH_PORT" CONSENT_ANON_KEY="$ANON_KEY" CONSENT_APP_NAME="$APP_NAME" CHROMIUM="$CHROMIUM" \
  "$NODE" "${NODE_TEST_ARGS[@]}" consent.test.mjs || status=$?
if ((status)); then
  warn "consent: FAILED"
  [[ -s "$STATE/consent-edge.log" ]] && { echo "--- $STATE/consent-edge.log (last 30 lines)"; tail -n 30 "$STATE/consent-edge.log"; } >&2
  exit "$status"
fi
log "consent: passed (screenshots in $CONSENT_OUT)"
