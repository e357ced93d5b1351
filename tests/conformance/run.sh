#!/usr/bin/env bash
# The official MCP conformance suite (@modelcontextprotocol/conformance@0.1.16, legacy era)
# against chumbo, through the real edge, in public mode.
#
#   tests/conformance/run.sh            (make test calls it with PGHOST/PGPORT of the test cluster)
#
# 1. Node 22 from tools/node/ (scripts/setup.sh installs it; done here too if missing) and the suite,
#    pinned in tests/conformance/package-lock.json, into tests/conformance/node_modules.
# 2. Database chumbo_conformance on the cluster at PGPORT (default: the test cluster's port, started
#    and stopped here when nothing runs there), loaded
#    by scripts/load-db.sh: compat roles, `create extension chumbo`, tests/conformance/fixtures.sql,
#    auth_mode public, login role chumbo_edge.
# 3. A second edge (scripts/edge.sh, CHUMBO_EDGE_ID=edge-conformance) on CHUMBO_CONFORMANCE_PORT
#    (a free port unless set) next to any dev edge, stopped on exit.
# 4. The suite (active, then pending scenarios); results in .chumbo/conformance/ (one checks.json
#    per scenario); every failing check must be listed, by check and with its reason, in
#    tests/conformance/expected-failures.yml, and every listed one must still fail
#    (tests/conformance/check-baseline.cjs decides the exit status); and every scenario must reach
#    its floor of successful checks in tests/conformance/min-successes.yml (a scenario that ran
#    nothing fails).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$HERE/../../scripts/lib.sh"     # ROOT, STATE, TEST_PORT, log/warn/die, tools/ on PATH

SUITE_VERSION=0.1.16
DB=chumbo_conformance
PGPORT="${PGPORT:-$TEST_PORT}"
pick_port CHUMBO_CONFORMANCE_PORT; EDGE_PORT="$CHUMBO_CONFORMANCE_PORT"   # free one unless set
EDGE_ID=edge-conformance                                  # .chumbo/edge-conformance.{pid,log}
MCP_URL="http://localhost:$EDGE_PORT/functions/v1/mcp"   # host must be localhost (dns-rebinding-protection)
OUT="$STATE/conformance"
BASELINE="$HERE/expected-failures.yml"

# 1. Node 22 (the suite dies at load on Node 20) and the pinned suite.
need_node22   # Node 22 at $NODE (scripts/lib.sh)
SUITE="$HERE/node_modules/@modelcontextprotocol/conformance"
if [[ "$("$NODE" -p "require('$SUITE/package.json').version" 2>/dev/null)" != "$SUITE_VERSION" ]]; then
  log "npm ci in tests/conformance/ (@modelcontextprotocol/conformance@$SUITE_VERSION)"
  (cd "$HERE" && PATH="$(dirname "$NODE"):${PATH#"$ROOT/tools/node_modules/.bin:$ROOT/tools/node/node_modules/.bin:"}" npm ci --no-audit --no-fund --loglevel=error --engine-strict=false)
fi

# 2. The database.
started_cluster=
# shellcheck disable=SC2317  # reached through the EXIT trap
cleanup() {
  CHUMBO_EDGE_ID="$EDGE_ID" "$ROOT/scripts/edge.sh" stop || true
  [[ -z "$started_cluster" ]] || CHUMBO_CLUSTER='test' "$ROOT/scripts/cluster.sh" stop || true
}
trap cleanup EXIT
if ! pg_isready -q -h 127.0.0.1 -p "$PGPORT" -t 5; then
  # Run on its own (not from make test): start the test cluster, and stop it again at the end.
  [[ "$PGPORT" == "$TEST_PORT" ]] || die "no PostgreSQL on 127.0.0.1:$PGPORT (set PGPORT to a running cluster)"
  CHUMBO_CLUSTER='test' "$ROOT/scripts/cluster.sh" start
  started_cluster=1
fi
[[ -f "$PG_SHAREDIR/extension/chumbo.control" ]] \
  || die "extension chumbo is not installed (scripts/install.sh)"
"$ROOT/scripts/load-db.sh" "$PGPORT" "$DB" conformance --edge

# 3. The edge, in public mode against that database.
export CHUMBO_EDGE_ID="$EDGE_ID" CHUMBO_PORT="$EDGE_PORT" CHUMBO_PUBLIC_URL="$MCP_URL"
EDGE_DATABASE_URL="postgres://chumbo_edge:$(cat "$STATE/edge-password")@127.0.0.1:$PGPORT/$DB"
export EDGE_DATABASE_URL CHUMBO_EDGE_DATABASE_URL="$EDGE_DATABASE_URL"   # (edge.sh has used both names)
"$ROOT/scripts/edge.sh" start >/dev/null
log "edge up: $MCP_URL (log: $STATE/$CHUMBO_EDGE_ID.log)"

# 4. The suite: the active scenarios (what `server` runs by default), then the pending ones
#    (json-schema-2020-12, server-sse-polling). Not with the suite's --expected-failures (it lists
#    whole scenarios, so one expected failure would hide every other check of its scenario): the
#    suite's exit status is ignored, and check-baseline.cjs scores every FAILURE/WARNING check,
#    one by one, against tests/conformance/expected-failures.yml (run "0.1.16").
rm -rf "$OUT"; mkdir -p "$OUT"
for suite in active pending; do
  log "conformance $SUITE_VERSION server --suite $suite --url $MCP_URL"
  rc=0
  "$NODE" "$SUITE/dist/index.js" server --url "$MCP_URL" --suite "$suite" -o "$OUT" > "$OUT/suite-$suite.log" 2>&1 || rc=$?
  log "suite $suite exited $rc (failing checks are scored below, not by the exit status)"
done
status=0
"$NODE" "$HERE/check-baseline.cjs" "$OUT" 0.1.16 "$BASELINE" "$SUITE" --floors="$HERE/min-successes.yml" || status=$?
((status == 0)) || warn "conformance failed (full output: $OUT/suite-*.log; edge log: $STATE/$CHUMBO_EDGE_ID.log)"
exit "$status"
