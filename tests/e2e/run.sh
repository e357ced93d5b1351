#!/usr/bin/env bash
# End-to-end tests with real MCP clients (TypeScript SDK 1.32.2, Python mcp 2.3.0) through the
# edge against the test cluster: tests/e2e/run.sh   (PGPORT = the cluster, default 54339)
#   1. (re)creates database chumbo_e2e with the example app, role chumbo_edge, dev bearer auth
#   2. starts the edge on 127.0.0.1/::1:$E2E_PORT (default 54361), mints tokens
#   3. node --test ts/clients.test.mjs (SDK 1.32, legacy era), pytest py/ (hostile requests, raw HTTP; mcp 2.3.0: legacy and auto,
#      which must land on 2026-07-28), node --test ts/modern.test.mjs (client 2.4.0 on 2026-07-28,
#      subscriptions/listen fed by a COMMENT through psql), ts/skills.test.mjs (SEP-2640 skills: the
#      README's install block, then the client's ext/skills API in both eras), ts/state.test.mjs, ts/edge_security.test.mjs
#      (the edge's own guarantees: Origin, RFC 9728 paths, 408, cancellation, listen re-checks, JWKS
#      courier on a new kid, SSE framing, CHUMBO_CLIENT_IP_HEADER; it starts edges of its own on
#      $E2E_AUX_EDGE_PORT and a JWKS server on $E2E_AUX_JWKS_PORT (free ports unless set), and uses
#      database chumbo_e2e_public
#      in auth_mode public), node --test ts/concurrency.test.mjs, ts/exactly_once.test.mjs (issue 13: projection,
#      idempotency keys, run handles, both eras), ts/tasks.test.mjs (durable tasks, notifications/tasks), ts/methods.test.mjs (every method chumbo serves, both
#      eras, as Alice and Bob, with the caller's own data: completions through a schema the edge's
#      role may not use; the method list is read from src/protocol/)
#   4. starts pgbouncer (transaction pooling, as user postgres, temp dir) and a second edge behind
#      it, and runs the concurrency test again through it
#      The database's JWKS is removed first and that edge gets CHUMBO_JWKS_URL (a local static
#      server): it passes only if the edge's JWKS courier (chumbo.set_jwks) brings the key back.
#   5. stops what it started
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
source "$HERE/../../scripts/lib.sh"

PGPORT="${PGPORT:-$TEST_PORT}"
DB=chumbo_e2e
E2E_PORT="${E2E_PORT:-54361}"          # edge -> postgres
PGB_PORT="${E2E_PGBOUNCER_PORT:-54362}" # pgbouncer
PGB_EDGE_PORT="${E2E_PGB_EDGE_PORT:-54363}" # edge -> pgbouncer -> postgres
JWKS_PORT="${E2E_JWKS_PORT:-54365}"    # static JWKS for the courier check
VENV="${CHUMBO_VENV:-$STATE/venv}"
PGB_DIR=""
JWKS_PID=""
failed=()

cleanup() {
  CHUMBO_EDGE_ID=e2e-edge "$ROOT/scripts/edge.sh" stop || true
  CHUMBO_EDGE_ID=e2e-edge-pgbouncer "$ROOT/scripts/edge.sh" stop || true
  CHUMBO_EDGE_ID=e2e-edge-shutdown "$ROOT/scripts/edge.sh" stop || true
  CHUMBO_EDGE_ID=e2e-edge-aux "$ROOT/scripts/edge.sh" stop || true
  if [[ -n "$JWKS_PID" ]]; then kill "$JWKS_PID" 2>/dev/null || true; fi
  if [[ -n "$PGB_DIR" ]]; then
    if [[ -f "$PGB_DIR/pgbouncer.pid" ]]; then kill "$(cat "$PGB_DIR/pgbouncer.pid")" 2>/dev/null || true; fi
    sleep 0.3
    rm -rf "$PGB_DIR"
  fi
}
trap cleanup EXIT

suite() { # suite NAME CMD...: run one suite, remember a failure, go on
  local name="$1"; shift
  log "[e2e] $name"
  "$@" || { failed+=("$name"); warn "[e2e] $name FAILED"; }
}

# Tools: Node packages from tests/e2e/package-lock.json; the Python venv from requirements.txt.
if [[ "$(cat "$HERE/node_modules/.lock-sha1" 2>/dev/null)" != "$(sha1sum < "$HERE/package-lock.json")" ]]; then
  log "npm ci in tests/e2e"
  (cd "$HERE" && npm ci --no-audit --no-fund --loglevel=error && sha1sum < package-lock.json > node_modules/.lock-sha1)
fi
if ! "$VENV/bin/python" -c 'import mcp, pytest' 2>/dev/null; then
  log "python venv $VENV"
  [[ -x "$VENV/bin/python" ]] || python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q --disable-pip-version-check -r "$HERE/requirements.txt"
fi

# 1. Database.
"$ROOT/scripts/load-db.sh" "$PGPORT" "$DB" app --edge
EDGE_PW="$(cat "$STATE/edge-password")"
"$ROOT/scripts/dev-auth.sh" "postgres://postgres@127.0.0.1:$PGPORT/$DB"
# The edges here carry the JWKS (chumbo.set_jwks): grant_edge hands that out only when asked.
# (Builds before the jwks_courier parameter granted set_jwks with the rest.)
if [[ "$(psql_at "$PGPORT" "$DB" -At -c "select count(*) from pg_proc where proname = 'grant_edge' and 'jwks_courier' = any(proargnames)")" != 0 ]]; then
  psql_at "$PGPORT" "$DB" -c "select chumbo.grant_edge('chumbo_edge', jwks_courier => true)" >/dev/null
fi
# A second database in auth_mode public, for the anonymous rate-limit buckets (edge_security).
PUBLIC_DB=chumbo_e2e_public
"$ROOT/scripts/load-db.sh" "$PGPORT" "$PUBLIC_DB" conformance --edge
export E2E_PUBLIC_DATABASE_URL="postgres://postgres@127.0.0.1:$PGPORT/$PUBLIC_DB"
export E2E_PUBLIC_EDGE_DATABASE_URL="postgres://chumbo_edge:$EDGE_PW@127.0.0.1:$PGPORT/$PUBLIC_DB"
# ts/edge_security.test.mjs's own edge and JWKS server: as set, else free ports (lib.sh pick_port),
# never one of the ports above.
_PICKED_PORTS+="$PGPORT $E2E_PORT $PGB_PORT $PGB_EDGE_PORT $JWKS_PORT ${E2E_SHUTDOWN_PORT:-54366} "
pick_port E2E_AUX_EDGE_PORT
pick_port E2E_AUX_JWKS_PORT

# mint_env PORT: the variables the test files read, for the edge on PORT.
mint_env() {
  local url="http://localhost:$1/functions/v1/mcp" m=(deno run -A "$ROOT/scripts/mint-token.ts")
  MCP_URL="$url"
  ALICE_TOKEN="$(CHUMBO_PUBLIC_URL=$url "${m[@]}" alice)"
  BOB_TOKEN="$(CHUMBO_PUBLIC_URL=$url "${m[@]}" bob)"
  EXPIRED_TOKEN="$(CHUMBO_PUBLIC_URL=$url "${m[@]}" alice --expired)"
  FORGED_TOKEN="$(CHUMBO_PUBLIC_URL=$url "${m[@]}" alice --wrong-key)"
  WRONG_AUD_TOKEN="$(CHUMBO_PUBLIC_URL=$url "${m[@]}" alice --aud=https://other.example.com/mcp)"
  export MCP_URL ALICE_TOKEN BOB_TOKEN EXPIRED_TOKEN FORGED_TOKEN WRONG_AUD_TOKEN
}

# 2. Edge straight to Postgres.
# ts/modern.test.mjs: owner URL for the COMMENT, and an edge of its own to stop (shutdown test)
export E2E_DATABASE_URL="postgres://postgres@127.0.0.1:$PGPORT/$DB" E2E_KEEPALIVE_MS=300
export E2E_EDGE_DATABASE_URL="postgres://chumbo_edge:$EDGE_PW@127.0.0.1:$PGPORT/$DB" E2E_SHUTDOWN_PORT="${E2E_SHUTDOWN_PORT:-54366}"
# Origins are compared exactly; ts/clients.test.mjs calls as a page of the MCP Inspector would.
CHUMBO_EDGE_ID=e2e-edge CHUMBO_PORT="$E2E_PORT" CHUMBO_PUBLIC_URL='' CHUMBO_KEEPALIVE_MS="$E2E_KEEPALIVE_MS" \
  CHUMBO_ALLOWED_ORIGINS=http://localhost:6274 \
  EDGE_DATABASE_URL="postgres://chumbo_edge:$EDGE_PW@127.0.0.1:$PGPORT/$DB" "$ROOT/scripts/edge.sh" start
mint_env "$E2E_PORT"

# 3.
cd "$HERE"
suite "typescript client" node "${NODE_TEST_ARGS[@]}" ts/clients.test.mjs
suite "python client" "$VENV/bin/python" -m pytest -q -p no:cacheprovider py
suite "typescript client 2.4 (2026-07-28, listen)" node "${NODE_TEST_ARGS[@]}" ts/modern.test.mjs
suite "skills (typescript client 2.4 ext/skills, README install)" node "${NODE_TEST_ARGS[@]}" ts/skills.test.mjs
suite "state, limits, sandboxes (typescript)" node "${NODE_TEST_ARGS[@]}" ts/state.test.mjs
suite "tool policies (typescript, both eras)" node "${NODE_TEST_ARGS[@]}" ts/policy.test.mjs
suite "every method, both eras (typescript)" node "${NODE_TEST_ARGS[@]}" ts/methods.test.mjs
suite "edge security (typescript)" node "${NODE_TEST_ARGS[@]}" ts/edge_security.test.mjs
suite "hard time bound (typescript)" node "${NODE_TEST_ARGS[@]}" ts/time_bound.test.mjs
# The concurrency suite checks isolation under load (32 calls in flight, about 16 per user), not
# the per-principal in-flight bound (max_in_flight, default 4), which would refuse most of them.
psql_at "$PGPORT" "$DB" -c "select chumbo.configure('{\"max_in_flight\": 64}')" >/dev/null 2>&1 \
  || warn "this chumbo has no max_in_flight setting"
suite "concurrency (edge -> postgres)" env E2E_LABEL="edge -> postgres" node "${NODE_TEST_ARGS[@]}" ts/concurrency.test.mjs
# Exactly-once and projection (issue 13), both eras; its 16 parallel retries need the same bound.
suite "exactly once, projection, runs (typescript, both eras)" node "${NODE_TEST_ARGS[@]}" ts/exactly_once.test.mjs
suite "durable tasks through the edge (2026-07-28)" node "${NODE_TEST_ARGS[@]}" ts/tasks.test.mjs

# 4. pgbouncer between a second edge and Postgres. pgbouncer 1.18 (Debian 12) has no
#    prepared-statement support in transaction mode, so that edge uses unnamed statements.
PGB_DIR="$(mktemp -d /var/tmp/chumbo-e2e-pgbouncer.XXXXXX)"
printf '"chumbo_edge" "%s"\n' "$EDGE_PW" > "$PGB_DIR/userlist.txt"
cat > "$PGB_DIR/pgbouncer.ini" <<INI
[databases]
$DB = host=127.0.0.1 port=$PGPORT dbname=$DB

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $PGB_PORT
unix_socket_dir =
auth_type = scram-sha-256
auth_file = $PGB_DIR/userlist.txt
pool_mode = transaction
; fewer server connections than edge connections: requests of both users share backends
default_pool_size = 4
max_client_conn = 200
ignore_startup_parameters = extra_float_digits
logfile = $PGB_DIR/pgbouncer.log
pidfile = $PGB_DIR/pgbouncer.pid
INI
chown -R postgres: "$PGB_DIR"
chmod 700 "$PGB_DIR"
runuser -u postgres -- /usr/sbin/pgbouncer -d "$PGB_DIR/pgbouncer.ini"
for _ in $(seq 50); do (exec 3<>"/dev/tcp/127.0.0.1/$PGB_PORT") 2>/dev/null && break; sleep 0.1; done
(exec 3<>"/dev/tcp/127.0.0.1/$PGB_PORT") 2>/dev/null || { cat "$PGB_DIR/pgbouncer.log" >&2; die "pgbouncer did not start"; }
log "pgbouncer $(/usr/sbin/pgbouncer --version | head -1) on 127.0.0.1:$PGB_PORT (transaction pooling)"

# The JWKS courier: the database forgets the key, the edge behind pgbouncer fetches it from a
# static server and hands it over with chumbo.set_jwks() on its first request.
deno run -A "$ROOT/scripts/mint-token.ts" jwks > "$PGB_DIR/jwks.json"
python3 -m http.server --bind 127.0.0.1 --directory "$PGB_DIR" "$JWKS_PORT" >/dev/null 2>&1 &
JWKS_PID=$!
psql -X -q -v ON_ERROR_STOP=1 "postgres://postgres@127.0.0.1:$PGPORT/$DB" -c "select chumbo.configure('{\"jwks\": null}')" >/dev/null
ping='{"jsonrpc":"2.0","id":1,"method":"ping"}'
status() { # status URL TOKEN: HTTP status of a ping
  curl -s -o /dev/null -w '%{http_code}' -H "authorization: Bearer $2" -H 'content-type: application/json' \
    -H 'accept: application/json, text/event-stream' -H 'mcp-protocol-version: 2025-11-25' -d "$ping" "$1"
}
courier() {
  local without; without="$(status "$MCP_URL" "$ALICE_TOKEN")"   # MCP_URL/tokens of the first edge
  [[ "$without" == 401 ]] || { warn "without a JWKS the database should refuse the token, got $without"; return 1; }
  CHUMBO_EDGE_ID=e2e-edge-pgbouncer CHUMBO_PORT="$PGB_EDGE_PORT" CHUMBO_PUBLIC_URL='' CHUMBO_DB_PREPARE=false CHUMBO_DB_POOL=16 \
    CHUMBO_JWKS_URL="http://127.0.0.1:$JWKS_PORT/jwks.json" \
    EDGE_DATABASE_URL="postgres://chumbo_edge:$EDGE_PW@127.0.0.1:$PGB_PORT/$DB" "$ROOT/scripts/edge.sh" start
  mint_env "$PGB_EDGE_PORT"
  local with; with="$(status "$MCP_URL" "$ALICE_TOKEN")"
  [[ "$with" == 200 ]] || { warn "the edge's JWKS courier did not restore the key: ping answered $with"; return 1; }
  echo "JWKS courier: 401 without the key, 200 after the edge carried it (chumbo.set_jwks)"
}
suite "jwks courier" courier
suite "concurrency (edge -> pgbouncer -> postgres)" env E2E_LABEL="edge -> pgbouncer (transaction) -> postgres" \
  node "${NODE_TEST_ARGS[@]}" ts/concurrency.test.mjs

if ((${#failed[@]})); then
  warn "e2e: failed: ${failed[*]}"
  for f in "$STATE/e2e-edge.log" "$STATE/e2e-edge-pgbouncer.log" "$STATE/e2e-edge-aux.log"; do
    [[ -s "$f" ]] && { echo "--- $f (last 30 lines)"; tail -n 30 "$f"; } >&2
  done
  # A backend that crashed takes the whole cluster through recovery: every suite running then fails.
  if [[ -s "$BASE/test/server.log" ]]; then
    echo "--- $BASE/test/server.log: crashes, FATAL and PANIC (last 20)" >&2
    grep -E 'terminated by signal|PANIC|FATAL|recovery' "$BASE/test/server.log" | tail -n 20 >&2 || true
  fi
  exit 1
fi
log "e2e: all suites passed"
